"""SEOS: Semantic Enhanced Overlap Segmentation (CoMeta §3.2.2, Appendix A.4).

Per section: sentences -> groups (each sentence with ``k`` neighbours on each side) -> group embeddings
-> cosine distance between adjacent groups -> ``n = ceil(section_tokens / budget) - 1`` breakpoints at
the ``n`` largest distances -> chunks -> any chunk still over the encoder limit is split again at its
largest internal distance (recursively) -> adaptive overlap: a chunk borrows the next chunk's first
sentence when the similarity across that breakpoint is at least ``overlap_threshold`` and the result
still fits -> chunk ids and prev/next neighbour ids over the whole document.

Choices the paper leaves open, made here:

* Groups are embedded with ``encode_documents([("", group)])``, not ``encode_queries``: MedCPT's query
  encoder truncates at 64 tokens, which would cut most 3-sentence groups. All groups of a document go
  through one encode call (batched by the encoder). Vectors are L2-normalised here, so MedCPT's raw
  [CLS] vectors compare by cosine too.
* Default budget ``min(256, 3 * limit // 4)`` tokens: the paper's 128-word finding (Wang et al., 2019)
  is ~170-190 BERT wordpieces in biomedical prose; 256 is the ceiling for 512-token encoders, and 3/4
  of a small encoder's limit (MiniLM at 256: 190 tokens) leaves topic-sized chunks room to be longer
  than average before the hard limit forces a cut.
* Breakpoints never cross sections: sections are segmented one by one, and the budget applies per
  section (a short section is one chunk). Neighbour ids, by contrast, chain through the whole document
  in reading order, so local context recovery can reach into the next section; compare
  ``section_index`` to stay inside one.
* Default ``overlap_threshold`` 0.8 (cosine similarity of the two groups meeting at a breakpoint):
  with all-MiniLM-L6-v2 on the four shipped JATS articles the similarity at chosen breakpoints has
  quartiles 0.69 / 0.77 / 0.82, so about the most continuous third of breakpoints get an overlap
  sentence. Similarity scales differ between encoders: recalibrate for MedCPT.
* Paragraph breaks (``\\n`` in section text) always end a sentence.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from core import TokenCounter

from ._sentences import split_sentences
from ._tokens import counter_for, split_long_sentence
from ._types import Chunk, Sentence, SourceSection, SourceText

__all__ = [
    "SEOSSegmenter",
    "default_budget",
    "link_chunks",
    "make_chunk",
    "section_sentences",
    "span_text",
    "split_to_limit",
]

_F = npt.NDArray[np.float64]
Splitter = Callable[[str], list[Sentence]]

_BUDGET_CEILING: Final = 256


def default_budget(limit: int) -> int:
    """The SEOS chunk budget for an encoder whose content-token limit is ``limit`` (see module doc)."""
    return max(1, min(_BUDGET_CEILING, (3 * limit) // 4))


def section_sentences(
    text: str, counter: TokenCounter, splitter: Splitter = split_sentences
) -> list[Sentence]:
    """Sentences of one section with offsets into ``text``: split per paragraph (``\\n``), then any
    sentence over ``counter.max_length`` is split safely (so every sentence alone fits the encoder)."""
    out: list[Sentence] = []
    pos = 0
    for para in text.split("\n"):
        for s in splitter(para):
            shifted = Sentence(s.text, s.start + pos, s.end + pos)
            out.extend(split_long_sentence(shifted, counter))
        pos += len(para) + 1
    return out


def span_text(text: str, sentences: Sequence[Sentence], a: int, b: int) -> str:
    """Section text from sentence ``a`` to sentence ``b - 1`` inclusive (original spacing kept)."""
    return text[sentences[a].start : sentences[b - 1].end]


def split_to_limit(
    text: str, sentences: Sequence[Sentence], a: int, b: int, gaps: Sequence[float], counter: TokenCounter
) -> list[tuple[int, int]]:
    """Sentence range ``[a, b)`` cut until every part fits ``counter.max_length``.

    ``gaps[i]`` scores the boundary between sentences ``i`` and ``i + 1`` (higher = better place to cut);
    an over-long range is cut at its highest-scoring internal boundary (earliest on ties), recursively.
    Terminates within the limit because every single sentence fits (see :func:`section_sentences`).
    """
    out: list[tuple[int, int]] = []
    stack = [(a, b)]
    while stack:
        lo, hi = stack.pop()
        if hi - lo <= 1 or counter.count(span_text(text, sentences, lo, hi)) <= counter.max_length:
            out.append((lo, hi))
            continue
        cut = max(range(lo, hi - 1), key=lambda i: (gaps[i], -i))
        stack.append((cut + 1, hi))
        stack.append((lo, cut + 1))
    return out


def link_chunks(chunks: list[Chunk]) -> list[Chunk]:
    """Number chunks ``doc_id#0..`` in order and chain ``prev_id``/``next_id`` through the document."""
    ids = [f"{c.doc_id}#{i}" for i, c in enumerate(chunks)]
    return [
        replace(
            c,
            id=ids[i],
            prev_id=ids[i - 1] if i > 0 else None,
            next_id=ids[i + 1] if i + 1 < len(chunks) else None,
        )
        for i, c in enumerate(chunks)
    ]


def make_chunk(
    doc: SourceText,
    section_index: int,
    sentences: Sequence[Sentence],
    a: int,
    b: int,
    counter: TokenCounter,
    overlap: int = 0,
) -> Chunk:
    section = doc.sections[section_index]
    start, end = sentences[a].start, sentences[b - 1].end
    text = section.text[start:end]
    return Chunk(
        id="",  # set by link_chunks
        doc_id=doc.doc_id,
        text=text,
        section_index=section_index,
        heading=section.heading,
        path=section.path,
        start=start,
        end=end,
        sentence_start=a,
        sentence_end=b,
        token_count=counter.count(text),
        overlap_sentences=overlap,
    )


def _normalise(vectors: npt.NDArray[Any]) -> _F:
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms == 0.0, 1.0, norms)


class SEOSSegmenter:
    """SEOS over any :class:`~retrieval.Encoder` (see the module doc for the algorithm and choices).

    ``counter`` defaults to :func:`counter_for(encoder) <segmentation._tokens.counter_for>`; its
    ``max_length`` is the hard limit no chunk exceeds. ``budget_tokens`` defaults to
    :func:`default_budget` and is capped at the limit. Deterministic for a deterministic encoder.
    """

    def __init__(
        self,
        encoder: Any,
        counter: TokenCounter | None = None,
        *,
        k: int = 1,
        budget_tokens: int | None = None,
        overlap_threshold: float = 0.8,
        splitter: Splitter = split_sentences,
        batch_size: int = 64,
    ) -> None:
        if k < 0:
            raise ValueError("k must be >= 0")
        self._encoder = encoder
        self._counter = counter if counter is not None else counter_for(encoder)
        limit = self._counter.max_length
        budget = default_budget(limit) if budget_tokens is None else budget_tokens
        if budget < 1:
            raise ValueError("budget_tokens must be >= 1")
        self.k = k
        self.budget_tokens = min(budget, limit)
        self.overlap_threshold = overlap_threshold
        self._splitter = splitter
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        return f"seos(k={self.k},budget={self.budget_tokens},overlap>={self.overlap_threshold:g})"

    @property
    def counter(self) -> TokenCounter:
        return self._counter

    def _groups(self, text: str, sentences: Sequence[Sentence]) -> list[str]:
        n, k = len(sentences), self.k
        return [text[sentences[max(0, i - k)].start : sentences[min(n - 1, i + k)].end] for i in range(n)]

    def breakpoints(self, distances: Sequence[float], section_tokens: int) -> list[int]:
        """Boundary indexes (``i``: cut after sentence ``i``) for one section: the top
        ``ceil(section_tokens / budget) - 1`` distances, ties to the earlier boundary, sorted."""
        n = min(len(distances), max(0, math.ceil(section_tokens / self.budget_tokens) - 1))
        ranked = sorted(range(len(distances)), key=lambda i: (-distances[i], i))
        return sorted(ranked[:n])

    def segment(self, doc: SourceText) -> list[Chunk]:
        counter = self._counter
        per_section: list[tuple[int, list[Sentence]]] = []
        groups: list[str] = []
        for si, section in enumerate(doc.sections):
            sentences = section_sentences(section.text, counter, self._splitter)
            if sentences:
                per_section.append((si, sentences))
                groups.extend(self._groups(section.text, sentences))
        if not groups:
            return []
        # One encode call per document: batching across sections is what makes SEOS affordable on CPU.
        vectors = _normalise(
            self._encoder.encode_documents([("", g) for g in groups], batch_size=self._batch_size)
        )
        chunks: list[Chunk] = []
        row = 0
        for si, sentences in per_section:
            v = vectors[row : row + len(sentences)]
            row += len(sentences)
            sims = np.einsum("ij,ij->i", v[:-1], v[1:]) if len(sentences) > 1 else np.zeros(0)
            distances = [float(1.0 - s) for s in sims]
            chunks.extend(self._segment_section(doc, si, sentences, distances))
        return link_chunks(chunks)

    def _segment_section(
        self, doc: SourceText, si: int, sentences: list[Sentence], distances: list[float]
    ) -> list[Chunk]:
        section: SourceSection = doc.sections[si]
        counter = self._counter
        n = len(sentences)
        total = self._counter.count(section.text)
        cuts = self.breakpoints(distances, total)
        bounds = [0, *(c + 1 for c in cuts), n]
        ranges: list[tuple[int, int]] = []
        for a, b in itertools.pairwise(bounds):
            ranges.extend(split_to_limit(section.text, sentences, a, b, distances, counter))
        out: list[Chunk] = []
        for j, (a, b) in enumerate(ranges):
            end, overlap = b, 0
            if j + 1 < len(ranges):
                # The boundary between sentence b-1 and b: similarity of the groups on either side.
                similar = 1.0 - distances[b - 1] >= self.overlap_threshold
                if (
                    similar
                    and counter.count(span_text(section.text, sentences, a, b + 1)) <= counter.max_length
                ):
                    end, overlap = b + 1, 1
            out.append(make_chunk(doc, si, sentences, a, end, counter, overlap))
        return out

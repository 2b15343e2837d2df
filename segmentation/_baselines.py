"""Baseline segmenters behind the same :class:`~segmentation.Segmenter` interface as SEOS.

* :class:`FixedTokenSegmenter`: windows of ``size`` tokens with ``overlap`` tokens (the paper's Table 3
  baselines: 512 with overlap 0/32/128). Windows are cut on the counter's own token offsets
  (``offset_mapping`` of a fast tokenizer; whitespace words for counters that give none) and their ends
  snapped back to a word start, so no word is cut in half; each window's text is then re-counted and
  shrunk token by token if re-tokenising the slice gives more than the limit. ``size`` is capped at the
  counter's limit: "512" means "512 or whatever the encoder takes, whichever is smaller".
* :class:`SentenceWindowSegmenter`: ``window`` consecutive sentences every ``stride`` sentences.
* :class:`TextTilingSegmenter`: Hearst's TextTiling on sentences: bag-of-words cosine between the
  ``block`` sentences before and after each gap, depth scores, boundaries where the depth exceeds
  ``mean - std / 2``; segments over the limit are cut again at their deepest gap.

All of them work per section (chunks never cross sections), split over-long sentences first, and
number/link chunks like SEOS. ``overlap_sentences`` counts whole sentences shared with the next chunk
(always 0 for fixed windows, whose overlap is in tokens and may start mid-sentence).
"""

from __future__ import annotations

import itertools
import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from typing import Final

from core import TEXTTILING_STOPWORDS, TokenCounter

from ._sentences import split_sentences
from ._seos import Splitter, link_chunks, make_chunk, section_sentences, span_text, split_to_limit
from ._tokens import token_spans
from ._types import Chunk, Sentence, SourceText

__all__ = ["FixedTokenSegmenter", "SentenceWindowSegmenter", "TextTilingSegmenter"]


class FixedTokenSegmenter:
    """Fixed-size token windows with token overlap (see the module doc for how offsets are kept)."""

    def __init__(
        self,
        counter: TokenCounter,
        size: int = 512,
        overlap: int = 0,
        *,
        splitter: Splitter = split_sentences,
    ) -> None:
        self._counter = counter
        self.size = min(size, counter.max_length)
        if self.size < 1:
            raise ValueError("size must be >= 1")
        if not 0 <= overlap < self.size:
            raise ValueError(f"overlap must be in [0, {self.size})")
        self.overlap = overlap
        self.requested_size = size
        self._splitter = splitter

    @property
    def name(self) -> str:
        return f"fixed{self.requested_size}-overlap{self.overlap}"

    def _windows(self, text: str) -> list[tuple[int, int]]:
        spans = token_spans(self._counter, text)
        n = len(spans)
        starts_word = [s == 0 or text[s - 1].isspace() for s, _ in spans]
        out: list[tuple[int, int]] = []
        i = 0
        while i < n:
            j = min(i + self.size, n)
            if j < n:  # end before a word start, unless the window is a single giant word
                k = j
                while k > i + 1 and not starts_word[k]:
                    k -= 1
                j = k if starts_word[k] else j
            while (
                j > i + 1
                and self._counter.count(text[spans[i][0] : spans[j - 1][1]]) > self._counter.max_length
            ):
                j -= 1
            out.append((i, j))
            if j >= n:
                break
            nxt = max(i + 1, j - self.overlap)
            k = nxt
            while k < j and not starts_word[k]:
                k += 1
            i = k if k < j else nxt
        return [(spans[a][0], spans[b - 1][1]) for a, b in out]

    def segment(self, doc: SourceText) -> list[Chunk]:
        chunks: list[Chunk] = []
        for si, section in enumerate(doc.sections):
            text = section.text
            sentences = [
                Sentence(s.text, s.start + pos, s.end + pos)
                for pos, para in _paragraphs(text)
                for s in self._splitter(para)
            ]
            ends = [s.end for s in sentences]
            starts = [s.start for s in sentences]
            for start, end in self._windows(text):
                chunk_text = text[start:end]
                chunks.append(
                    Chunk(
                        id="",
                        doc_id=doc.doc_id,
                        text=chunk_text,
                        section_index=si,
                        heading=section.heading,
                        path=section.path,
                        start=start,
                        end=end,
                        # the sentences the window touches, partly or wholly
                        sentence_start=bisect_right(ends, start),
                        sentence_end=bisect_left(starts, end),
                        token_count=self._counter.count(chunk_text),
                    )
                )
        return link_chunks(chunks)


def _paragraphs(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pos = 0
    for para in text.split("\n"):
        out.append((pos, para))
        pos += len(para) + 1
    return out


class SentenceWindowSegmenter:
    """``window`` sentences per chunk, a new chunk every ``stride`` sentences (default: no overlap);
    a window over the limit drops sentences from its end until it fits."""

    def __init__(
        self,
        counter: TokenCounter,
        window: int = 3,
        stride: int | None = None,
        *,
        splitter: Splitter = split_sentences,
    ) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self.window = window
        self.stride = window if stride is None else stride
        if not 1 <= self.stride <= window:
            raise ValueError("stride must be in [1, window]")
        self._counter = counter
        self._splitter = splitter

    @property
    def name(self) -> str:
        return f"sentence-window{self.window}-stride{self.stride}"

    def segment(self, doc: SourceText) -> list[Chunk]:
        counter = self._counter
        chunks: list[Chunk] = []
        for si, section in enumerate(doc.sections):
            sentences = section_sentences(section.text, counter, self._splitter)
            n = len(sentences)
            i = 0
            while i < n:
                b = min(i + self.window, n)
                while (
                    b > i + 1 and counter.count(span_text(section.text, sentences, i, b)) > counter.max_length
                ):
                    b -= 1
                nxt = min(i + self.stride, b)
                overlap = b - nxt if b < n else 0
                chunks.append(make_chunk(doc, si, sentences, i, b, counter, overlap))
                if b >= n:
                    break
                i = nxt
        return link_chunks(chunks)


# The baseline's own tokenisation, not core.words: hyphenated compounds stay one word, and its short
# function-word list is core.TEXTTILING_STOPWORDS (why it is not core.STOPWORDS is said there).
_WORD: Final = re.compile(r"[a-z][a-z0-9\-]+")


def _bag(sentences: Sequence[Sentence]) -> Counter[str]:
    bag: Counter[str] = Counter()
    for s in sentences:
        bag.update(w for w in _WORD.findall(s.text.lower()) if w not in TEXTTILING_STOPWORDS)
    return bag


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(v * b[w] for w, v in a.items() if w in b)
    return dot / math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))


def depth_scores(scores: Sequence[float]) -> list[float]:
    """Hearst's depth: how far each gap's similarity lies below the peaks found by climbing each way."""
    out: list[float] = []
    for i, s in enumerate(scores):
        left = s
        for j in range(i - 1, -1, -1):
            if scores[j] < left:
                break
            left = scores[j]
        right = s
        for j in range(i + 1, len(scores)):
            if scores[j] < right:
                break
            right = scores[j]
        out.append((left - s) + (right - s))
    return out


class TextTilingSegmenter:
    """TextTiling-style lexical segmentation over sentences (see the module doc)."""

    def __init__(
        self, counter: TokenCounter, block: int = 2, *, splitter: Splitter = split_sentences
    ) -> None:
        if block < 1:
            raise ValueError("block must be >= 1")
        self.block = block
        self._counter = counter
        self._splitter = splitter

    @property
    def name(self) -> str:
        return f"texttiling-block{self.block}"

    def gap_depths(self, sentences: Sequence[Sentence]) -> list[float]:
        w = self.block
        sims = [
            _cosine(_bag(sentences[max(0, i - w + 1) : i + 1]), _bag(sentences[i + 1 : i + 1 + w]))
            for i in range(len(sentences) - 1)
        ]
        return depth_scores(sims)

    def segment(self, doc: SourceText) -> list[Chunk]:
        counter = self._counter
        chunks: list[Chunk] = []
        for si, section in enumerate(doc.sections):
            sentences = section_sentences(section.text, counter, self._splitter)
            n = len(sentences)
            if not n:
                continue
            depths = self.gap_depths(sentences)
            cuts: list[int] = []
            if depths:
                mean = sum(depths) / len(depths)
                std = math.sqrt(sum((d - mean) ** 2 for d in depths) / len(depths))
                cutoff = mean - std / 2
                cuts = [i for i, d in enumerate(depths) if d > cutoff and d > 0.0]
            bounds = [0, *(c + 1 for c in cuts), n]
            for a, b in itertools.pairwise(bounds):
                for lo, hi in split_to_limit(section.text, sentences, a, b, depths, counter):
                    chunks.append(make_chunk(doc, si, sentences, lo, hi, counter))
        return link_chunks(chunks)

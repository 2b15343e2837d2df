"""HERO-QA retrieval over one institutional collection (:class:`CollectionRetriever`).

**Retrieval** (HERO-QA, Source-Dependence Audit §4.2), per document:

0. *Routing.* A document whose text is at most ``whole_doc_max_chars`` (80k) goes whole into the
   context: route ``whole``. Its chunks are still scored below, to rank documents against each other.
   The caller's context budget (``search(max_chars=...)``: what its answer model can read) caps every
   route: a document longer than the budget takes the chunk route instead of being cut, so a handbook
   that answers on page 40 is never read only to page 10 and called silent.
1. *Hierarchy.* Document -> sections (from ingest) -> child chunks: 160-word windows with 32-word
   overlap (or SEOS), each prefixed with its section heading.
2. *Four arms, run concurrently:* dense over chunks (the dense encoder, inner product), BM25 over
   chunks, BM25 over section bodies and BM25 over section headings. A navigation hit (a section) is
   mapped to that section's chunks, best dense score first.
3. *Fusion:* RRF, k=60, the navigation arms weighted 0.5 (the paper says "down-weighted").
4. *Rerank:* the top ``rerank_candidates`` fused chunks of the document by the cross-encoder (or the
   bi-encoder offline; with no reranker, the dense score).
5. *Expansion:* the top ``top_chunks`` (5) chunks expand to their parent sections (a section longer
   than half the context budget contributes only the hit chunk and its neighbouring chunks), then the
   immediate neighbour sections are added while ``context_max_chars`` allows: route ``chunks``.
6. *Evidence sufficiency:* the paper does not define its check; here the evidence is weak when the top
   rerank score is below ``weak_score_bi_encoder`` (cosine scale) or ``weak_score_cross_encoder``
   (logit scale), and the whole document is used instead when it fits ``fallback_max_chars`` and the
   budget: route ``whole_fallback``; a longer one keeps its best chunks (route ``chunks``, marked
   insufficient) rather than a cut copy.

Across a collection, documents are shortlisted by one collection-wide RRF over the same arms
(``doc_candidates_factor x top_docs`` of them, topped up in collection order when fewer match), run
through steps 3-6 each, and returned best top rerank score first.

BM25 uses ``bm25s`` over ``core``'s words (two letters or more), English stopwords and light suffix
stemmer (plural, -ing, -ed; no PyStemmer dependency). BM25 indexes are rebuilt in memory per retriever
(milliseconds per handbook); chunk vectors, the expensive part, are cached under the collection's
``index/`` folder per encoder and rebuilt when the document set, the chunking settings or the encoder
change.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import logging
import math
import os
import re
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

from core import Encoder, FloatArray, OnProgress, Reranker, content_words, light_stem
from retrieval.search import ArmHit, rrf

from ._config import CollectionSearchSettings
from ._ingest import InstDocument, Section, SectionRef, slugify
from ._store import Collection, atomic_write

__all__ = [
    "ARM_BM25_CHUNKS",
    "ARM_BM25_HEADINGS",
    "ARM_BM25_SECTIONS",
    "ARM_DENSE",
    "CollectionRetriever",
    "InstEvidence",
    "Route",
]

logger = logging.getLogger(__name__)

ARM_DENSE: Final = "dense"
ARM_BM25_CHUNKS: Final = "bm25_chunks"
ARM_BM25_SECTIONS: Final = "bm25_sections"
ARM_BM25_HEADINGS: Final = "bm25_headings"

Route = Literal["whole", "chunks", "whole_fallback"]


@dataclass(frozen=True)
class InstEvidence:
    collection: str
    doc_id: str
    title: str
    route: Route
    text: str  # what goes into the LLM context
    sections: tuple[SectionRef, ...]  # sections used, best hit first (empty for "whole")
    score: float  # the document's top rerank score (the reranker's scale)
    reason: str = ""  # why this route, for the audit trail
    reranker: str = ""  # which scorer produced ``score``
    coverage: float | None = None  # IDF-weighted share of the question's terms in the top chunks
    # Whether the top chunks passed the sufficiency check (score and coverage). Judged on every route: a
    # short document sent whole with sufficient=False most likely does not address the question.
    sufficient: bool = True

    def cite(self, section: SectionRef | None = None) -> str:
        """``[DOC:collection/doc §Heading p.3]`` for ``section`` (default: the best one), or
        ``[DOC:collection/doc]`` when no section applies."""
        ref = section or (self.sections[0] if self.sections else None)
        parts = [f"DOC:{self.collection}/{self.doc_id}"]
        if ref is not None:
            if ref.heading:
                parts.append(f"\u00a7{ref.heading}")
            if ref.pages:
                parts.append(ref.pages)
        return "[" + " ".join(parts) + "]"


def _tokens(texts: Sequence[str]) -> list[list[str]]:
    """Words of two letters or more, stopwords removed, light-stemmed: one rule for BM25 and coverage."""
    return [[light_stem(w) for w in content_words(t, min_length=2)] for t in texts]


class _BM25:
    """bm25s over pre-tokenised texts, with the full score vector per query (zeros when nothing matches)."""

    def __init__(self, tokens: Sequence[Sequence[str]]) -> None:
        self._n = len(tokens)
        self._index: Any = None
        if any(tokens):  # bm25s cannot index a corpus without a single token
            self._index = importlib.import_module("bm25s").BM25()
            self._index.index([list(t) for t in tokens], show_progress=False)

    def scores(self, query_tokens: Sequence[str]) -> FloatArray:
        if self._index is None or not query_tokens:
            return np.zeros(self._n, dtype=np.float32)
        return np.asarray(self._index.get_scores(list(query_tokens)), dtype=np.float32)


@dataclass(frozen=True)
class _Chunk:
    doc: int  # index into the retriever's documents
    section: int  # index into that document's sections
    start: int  # character offsets in the section body
    end: int
    text: str  # heading-prefixed


def _window_spans(body: str, size: int, overlap: int) -> list[tuple[int, int]]:
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", body)]
    if not words:
        return []
    step = max(1, size - overlap)
    spans = []
    for a in range(0, len(words), step):
        b = min(len(words), a + size)
        spans.append((words[a][0], words[b - 1][1]))
        if b == len(words):
            break
    return spans


@dataclass
class _Index:
    chunks: list[_Chunk]
    vectors: FloatArray  # (n_chunks, dim)
    sections: list[tuple[int, int]]  # (doc, section) in collection order
    section_chunks: dict[tuple[int, int], list[int]]
    doc_chunks: dict[int, list[int]]
    bm25_chunks: _BM25
    bm25_sections: _BM25
    bm25_headings: _BM25
    chunk_terms: list[frozenset[str]]  # for the coverage check
    df: dict[str, int]  # chunk document frequency of each term


class CollectionRetriever:
    """HERO-QA retrieval over one collection (see the module docstring for the routes and arms)."""

    def __init__(
        self,
        collection: Collection,
        encoder: Encoder,
        reranker: Reranker | None,
        settings: CollectionSearchSettings | None = None,
        *,
        rrf_k: int = 60,
        on_progress: OnProgress | None = None,
    ) -> None:
        """``rrf_k``: the reciprocal rank fusion constant of the four arms (the service passes its one
        ``COMETA_EVIDENCE__RRF_K``); ``on_progress(chunks encoded, chunks)`` follows the encoding of the chunk
        index, when it is built rather than loaded from the collection's cache."""
        self.collection = collection
        self.encoder = encoder
        self.reranker = reranker
        self.settings = settings or CollectionSearchSettings()
        self.rrf_k = rrf_k
        self._on_progress = on_progress
        self._index: _Index | None = None
        self._lock = threading.Lock()

    # ----- index ---------------------------------------------------------------------------------

    def _chunk_spans(self) -> list[tuple[int, int, int, int]]:
        """(doc, section, start, end) for every chunk, in collection order."""
        s = self.settings
        docs = self.collection.documents
        if s.chunker == "window":
            return [
                (di, si, a, b)
                for di, doc in enumerate(docs)
                for si, sec in enumerate(doc.sections)
                for a, b in _window_spans(sec.body, s.window_words, s.window_overlap)
            ]
        from segmentation import SEOSSegmenter, SourceSection, SourceText

        segmenter = SEOSSegmenter(self.encoder, batch_size=s.encode_batch_size)
        spans: list[tuple[int, int, int, int]] = []
        for di, doc in enumerate(docs):
            source = SourceText(
                doc.doc_id,
                tuple(SourceSection(sec.body, sec.heading, (sec.heading,)) for sec in doc.sections),
            )
            spans.extend((di, c.section_index, c.start, c.end) for c in segmenter.segment(source))
        return spans

    def _fingerprint(self) -> str:
        s = self.settings
        key = {
            "encoder": self.encoder.name,
            "chunker": [s.chunker, s.window_words, s.window_overlap],
            "docs": [[d.doc_id, d.sha256] for d in self.collection.documents],
            "version": 1,
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()

    def _cache_dir(self) -> Path | None:
        if self.collection.path is None:
            return None
        return self.collection.path / "index" / (slugify(self.encoder.name, 80) or "encoder")

    def _load_cached(self, fingerprint: str) -> tuple[list[tuple[int, int, int, int]], FloatArray] | None:
        folder = self._cache_dir()
        if folder is None or not (folder / "meta.json").is_file():
            return None
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            if meta.get("fingerprint") != fingerprint:
                return None
            spans = [tuple(x) for x in json.loads((folder / "chunks.json").read_text(encoding="utf-8"))]
            vectors = np.load(folder / "vectors.npy", allow_pickle=False)
        except (OSError, ValueError, KeyError):
            return None  # a damaged cache is rebuilt, never trusted
        if vectors.shape != (len(spans), self.encoder.dim):
            return None
        return [(int(a), int(b), int(c), int(d)) for a, b, c, d in spans], vectors.astype(np.float32)

    def _save_cache(
        self, fingerprint: str, spans: list[tuple[int, int, int, int]], vectors: FloatArray
    ) -> None:
        folder = self._cache_dir()
        if folder is None:
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npy")
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, vectors, allow_pickle=False)
            os.replace(tmp, folder / "vectors.npy")
            atomic_write(folder / "chunks.json", json.dumps(spans))
            # meta.json last: it is what marks the cache valid.
            atomic_write(
                folder / "meta.json",
                json.dumps({"fingerprint": fingerprint, "encoder": self.encoder.name, "chunks": len(spans)}),
            )
        except OSError as exc:  # a read-only store still searches, it just re-encodes next time
            logger.warning("collection %s: cannot cache chunk vectors: %s", self.collection.name, exc)

    def prepare(self) -> None:
        """Build (or load from cache) the chunk index now rather than on the first search."""
        self._ensure_index()

    def _ensure_index(self) -> _Index:
        with self._lock:
            if self._index is None:
                self._index = self._build_index()
            return self._index

    def _build_index(self) -> _Index:
        docs = self.collection.documents
        fingerprint = self._fingerprint()
        cached = self._load_cached(fingerprint)
        if cached is not None:
            spans, vectors = cached
        else:
            spans = self._chunk_spans()
        chunks = []
        for di, si, a, b in spans:
            sec = docs[di].sections[si]
            body = sec.body[a:b]
            chunks.append(_Chunk(di, si, a, b, f"{sec.heading}\n{body}" if sec.heading else body))
        if cached is None:
            vectors = (
                self.encoder.encode_documents(
                    [("", c.text) for c in chunks],
                    batch_size=self.settings.encode_batch_size,
                    on_progress=self._on_progress,
                )
                if chunks
                else np.zeros((0, self.encoder.dim), dtype=np.float32)
            )
            self._save_cache(fingerprint, spans, vectors)
        sections = [(di, si) for di, doc in enumerate(docs) for si in range(len(doc.sections))]
        chunk_tokens = _tokens([c.text for c in chunks])
        terms = [frozenset(t) for t in chunk_tokens]
        df: Counter[str] = Counter()
        for t in terms:
            df.update(t)
        section_chunks: dict[tuple[int, int], list[int]] = {}
        doc_chunks: dict[int, list[int]] = {}
        for ci, c in enumerate(chunks):
            section_chunks.setdefault((c.doc, c.section), []).append(ci)
            doc_chunks.setdefault(c.doc, []).append(ci)
        return _Index(
            chunks=chunks,
            vectors=np.asarray(vectors, dtype=np.float32),
            sections=sections,
            section_chunks=section_chunks,
            doc_chunks=doc_chunks,
            bm25_chunks=_BM25(chunk_tokens),
            bm25_sections=_BM25(_tokens([docs[di].sections[si].body for di, si in sections])),
            bm25_headings=_BM25(_tokens([docs[di].sections[si].heading for di, si in sections])),
            chunk_terms=terms,
            df=dict(df),
        )

    # ----- search --------------------------------------------------------------------------------

    async def search(
        self,
        question: str,
        *,
        top_docs: int = 3,
        doc_filter: Callable[[InstDocument], bool] | None = None,
        max_chars: int | None = None,
    ) -> list[InstEvidence]:
        """The best ``top_docs`` documents' evidence for ``question``, best first (see module doc).
        ``max_chars``: the most text of one document the caller's context can hold; longer documents take
        the chunk route, never a cut (None: the settings' limits alone)."""
        if not question.strip():
            raise ValueError("question must not be empty")
        docs = self.collection.documents
        allowed = [i for i, d in enumerate(docs) if doc_filter is None or doc_filter(d)]
        if top_docs < 1 or not allowed:
            return []
        index = await asyncio.to_thread(self._ensure_index)
        if not index.chunks:
            return []
        qterms = _tokens([question])[0]
        # The four first-stage arms, concurrently (encoding and BM25 release the GIL in numpy/torch).
        qvec, chunk_bm25, section_bm25, heading_bm25 = await asyncio.gather(
            asyncio.to_thread(self.encoder.encode_queries, [question], 1),
            asyncio.to_thread(index.bm25_chunks.scores, qterms),
            asyncio.to_thread(index.bm25_sections.scores, qterms),
            asyncio.to_thread(index.bm25_headings.scores, qterms),
        )
        dense = np.asarray(index.vectors @ np.asarray(qvec[0], dtype=np.float32), dtype=np.float64)
        section_score = {sec: float(section_bm25[i]) for i, sec in enumerate(index.sections)}
        heading_score = {sec: float(heading_bm25[i]) for i, sec in enumerate(index.sections)}
        scores = _ArmScores(
            dense, np.asarray(chunk_bm25, dtype=np.float64), section_score, heading_score, frozenset(qterms)
        )

        allowed_set = set(allowed)
        pool = [ci for di in allowed for ci in index.doc_chunks.get(di, [])]
        fused = self._fuse(index, scores, pool)
        shortlist: list[int] = []
        for hit in fused:
            di = index.chunks[int(hit.pmid)].doc
            if di in allowed_set and di not in shortlist:
                shortlist.append(di)
        shortlist += [di for di in allowed if di not in shortlist and di in index.doc_chunks]
        shortlist = shortlist[: top_docs * self.settings.doc_candidates_factor]
        results = await asyncio.gather(
            *(asyncio.to_thread(self._evidence, index, scores, question, di, max_chars) for di in shortlist)
        )
        # Documents whose evidence passed the sufficiency check first, then by score.
        ranked = sorted(results, key=lambda e: (not e.sufficient, -e.score))
        return ranked[:top_docs]

    def _fuse(self, index: _Index, arm: _ArmScores, pool: Sequence[int]) -> list[Any]:
        s = self.settings
        pool_set = set(pool)
        dense_rank = sorted(pool, key=lambda ci: (-arm.dense[ci], ci))
        bm25_rank = [
            ci for ci in sorted(pool, key=lambda ci: (-arm.chunk_bm25[ci], ci)) if arm.chunk_bm25[ci] > 0
        ]

        def navigation(section_scores: Mapping[tuple[int, int], float]) -> list[ArmHit]:
            secs = sorted(
                (sec for sec, v in section_scores.items() if v > 0 and sec in index.section_chunks),
                key=lambda sec: (-section_scores[sec], sec),
            )
            hits: list[ArmHit] = []
            for sec in secs:
                members = [ci for ci in index.section_chunks[sec] if ci in pool_set]
                # A section hit stands for its chunks, the one closest to the question first.
                members.sort(key=lambda ci: (-arm.dense[ci], ci))
                hits.extend(ArmHit(str(ci), score=section_scores[sec]) for ci in members)
            return hits

        arms = {
            ARM_DENSE: [ArmHit(str(ci), score=float(arm.dense[ci])) for ci in dense_rank],
            ARM_BM25_CHUNKS: [ArmHit(str(ci), score=float(arm.chunk_bm25[ci])) for ci in bm25_rank],
            ARM_BM25_SECTIONS: navigation(arm.section_bm25),
            ARM_BM25_HEADINGS: navigation(arm.heading_bm25),
        }
        weights = {
            ARM_DENSE: s.dense_weight,
            ARM_BM25_CHUNKS: s.bm25_chunk_weight,
            ARM_BM25_SECTIONS: s.bm25_section_weight,
            ARM_BM25_HEADINGS: s.bm25_heading_weight,
        }
        return rrf(arms, k=self.rrf_k, weights=weights)

    def _coverage(self, index: _Index, query_terms: frozenset[str], hits: Sequence[int]) -> float:
        """IDF-weighted share of the question's terms found in the ``hits`` chunks (1.0 without terms).

        IDF is BM25's (``log(1 + (N - df + .5) / (df + .5))`` over the collection's chunks), so terms
        every chunk shares ("transplant" in a transplant handbook) weigh almost nothing and rare terms
        weigh most: a handbook that never says "travel" cannot cover a travel question.
        """
        if not query_terms:
            return 1.0
        n = len(index.chunks)
        # A term the collection never uses counts as if one chunk had it: absent vocabulary ("abroad" in a
        # handbook that says "outside the country") must lower coverage, not swamp it.
        dfs = {t: max(1, index.df.get(t, 0)) for t in query_terms}
        idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in dfs.items()}
        found: set[str] = set()
        for ci in hits:
            found |= query_terms & index.chunk_terms[ci]
        total = math.fsum(idf.values())
        return math.fsum(idf[t] for t in found) / total if total > 0 else 1.0

    def _scorer(self) -> tuple[str, float]:
        """Who scores the top chunks, and the weak-evidence threshold on that score's scale."""
        s = self.settings
        if self.reranker is not None and self.reranker.kind == "cross-encoder":
            return self.reranker.name, s.weak_score_cross_encoder
        name = self.reranker.name if self.reranker is not None else f"dense:{self.encoder.name}"
        return name, s.weak_score_bi_encoder

    def _evidence(
        self, index: _Index, arm: _ArmScores, question: str, di: int, max_chars: int | None = None
    ) -> InstEvidence:
        s = self.settings

        def capped(limit: int) -> int:
            return limit if max_chars is None else min(limit, max_chars)

        doc = self.collection.documents[di]
        fused = self._fuse(index, arm, index.doc_chunks.get(di, []))[: s.rerank_candidates]
        candidates = [int(h.pmid) for h in fused]
        scorer, threshold = self._scorer()
        if self.reranker is not None and self.reranker.kind == "cross-encoder":
            rerank = self.reranker.rerank(question, [index.chunks[ci].text for ci in candidates])
            order = sorted(range(len(candidates)), key=lambda i: (-rerank[i], i))
            top = [candidates[i] for i in order[: s.top_chunks]]
            best = max((float(rerank[i]) for i in order[: s.top_chunks]), default=float("-inf"))
        else:
            # A bi-encoder "rerank" is the dense arm over again: reordering by it would discard the three
            # lexical arms, so the fused order stands and the similarity only feeds the sufficiency check.
            top = candidates[: s.top_chunks]
            best = max((float(arm.dense[ci]) for ci in top), default=float("-inf"))
        coverage = self._coverage(index, arm.query_terms, top)
        length = len(doc.text)
        weak = []
        if best < threshold:
            weak.append(f"top score {best:.3f} < {threshold:g}")
        if coverage < s.min_coverage:
            weak.append(f"term coverage {coverage:.2f} < {s.min_coverage:g}")

        def make(route: Route, text: str, refs: tuple[SectionRef, ...], reason: str) -> InstEvidence:
            return InstEvidence(
                collection=self.collection.name,
                doc_id=doc.doc_id,
                title=doc.title,
                route=route,
                text=text,
                sections=refs,
                score=best,
                reason=reason,
                reranker=scorer,
                coverage=coverage,
                sufficient=not weak,
            )

        whole = _render(doc.sections)  # what the whole route would send, headings and pages included
        limit = capped(s.whole_doc_max_chars)
        if len(whole) <= limit:
            reason = f"document {length:,} chars <= {limit:,}: whole document" + (
                f" (top chunks weak: {'; '.join(weak)})" if weak else ""
            )
            return make("whole", whole, (), reason)
        if weak and len(whole) <= capped(s.fallback_max_chars):
            return make("whole_fallback", whole, (), f"weak evidence ({'; '.join(weak)}): whole document")
        text, refs = self._expand(index, doc, top, capped(s.context_max_chars))
        reason = (
            f"document {length:,} chars > {limit:,}; top score {best:.3f}, term coverage {coverage:.2f}"
            + (f"; weak evidence ({'; '.join(weak)}) but too long to read whole: best chunks" if weak else "")
        )
        return make("chunks", text, refs, reason)

    def _expand(
        self, index: _Index, doc: InstDocument, hits: Sequence[int], budget: int | None = None
    ) -> tuple[str, tuple[SectionRef, ...]]:
        """Top chunks -> their parent sections; a section longer than half the context budget gives only
        the hit chunk and its ``expand_neighbours`` neighbouring chunks. Kept within ``context_max_chars``
        (the best hit always), best hit first in the refs, reading order in the text."""
        s = self.settings
        budget = s.context_max_chars if budget is None else budget
        long_section = budget // 2
        pieces: dict[int, tuple[int, int]] = {}  # section -> (start, end) of its body used
        used = 0
        for ci in hits:
            c = index.chunks[ci]
            sec = doc.sections[c.section]
            if len(sec.body) <= long_section:
                span = (0, len(sec.body))
            else:
                members = index.section_chunks[(c.doc, c.section)]
                pos = members.index(ci)
                near = members[max(0, pos - s.expand_neighbours) : pos + s.expand_neighbours + 1]
                span = (index.chunks[near[0]].start, index.chunks[near[-1]].end)
            old = pieces.get(c.section)
            merged = span if old is None else (min(old[0], span[0]), max(old[1], span[1]))
            grow = (merged[1] - merged[0]) - (0 if old is None else old[1] - old[0])
            if pieces and used + grow > budget:
                continue
            pieces[c.section] = merged
            used += grow
        refs = tuple(doc.sections[si].ref for si in pieces)
        parts = []
        for si in sorted(pieces):
            a, b = pieces[si]
            sec = doc.sections[si]
            body = sec.body[a:b]
            if a > 0:
                body = "\u2026 " + body
            if b < len(sec.body):
                body += " \u2026"
            parts.append(_render_section(sec, body))
        return "\n\n".join(parts), refs


@dataclass(frozen=True)
class _ArmScores:
    dense: Any  # (n_chunks,) float64
    chunk_bm25: Any  # (n_chunks,) float64
    section_bm25: Mapping[tuple[int, int], float]
    heading_bm25: Mapping[tuple[int, int], float]
    query_terms: frozenset[str] = frozenset()


def _render_section(sec: Section, body: str | None = None) -> str:
    pages = sec.ref.pages
    head = sec.heading + (f" ({pages})" if pages else "")
    text = sec.body if body is None else body
    return f"## {head}\n{text}" if head else text


def _render(sections: Sequence[Section]) -> str:
    """Context text: each section as ``## Heading (p.N)`` then its body, so the model can cite both."""
    return "\n\n".join(_render_section(s) for s in sections)

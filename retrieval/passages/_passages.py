"""Two-stage passage retrieval over the selected evidence (CoMeta §3.2.2): dense top-N, rerank, top-k.

For one question and the documents the metadata stage kept:

1. **Passages.** Every abstract unit is one passage as is (CoMeta: abstracts are single passages, too short
   to gain from splitting); every full-text section unit is segmented by the configured segmenter (SEOS in
   production). Each passage keeps its PMID/PMCID, document class and fused rank, heading path and
   character offsets in its section text.
2. **Dense stage.** Query and all passages are encoded in one batch each; the ``candidates`` best passages
   by inner product go on.
3. **Rerank stage.** The reranker (a cross-encoder, or the bi-encoder fallback offline) scores the
   candidates; the ``top_k`` best are selected. Without a reranker the dense order stands.
4. **Context budget.** Selected passages enter the context in rank order while they fit
   ``context_tokens``; then each may pull its neighbours in the same section (distance 1 first, up to
   ``expand_radius`` chunks either side; a large radius pulls the whole parent section) while budget
   remains. Neighbours are marked with ``expanded_from`` and sit next to their passage in text order.

Every passage carries the scores of every stage it went through (``dense``; ``rerank`` when reranked).

Repeated work is avoided without changing the ranking: an LRU :class:`PassageCache`, bounded by documents
and bytes, keeps each document's passages and passage vectors across requests, keyed by everything that
determines them (encoder name and max lengths, token counter, segmenter settings, sha256 of the document's
text units); all passages not cached are encoded in one call, as without a cache, so a cold request computes
exactly what the uncached path computes. When the reranker is the bi-encoder over this retriever's encoder,
it scores the passage vectors the dense stage already holds instead of encoding the candidates again.

Nothing already encoded is encoded again: an abstract passage is encoded as ``[title, abstract]``, exactly as
the dense index encodes the record, so with a :class:`VectorSource` on the same encoder (the dense retriever)
its vector is read from the index instead; the question's vector is the one the dense arm computed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pickle
import sys
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, Field

from core import Encoder, FloatArray, Reranker, SizedLRU
from retrieval.embed import EncodeBatcher, EncodeFailed
from retrieval.evidence import DocClass, EvidenceDoc
from segmentation import Chunk, Segmenter, SourceSection, SourceText, WhitespaceTokenCounter

__all__ = [
    "PASSAGE_STORE_FILE",
    "CacheStats",
    "CountsTokens",
    "Passage",
    "PassageCache",
    "PassageContext",
    "PassageRetriever",
    "PassageSettings",
    "VectorSource",
    "build_chunks",
    "doc_key",
]


class PassageSettings(BaseModel):
    """Passage retrieval knobs (defaults follow CoMeta's two-stage setup: dense top-30, rerank to top-8)."""

    candidates: int = Field(
        default=30, ge=1, le=10_000, description="Dense top-N passages handed to the reranker."
    )
    top_k: int = Field(default=8, ge=1, le=1_000, description="Passages selected after rerank.")
    context_tokens: int = Field(
        default=3_000, ge=1, le=1_000_000, description="Token budget for selected + expanded text."
    )
    expand_radius: int = Field(
        default=1,
        ge=0,
        le=1_000,
        description="Neighbours pulled either side; 0 = none; large = whole section.",
    )
    encode_batch_size: int = Field(default=32, ge=1, le=4_096, description="Passages per encoder batch.")
    cache_documents: int = Field(
        default=512,
        ge=0,
        le=1_000_000,
        description="Documents whose passages + passage vectors are kept across requests (LRU); 0 = off.",
    )
    cache_max_bytes: int = Field(
        default=256 * 2**20,
        ge=0,
        le=2**40,
        description="Bytes of passage texts + vectors that cache may hold: 256 MiB holds 512 full texts of "
        "~90 passages at 768 dimensions, so the document count binds first unless full texts are unusually "
        "long; 0 = off.",
    )
    encode_batch_window_ms: float = Field(
        default=5.0,
        ge=0,
        le=1_000,
        description="Passages encoded at query time (live full texts, no index vector) by concurrent "
        "requests within this many ms go to the encoder as one batch (retrieval.embed.EncodeBatcher); the "
        "most a request waits for others; 0 = every request encodes alone.",
    )
    encode_batch_max_texts: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="Most passages in one coalesced encoder call; a request with more is encoded alone.",
    )


class CountsTokens(Protocol):
    def count(self, text: str) -> int: ...


@runtime_checkable
class _ScoresVectors(Protocol):
    """A reranker that can score passage vectors it did not encode itself (the bi-encoder reranker)."""

    @property
    def encoder(self) -> Encoder: ...

    def score(self, query_vector: FloatArray, passage_vectors: Sequence[FloatArray]) -> list[float]: ...


@runtime_checkable
class VectorSource(Protocol):
    """Vectors already computed elsewhere (the dense retriever): the question's query vector, and the
    ``[title, abstract]`` vectors of the documents its index holds, encoded by this retriever's encoder."""

    @property
    def encoder(self) -> Encoder: ...

    def query_vector(self, query: str) -> FloatArray: ...

    def document_vectors(self, pmids: Sequence[str]) -> dict[str, FloatArray]: ...


@dataclass(frozen=True, slots=True)
class Passage:
    chunk_id: str
    pmid: str
    pmcid: str | None
    doc_class: DocClass
    doc_rank: int  # the document's fused rank
    kind: Literal["abstract", "section"]
    heading: str
    path: tuple[str, ...]
    unit_index: int  # EvidenceDoc.text_units index the passage comes from
    start: int  # character offsets in that unit's text
    end: int
    text: str
    token_count: int
    scores: dict[str, float] = field(hash=False)  # {"dense": ..., "rerank": ...}; stages it went through
    rank: int  # 1-based rank of the selected passage (an expanded neighbour shares its source's rank)
    expanded_from: str | None = None  # chunk id of the selected passage that pulled this neighbour in


@dataclass(frozen=True, slots=True)
class PassageContext:
    passages: tuple[Passage, ...]  # grouped by selected passage, neighbours in text order around it
    reranker_name: str | None
    reranker_kind: str | None
    rerank_note: str | None  # e.g. "offline: bi-encoder rerank, ..."; None for a loaded cross-encoder
    budget_used: int
    budget: int
    scored: int  # passages the dense stage scored

    @property
    def selected(self) -> tuple[Passage, ...]:
        return tuple(p for p in self.passages if p.expanded_from is None)

    def kept(self, pmids: Collection[str]) -> PassageContext:
        """The passages of the documents kept (the answer reads nothing of a document cut from the list)."""
        return replace(self, passages=tuple(p for p in self.passages if p.pmid in pmids))


def doc_key(doc: EvidenceDoc) -> str:
    return f"PMID:{doc.pmid}"


@dataclass(frozen=True, slots=True)
class _Item:
    chunk: Chunk
    doc: EvidenceDoc
    kind: Literal["abstract", "section"]
    unit_index: int
    key: str  # the document's cache key
    row: int  # position among its document's passages (row of the document's vector block)


_Built = tuple[tuple[Chunk, Literal["abstract", "section"], int], ...]


@dataclass(frozen=True, slots=True)
class _Entry:
    built: _Built
    vectors: FloatArray | None  # read-only, one row per passage; None until the dense stage encoded them


@dataclass(frozen=True, slots=True)
class _Scored:
    dense: list[float]
    query: FloatArray  # the query vector the dense scores came from
    vectors: FloatArray  # one row per item


@dataclass(frozen=True, slots=True)
class CacheStats:
    segment_hits: int
    segment_misses: int
    vector_hits: int
    vector_misses: int
    index_vectors: int  # abstract passages whose vector came from the dense index instead of the encoder
    evictions: int
    size: int
    capacity: int
    nbytes: int  # passage texts + vectors held
    max_bytes: int


_STORE_FORMAT = "cometa-passages-1"
PASSAGE_STORE_FILE = "passages.pkl"  # next to the dense index: the corpus's full texts, segmented and encoded


def _entry_bytes(entry: _Entry) -> int:
    """What an entry weighs: its passage texts and vectors (the chunks' other fields are small and fixed)."""
    texts = sum(sys.getsizeof(chunk.text) for chunk, _, _ in entry.built)
    return texts + (0 if entry.vectors is None else int(entry.vectors.nbytes))


class PassageCache:
    """Bounded, thread-safe LRU of per-document passages and passage vectors (see the module doc).

    Bounded by documents (``capacity``) and by bytes (``max_bytes``); a document heavier than ``max_bytes``
    alone is not cached. Values are immutable (tuples of frozen chunks, read-only arrays), so readers share
    them without copies. Two requests missing the same document at once both compute it; the results are
    identical.
    """

    def __init__(self, capacity: int, max_bytes: int = 256 * 2**20) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._data: SizedLRU[str, _Entry] = SizedLRU(capacity, max_bytes, _entry_bytes)
        # Documents segmented and encoded at index time (:meth:`load`): read on an LRU miss, never evicted.
        self._pinned: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._counts = {
            "segment_hits": 0,
            "segment_misses": 0,
            "vector_hits": 0,
            "vector_misses": 0,
            "index_vectors": 0,
        }

    def _get(self, key: str, what: Literal["segment", "vector"]) -> _Entry | None:
        with self._lock:
            entry = self._data.get(key)  # a hit marks the document recently used
            if entry is None:
                entry = self._pinned.get(key)
            hit = entry is not None and (what == "segment" or entry.vectors is not None)
            self._counts[f"{what}_{'hits' if hit else 'misses'}"] += 1
            return entry if hit else None

    def built(self, key: str) -> _Built | None:
        entry = self._get(key, "segment")
        return entry.built if entry else None

    def vectors(self, key: str) -> FloatArray | None:
        entry = self._get(key, "vector")
        return entry.vectors if entry else None

    def put(self, key: str, built: _Built, vectors: FloatArray | None = None) -> None:
        if self.capacity <= 0 or self.max_bytes <= 0:
            return
        if vectors is not None:
            vectors = np.array(vectors, copy=True)
            vectors.setflags(write=False)  # shared across requests: nobody may modify it in place
        with self._lock:
            old = self._data.get(key)
            if vectors is None and old is not None:
                vectors = old.vectors  # never drop vectors when re-storing the passages alone
            self._data.put(key, _Entry(built, vectors))

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    @property
    def pinned(self) -> int:
        """Documents loaded from a passage store (segmented and encoded at index time)."""
        return len(self._pinned)

    def entries(self) -> dict[str, tuple[_Built, FloatArray]]:
        """Every document held with its vectors (LRU and pinned): what :meth:`save` writes."""
        with self._lock:
            items = [*self._pinned.items(), *self._data.items()]
        return {k: (e.built, e.vectors) for k, e in items if e.vectors is not None}

    def save(self, path: Path, entries: dict[str, tuple[_Built, FloatArray]] | None = None) -> int:
        """Write ``entries`` (default: every document held with its vectors) to ``path`` atomically;
        returns how many."""
        entries = self.entries() if entries is None else entries
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as fh:
            pickle.dump({"format": _STORE_FORMAT, "entries": entries}, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        return len(entries)

    def load(self, path: Path) -> int:
        """Pin the documents of a passage store written by :meth:`save` (our own file, next to the dense
        index); their keys cover encoder, segmenter and text, so a stale entry is simply never asked for.
        Returns how many were loaded (0 for a missing file or another format)."""
        if not path.is_file():
            return 0
        with open(path, "rb") as fh:
            # Our own file in our own cache folder (as the local server's pickled search index).
            data = pickle.load(fh)
        if not isinstance(data, dict) or data.get("format") != _STORE_FORMAT:
            return 0
        pinned: dict[str, _Entry] = {}
        for key, (built, vectors) in data["entries"].items():
            vecs = np.array(vectors, dtype=np.float32, copy=True)
            vecs.setflags(write=False)
            pinned[key] = _Entry(built, vecs)
        with self._lock:
            self._pinned.update(pinned)
        return len(pinned)

    def count_index_vectors(self, n: int) -> None:
        with self._lock:
            self._counts["index_vectors"] += n

    @property
    def stats(self) -> CacheStats:
        with self._lock:
            c = self._counts
            return CacheStats(
                segment_hits=c["segment_hits"],
                segment_misses=c["segment_misses"],
                vector_hits=c["vector_hits"],
                vector_misses=c["vector_misses"],
                index_vectors=c["index_vectors"],
                evictions=self._data.evictions,
                size=len(self._data),
                capacity=self.capacity,
                nbytes=int(self._data.currsize),
                max_bytes=self.max_bytes,
            )


def build_chunks(
    doc: EvidenceDoc, segmenter: Segmenter, counter: CountsTokens | None = None
) -> list[tuple[Chunk, Literal["abstract", "section"], int]]:
    """The passages of one document: (chunk, unit kind, text-unit index), in document order.

    Abstract units become one chunk each (id ``{doc}#a{i}``); section units are segmented together as one
    SourceText, so the segmenter's ids and prev/next links run over the whole body.
    """
    counter = counter or WhitespaceTokenCounter()  # whitespace words when no encoder tokenizer is given
    key = doc_key(doc)
    out: list[tuple[Chunk, Literal["abstract", "section"], int]] = []
    sections = [u for u in doc.text_units if u.kind == "section" and u.text.strip()]
    for u in doc.text_units:
        if u.kind == "abstract" and u.text.strip():
            chunk = Chunk(
                id=f"{key}#a{u.index}",
                doc_id=key,
                text=u.text,
                section_index=u.index,
                heading=u.label,
                path=u.path,
                start=0,
                end=len(u.text),
                sentence_start=0,
                sentence_end=1,
                token_count=counter.count(u.text),
            )
            out.append((chunk, "abstract", u.index))
    if sections:
        source = SourceText(key, tuple(SourceSection(u.text, u.label, u.path) for u in sections))
        for chunk in segmenter.segment(source):
            out.append((chunk, "section", sections[chunk.section_index].index))
    return out


class PassageRetriever:
    """Dense retrieval over the chunks of the selected documents, then rerank, then budgeted expansion."""

    def __init__(
        self,
        segmenter: Segmenter,
        encoder: Encoder,
        reranker: Reranker | None,
        settings: PassageSettings | None = None,
        *,
        counter: CountsTokens | None = None,
        vectors: VectorSource | None = None,
    ) -> None:
        self.segmenter = segmenter
        self.encoder = encoder
        self.reranker = reranker
        self.settings = settings or PassageSettings()
        self.counter = counter
        # Reused only when it encodes with this very encoder: its vectors are then the ones we would compute.
        self.vectors = vectors if vectors is not None and vectors.encoder is encoder else None
        self.cache = PassageCache(self.settings.cache_documents, self.settings.cache_max_bytes)
        # Query-time encodes of concurrent requests share model calls (the cache above keeps the results).
        self.batcher = EncodeBatcher(
            encoder,
            window_s=self.settings.encode_batch_window_ms / 1000,
            max_texts=self.settings.encode_batch_max_texts,
        )
        self._config_key = self._configuration()

    def _configuration(self) -> str:
        """Everything besides the document that determines its passages and their vectors."""
        enc, seg, counter = self.encoder, self.segmenter, self.counter
        parts = {
            "encoder": enc.name,
            "query_max_length": enc.query_max_length,
            "doc_max_length": enc.doc_max_length,
            "segmenter": f"{type(seg).__module__}.{type(seg).__qualname__}:{seg.name}",
            "counter": None if counter is None else f"{type(counter).__qualname__}",
            "counter_max_length": getattr(counter, "max_length", None),
            "abstract": "title+abstract",  # abstract passages are encoded as the index encodes documents
        }
        return json.dumps(parts, sort_keys=True)

    def _doc_cache_key(self, doc: EvidenceDoc) -> str:
        units = [(u.kind, u.index, u.label, list(u.path), u.text) for u in doc.text_units]
        payload = json.dumps([self._config_key, doc_key(doc), doc.title, units], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def _items(self, docs: Sequence[EvidenceDoc]) -> list[_Item]:
        out: list[_Item] = []
        for doc in docs:
            key = self._doc_cache_key(doc)
            built = self.cache.built(key)
            if built is None:
                built = tuple(build_chunks(doc, self.segmenter, self.counter))
                self.cache.put(key, built)
            out.extend(
                _Item(chunk, doc, kind, unit, key, row) for row, (chunk, kind, unit) in enumerate(built)
            )
        return out

    @staticmethod
    def _pair(item: _Item) -> tuple[str, str]:
        """What the encoder sees: an abstract with its title, as the dense index encodes the document (so
        the index's vector can stand in for it); a full-text chunk alone."""
        if item.kind == "abstract":
            return (item.doc.title.strip(), item.chunk.text)
        return ("", item.chunk.text)

    def _index_vectors(
        self, items: Sequence[_Item], runs: Sequence[tuple[int, int]]
    ) -> dict[int, FloatArray]:
        """Item position -> the dense index's vector, for abstract passages of documents with exactly one
        abstract unit (what the index encoded: ``[title, abstract]`` of the record)."""
        if self.vectors is None or not runs:
            return {}
        wanted: dict[str, int] = {}
        for a, b in runs:
            abstracts = [n for n in range(a, b) if items[n].kind == "abstract"]
            if len(abstracts) == 1:
                wanted[items[abstracts[0]].doc.pmid] = abstracts[0]
        if not wanted:
            return {}
        found = self.vectors.document_vectors(list(wanted))
        out = {wanted[pmid]: vec for pmid, vec in found.items() if pmid in wanted}
        self.cache.count_index_vectors(len(out))
        return out

    def precompute(self, docs: Sequence[EvidenceDoc]) -> int:
        """Segment and encode ``docs`` into the cache now (an index-time build); returns passages encoded."""
        items = self._items(docs)
        return len(self._passage_vectors(items)) if items else 0

    def _dense(self, query: str, items: Sequence[_Item]) -> _Scored:
        if self.vectors is not None:
            q = self.vectors.query_vector(query)  # the dense arm encoded this very question already
        else:
            try:
                q = self.encoder.encode_queries([query], batch_size=1)[0]
            except Exception as exc:  # like a document encode failure: the caller answers without passages
                raise EncodeFailed(f"query encoding failed ({type(exc).__name__}: {exc})") from exc
        d = self._passage_vectors(items)
        return _Scored([float(s) for s in np.asarray(d @ q, dtype=np.float64)], q, d)

    def _passage_vectors(self, items: Sequence[_Item]) -> FloatArray:
        """One row per item: cached (or pinned) document blocks as they are, the rest computed and cached."""
        bs = self.settings.encode_batch_size
        runs: list[tuple[int, int]] = []  # [start, end) of each document's passages (contiguous, row 0 first)
        for n, it in enumerate(items):
            if it.row == 0:
                runs.append((n, n + 1))
            else:
                runs[-1] = (runs[-1][0], n + 1)
        blocks: list[FloatArray | None] = []
        for a, b in runs:
            cached = self.cache.vectors(items[a].key)
            blocks.append(cached if cached is not None and len(cached) == b - a else None)
        missing = [r for r, block in zip(runs, blocks, strict=True) if block is None]
        if missing:
            # Abstracts the dense index holds take its vectors; everything else not cached is encoded in one
            # call, as without a cache: with a cold cache the vectors are exactly those of the uncached path.
            # (Batch composition moves float32 results by ~1e-7; uncached, a document's vectors already varied
            # that much with the other documents asked with.)
            known = self._index_vectors(items, missing)
            todo = [n for a, b in missing for n in range(a, b) if n not in known]
            rows: dict[int, FloatArray] = {}
            if todo:
                encoded = self.batcher.encode_documents([self._pair(items[n]) for n in todo], batch_size=bs)
                rows = {n: encoded[r] for r, n in enumerate(todo)}
            rows.update(known)
            fresh: dict[int, FloatArray] = {}
            for a, b in missing:
                fresh[a] = np.stack([rows[n] for n in range(a, b)]).astype(np.float32, copy=False)
                built = tuple((it.chunk, it.kind, it.unit_index) for it in items[a:b])
                self.cache.put(items[a].key, built, fresh[a])
            blocks = [
                fresh[a] if block is None else block for (a, _), block in zip(runs, blocks, strict=True)
            ]
        d: FloatArray = np.concatenate([blk for blk in blocks if blk is not None], axis=0)
        return d

    def _vector_scorer(self) -> _ScoresVectors | None:
        """The reranker when it is the bi-encoder over this very encoder: its passage vectors would be the
        dense stage's, so encoding the candidates again would only repeat work."""
        r = self.reranker
        if r is not None and r.kind == "bi-encoder" and isinstance(r, _ScoresVectors):
            return r if r.encoder is self.encoder else None
        return None

    async def retrieve(self, query: str, docs: Sequence[EvidenceDoc]) -> PassageContext:
        s = self.settings
        # Segmenting and encoding are CPU/GPU-bound: keep them off the event loop.
        items = await asyncio.to_thread(self._items, docs)
        if not items:
            return self._context((), 0, 0)
        scored = await asyncio.to_thread(self._dense, query, items)
        dense = scored.dense
        # Stable sorts with the item index as tie-break keep results deterministic.
        candidates = sorted(range(len(items)), key=lambda i: (-dense[i], i))[: s.candidates]
        rerank: dict[int, float] = {}
        if self.reranker is not None:
            scorer = self._vector_scorer()
            if scorer is not None:
                scores = scorer.score(scored.query, [scored.vectors[i] for i in candidates])
            else:
                texts = [items[i].chunk.text for i in candidates]
                scores = await asyncio.to_thread(self.reranker.rerank, query, texts)
            rerank = dict(zip(candidates, scores, strict=True))
            order = sorted(candidates, key=lambda i: (-rerank[i], candidates.index(i)))
        else:
            order = candidates
        selected = order[: s.top_k]
        passages, used = self._budget(items, dense, rerank, selected)
        return self._context(tuple(passages), used, len(items))

    def _context(self, passages: tuple[Passage, ...], used: int, scored: int) -> PassageContext:
        r = self.reranker
        if r is None:
            note: str | None = "no reranker: dense order"
        elif r.kind == "bi-encoder":
            note = r.note or "bi-encoder rerank"
        else:
            note = r.note
        return PassageContext(
            passages=passages,
            reranker_name=r.name if r else None,
            reranker_kind=r.kind if r else None,
            rerank_note=note,
            budget_used=used,
            budget=self.settings.context_tokens,
            scored=scored,
        )

    def _budget(
        self, items: Sequence[_Item], dense: Sequence[float], rerank: dict[int, float], selected: list[int]
    ) -> tuple[list[Passage], int]:
        s = self.settings
        budget = s.context_tokens
        used = 0
        taken: set[int] = set()
        kept: list[int] = []
        for i in selected:  # rank order; a passage that does not fit is skipped, smaller ones may still fit
            cost = items[i].chunk.token_count
            if used + cost <= budget:
                kept.append(i)
                taken.add(i)
                used += cost
        by_id = {(it.chunk.doc_id, it.chunk.id): n for n, it in enumerate(items)}
        pulled: dict[int, list[int]] = {i: [] for i in kept}
        for i in kept:
            for j in self._neighbours(items, by_id, i, s.expand_radius):
                cost = items[j].chunk.token_count
                if j not in taken and used + cost <= budget:
                    pulled[i].append(j)
                    taken.add(j)
                    used += cost
        out: list[Passage] = []
        for rank, i in enumerate(kept, start=1):
            group = sorted([i, *pulled[i]], key=lambda j: items[j].chunk.start)
            for j in group:
                scores = {"dense": dense[j]}
                if j in rerank:
                    scores["rerank"] = rerank[j]
                out.append(self._passage(items[j], scores, rank, None if j == i else items[i].chunk.id))
        return out, used

    @staticmethod
    def _neighbours(
        items: Sequence[_Item], by_id: dict[tuple[str, str], int], i: int, radius: int
    ) -> list[int]:
        """Chunks of the same section up to ``radius`` away, nearest first (prev before next)."""
        base = items[i].chunk
        if items[i].kind == "abstract":
            return []
        sides: list[list[int]] = []
        for attr in ("prev_id", "next_id"):
            side: list[int] = []
            cur = base
            while len(side) < radius:
                nid = getattr(cur, attr)
                j = by_id.get((base.doc_id, nid)) if nid else None
                if j is None or items[j].chunk.section_index != base.section_index:
                    break  # a neighbour across a section boundary is not this passage's context
                side.append(j)
                cur = items[j].chunk
            sides.append(side)
        prev, nxt = sides
        out: list[int] = []
        for d in range(radius):
            out.extend(side[d] for side in (prev, nxt) if d < len(side))
        return out

    @staticmethod
    def _passage(item: _Item, scores: dict[str, float], rank: int, expanded_from: str | None) -> Passage:
        c = item.chunk
        return Passage(
            chunk_id=c.id,
            pmid=item.doc.pmid,
            pmcid=item.doc.pmcid,
            doc_class=item.doc.doc_class,
            doc_rank=item.doc.fused_rank,
            kind=item.kind,
            heading=c.heading,
            path=c.path,
            unit_index=item.unit_index,
            start=c.start,
            end=c.end,
            text=c.text,
            token_count=c.token_count,
            scores=scores,
            rank=rank,
            expanded_from=expanded_from,
        )

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
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field

from retrieval._encoders import Encoder
from retrieval._evidence import DocClass, EvidenceDoc
from retrieval._rerank import Reranker

from ._types import Chunk, Segmenter, SourceSection, SourceText

__all__ = [
    "CountsTokens",
    "Passage",
    "PassageContext",
    "PassageRetriever",
    "PassageSettings",
    "TextCounter",
    "build_chunks",
    "doc_key",
]


class PassageSettings(BaseModel):
    """Passage retrieval knobs (defaults follow CoMeta's two-stage setup: dense top-30, rerank to top-8)."""

    candidates: int = Field(default=30, ge=1, le=10_000)  # dense top-N handed to the reranker
    top_k: int = Field(default=8, ge=1, le=1_000)  # passages selected after rerank
    context_tokens: int = Field(default=3_000, ge=1, le=1_000_000)  # budget for selected + expanded text
    expand_radius: int = Field(default=1, ge=0, le=1_000)  # 0 = no expansion; large = whole section
    encode_batch_size: int = Field(default=32, ge=1, le=4_096)


class CountsTokens(Protocol):
    def count(self, text: str) -> int: ...


class TextCounter:
    """Whitespace word count: the token count for abstracts when no encoder tokenizer counter is given."""

    def count(self, text: str) -> int:
        return len(text.split())


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


def doc_key(doc: EvidenceDoc) -> str:
    return f"PMID:{doc.pmid}"


@dataclass(frozen=True, slots=True)
class _Item:
    chunk: Chunk
    doc: EvidenceDoc
    kind: Literal["abstract", "section"]
    unit_index: int


def build_chunks(
    doc: EvidenceDoc, segmenter: Segmenter, counter: CountsTokens | None = None
) -> list[tuple[Chunk, Literal["abstract", "section"], int]]:
    """The passages of one document: (chunk, unit kind, text-unit index), in document order.

    Abstract units become one chunk each (id ``{doc}#a{i}``); section units are segmented together as one
    SourceText, so the segmenter's ids and prev/next links run over the whole body.
    """
    counter = counter or TextCounter()
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
    ) -> None:
        self.segmenter = segmenter
        self.encoder = encoder
        self.reranker = reranker
        self.settings = settings or PassageSettings()
        self.counter = counter

    def _items(self, docs: Sequence[EvidenceDoc]) -> list[_Item]:
        return [
            _Item(chunk, doc, kind, unit)
            for doc in docs
            for chunk, kind, unit in build_chunks(doc, self.segmenter, self.counter)
        ]

    def _dense(self, query: str, items: Sequence[_Item]) -> list[float]:
        bs = self.settings.encode_batch_size
        q = self.encoder.encode_queries([query], batch_size=1)
        d = self.encoder.encode_documents([("", it.chunk.text) for it in items], batch_size=bs)
        return [float(s) for s in np.asarray(d @ q[0], dtype=np.float64)]

    async def retrieve(self, query: str, docs: Sequence[EvidenceDoc]) -> PassageContext:
        s = self.settings
        # Segmenting and encoding are CPU/GPU-bound: keep them off the event loop.
        items = await asyncio.to_thread(self._items, docs)
        if not items:
            return self._context((), 0, 0)
        dense = await asyncio.to_thread(self._dense, query, items)
        # Stable sorts with the item index as tie-break keep results deterministic.
        candidates = sorted(range(len(items)), key=lambda i: (-dense[i], i))[: s.candidates]
        rerank: dict[int, float] = {}
        if self.reranker is not None:
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

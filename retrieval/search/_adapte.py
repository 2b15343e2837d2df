"""Adapt-E: run the Boolean ladder strict -> relaxed against ESearch and stop once enough PMIDs are in.

A query that returns nothing is a *zero-hit*. When every tier is a zero-hit, one last relaxed OR of the
plan's top concepts runs; only when that also finds nothing is the question a final zero-hit.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Literal

from retrieval.eutils import EutilsClient
from retrieval.ncbi import ESearchResult, EutilsError
from retrieval.query import parse_query
from retrieval.understand import QueryPlan
from retrieval.vocab import MeshVocabulary

from ._metrics import ADAPTE_FINAL_ZERO_HIT, ADAPTE_TIERS, ADAPTE_ZERO_HIT

__all__ = ["AdaptE", "AdaptEResult", "TierResult", "relaxed_or"]

_Outcome = tuple["ESearchResult | EutilsError", float]  # result or error, latency in ms


@dataclass(frozen=True, slots=True)
class TierResult:
    tier: int  # 1-based position in the ladder; the final fallback gets len(ladder) + 1
    query: str
    count: int
    latency_ms: float
    used: bool  # its PMIDs were collected
    new_pmids: int
    kind: Literal["ladder", "fallback", "undated"] = "ladder"
    error: str | None = None
    phrases_not_found: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AdaptEResult:
    pmids: tuple[str, ...]  # ranked: earlier (stricter) tiers first, each tier in ESearch order
    tiers: tuple[TierResult, ...]
    zero_hit: bool  # nothing found even by the final relaxed OR
    fallback_used: bool
    stopped_at: int | None  # tier that reached ``min_hits``; None if the ladder ran out first
    errors: tuple[str, ...] = field(default=())
    # Nothing within the requested years, so the relaxed query ran once more without them: the evidence
    # is older than asked, and the answer must say so.
    date_limits_relaxed: bool = False

    @property
    def tiers_run(self) -> int:
        return len(self.tiers)


def _quoted(term: str) -> str:
    # User-derived text is always data: strip anything that could act as syntax, then quote it.
    cleaned = "".join(ch for ch in term if ch not in '"[]()*#').strip()
    return f'"{cleaned}"' if cleaned else ""


def relaxed_or(plan: QueryPlan, vocabulary: MeshVocabulary | None = None, max_terms: int = 4) -> str | None:
    """The last-resort query: an OR of the plan's top concepts, broadened one step up the MeSH tree.

    Concept words are searched in Title/Abstract (a concept the indexers did not assign can still match
    the text); with a vocabulary, each concept's parent descriptors join as ``[mh]`` — the clinical
    abstraction a librarian makes when nothing specific exists (glioblastoma -> glioma).
    """
    terms: list[str] = []
    seen: set[str] = set()

    def add(term: str) -> None:
        if term and term.lower() not in seen:
            seen.add(term.lower())
            terms.append(term)

    concepts = plan.concepts[:max_terms]
    for concept in concepts:
        for candidate in (concept.mesh, concept.text):
            q = _quoted(candidate or "")
            if q:
                add(f"{q}[tiab]")
    if vocabulary is not None:
        for concept in concepts:
            name = vocabulary.lookup(concept.mesh or concept.text)
            for parent in vocabulary.parents(name) if name else ():
                add(f"{_quoted(parent)}[mh]")
    if not terms:
        words = [w for w in plan.corrected_question.split() if len(w) > 3][:max_terms]
        for w in words:
            q = _quoted(w)
            if q:
                add(f"{q}[tiab]")
    if not terms:
        return None
    query = " OR ".join(terms[: max_terms * 3])
    parse_query(query)  # raises QuerySyntaxError if our quoting ever let syntax through
    return query


class AdaptE:
    """Adaptive execution of a query ladder. One instance per process is fine (it holds no state)."""

    def __init__(
        self,
        client: EutilsClient,
        *,
        min_hits: int = 10,
        retmax: int = 50,
        sort: str | None = "relevance",
        vocabulary: MeshVocabulary | None = None,
        speculative: bool = False,
    ) -> None:
        self.client = client
        self.vocabulary = vocabulary
        # Speculative: send every tier's ESearch at once (the shared limiter still spaces them) and cancel
        # what is not needed after early stop. Saves wall time only when the rate allows several requests
        # per round trip (API key); costs wasted calls otherwise. See bench/adapte.py before enabling.
        self.speculative = speculative
        self.min_hits = min_hits
        self.retmax = retmax
        self.sort = sort

    async def run(
        self,
        plan: QueryPlan,
        *,
        mindate: str | None = None,
        maxdate: str | None = None,
        api_key: str | None = None,
    ) -> AdaptEResult:
        """Run ``plan.ladder`` in order. Explicit ``mindate``/``maxdate`` override the plan's date limits."""
        if mindate is None and maxdate is None and plan.date_limits is not None:
            mindate, maxdate = str(plan.date_limits.min_year), str(plan.date_limits.max_year)
        collected: dict[str, None] = {}
        tiers: list[TierResult] = []
        errors: list[str] = []
        stopped_at: int | None = None
        pending: list[asyncio.Task[_Outcome]] = []
        if self.speculative:
            pending = [asyncio.create_task(self._search(q, mindate, maxdate, api_key)) for q in plan.ladder]
        try:
            for number, query in enumerate(plan.ladder, start=1):
                if pending:
                    outcome = await pending[number - 1]
                else:
                    outcome = await self._search(query, mindate, maxdate, api_key)
                tier = self._record(number, query, "ladder", outcome, collected)
                tiers.append(tier)
                if tier.error:
                    errors.append(tier.error)
                if len(collected) >= self.min_hits:
                    stopped_at = number
                    break
        finally:
            for task in pending:
                task.cancel()
        fallback_used = False
        fallback: str | None = None
        if not collected:
            fallback = relaxed_or(plan, self.vocabulary)
            if fallback is not None and fallback not in plan.ladder:
                fallback_used = True
                tier = await self._run_tier(
                    len(plan.ladder) + 1, fallback, "fallback", collected, mindate, maxdate, api_key
                )
                tiers.append(tier)
                if tier.error:
                    errors.append(tier.error)
        date_relaxed = False
        if not collected and (mindate or maxdate):
            relaxed = fallback if fallback_used and fallback else plan.ladder[-1]
            date_relaxed = True
            tier = await self._run_tier(len(tiers) + 1, relaxed, "undated", collected, None, None, api_key)
            tiers.append(tier)
            if tier.error:
                errors.append(tier.error)
        zero_hit = not collected
        if zero_hit:
            ADAPTE_FINAL_ZERO_HIT.inc()
        if errors and len(errors) == len(tiers):
            # Every call failed: that is an outage, not a zero-hit; let the caller degrade honestly.
            raise EutilsError(f"all {len(tiers)} ESearch calls failed: {errors[-1]}", endpoint="esearch")
        return AdaptEResult(
            pmids=tuple(collected),
            tiers=tuple(tiers),
            zero_hit=zero_hit,
            fallback_used=fallback_used,
            stopped_at=stopped_at,
            errors=tuple(errors),
            date_limits_relaxed=date_relaxed,
        )

    async def _run_tier(
        self,
        number: int,
        query: str,
        kind: Literal["ladder", "fallback", "undated"],
        collected: dict[str, None],
        mindate: str | None,
        maxdate: str | None,
        api_key: str | None,
    ) -> TierResult:
        outcome = await self._search(query, mindate, maxdate, api_key)
        return self._record(number, query, kind, outcome, collected)

    async def _search(
        self, query: str, mindate: str | None, maxdate: str | None, api_key: str | None
    ) -> _Outcome:
        started = time.perf_counter()
        try:
            result: ESearchResult | EutilsError = await self.client.esearch(
                query, retmax=self.retmax, sort=self.sort, mindate=mindate, maxdate=maxdate, api_key=api_key
            )
        except EutilsError as exc:
            result = exc
        return result, (time.perf_counter() - started) * 1000

    def _record(
        self,
        number: int,
        query: str,
        kind: Literal["ladder", "fallback", "undated"],
        outcome: _Outcome,
        collected: dict[str, None],
    ) -> TierResult:
        result, latency = outcome
        label = str(number) if kind == "ladder" else kind
        if isinstance(result, EutilsError):
            ADAPTE_TIERS.labels(label, "error").inc()
            error = f"{type(result).__name__}: {result}"
            return TierResult(number, query, 0, latency, False, 0, kind, error=error)
        before = len(collected)
        for pmid in result.ids:
            collected.setdefault(pmid, None)
        new = len(collected) - before
        if result.count == 0:
            ADAPTE_ZERO_HIT.labels(label).inc()
        ADAPTE_TIERS.labels(label, "hit" if result.count else "zero").inc()
        return TierResult(
            number,
            query,
            result.count,
            latency,
            used=new > 0,
            new_pmids=new,
            kind=kind,
            phrases_not_found=result.phrases_not_found + result.quoted_phrases_not_found,
        )

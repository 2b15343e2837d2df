"""Adapt-E: run the Boolean ladder strict -> relaxed against ESearch and stop once enough PMIDs are in.

A query that returns nothing is a *zero-hit*. When every tier is a zero-hit, one last relaxed OR of the
plan's top concepts runs; only when that also finds nothing is the question a final zero-hit. The result
says which kind of tier matched first (:attr:`AdaptEResult.matched_tier`, what the evidence gate weighs).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from retrieval.eutils import EutilsClient
from retrieval.ncbi import ESearchResult, EutilsError, LiteratureIndex, PubmedRecord
from retrieval.query import And, Node, Not, Or, QuerySyntaxError, Term, parse_query
from retrieval.understand import QueryPlan
from retrieval.vocab import MeshVocabulary

from ._metrics import ADAPTE_FINAL_ZERO_HIT, ADAPTE_TIERS, ADAPTE_ZERO_HIT

__all__ = ["AdaptE", "AdaptEResult", "MatchedTier", "TierResult", "relaxed_or", "union_query"]

# Which kind of query matched first: "strict" a ladder tier that AND-s concepts, "relaxed" one concept or an
# OR of them, "generic" a lone MeSH heading that is none of the plan's concepts (the rewriter's last resort
# when the question names no concept it knows), "none" nothing matched.
MatchedTier = Literal["strict", "relaxed", "generic", "none"]

_Outcome = tuple["ESearchResult | EutilsError", float]  # result or error, latency in ms


@dataclass(frozen=True, slots=True)
class TierResult:
    tier: int  # 1-based position in the ladder; the final fallback gets len(ladder) + 1
    query: str
    count: int
    latency_ms: float
    used: bool  # its PMIDs were collected
    new_pmids: int
    kind: Literal["ladder", "union", "fallback", "undated"] = "ladder"
    error: str | None = None
    # PubMed's ErrorList (phrases and field tags it does not know) and WarningList (quoted phrases not
    # found, phrases ignored), as ESearch reported them for this tier's query.
    phrases_not_found: tuple[str, ...] = ()
    fields_not_found: tuple[str, ...] = ()
    quoted_phrases_not_found: tuple[str, ...] = ()
    phrases_ignored: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AdaptEResult:
    # Ranked: earlier (stricter) tiers first, each tier in ESearch order (union, once ranked: the union's own
    # hits of the tier, then the other arms' candidates that satisfy it, see :meth:`AdaptE.rank_locally`).
    pmids: tuple[str, ...]
    tiers: tuple[TierResult, ...]
    zero_hit: bool  # nothing found even by the final relaxed OR
    fallback_used: bool
    stopped_at: int | None  # tier that reached ``min_hits``; None if the ladder ran out first
    errors: tuple[str, ...] = field(default=())
    # Nothing within the requested years, so the relaxed query ran once more without them: the evidence
    # is older than asked, and the answer must say so.
    date_limits_relaxed: bool = False
    # Strategy "union": the first ``union_hits`` PMIDs are the union query's, in ESearch order, still to be
    # ranked by tier (:meth:`AdaptE.rank_locally`, given their records); 0 once ranked or for the ladder.
    union_hits: int = 0
    # Strategy "union", once ranked: the strictest ladder query that one of the union's hits satisfies (what
    # the ladder's first used tier would have been; the evidence gate reads it); None otherwise.
    strictest_local: str | None = None
    # The date window the ESearches kept (``mindate``/``maxdate``); None when there was none or it was
    # given up (``date_limits_relaxed``). Candidates of other arms joining a tier must fall inside it too.
    mindate: str | None = None
    maxdate: str | None = None
    # The plan's concepts, their texts and MeSH headings lower-cased (:meth:`AdaptE.run`): a lone heading
    # among them is the question's own concept, not the generic last resort.
    concepts: frozenset[str] = frozenset()

    @property
    def tiers_run(self) -> int:
        return len(self.tiers)

    @property
    def matched_tier(self) -> MatchedTier:
        """The kind of the first tier that collected PMIDs (:data:`MatchedTier`), read from its parsed query;
        for strategy "union", of the strictest ladder tier one of its hits satisfies (``strictest_local``)."""
        used = [t for t in self.tiers if t.used and t.count > 0 and t.error is None]
        if not used:
            return "none"
        first = used[0]
        if first.kind == "union":
            # One ESearch ran every tier but the loosest; the local check says which tier would have matched.
            local = _parsed(self.strictest_local) if self.strictest_local is not None else None
            return "strict" if local is not None and _conjunction(local) else "relaxed"
        node = _parsed(first.query)
        if node is None:
            return "relaxed"
        if isinstance(node, Term) and node.field == "mh" and node.text.lower() not in self.concepts:
            return "generic"
        return "strict" if first.kind == "ladder" and _conjunction(node) else "relaxed"


def _parsed(query: str) -> Node | None:
    try:
        return parse_query(query)
    except QuerySyntaxError:
        return None


def _conjunction(node: Node) -> bool:
    """Whether an AND joins any part of the query."""
    if isinstance(node, And):
        return True
    if isinstance(node, Or):
        return any(_conjunction(child) for child in node.children)
    if isinstance(node, Not):
        return _conjunction(node.left) or _conjunction(node.right)
    return False


def union_query(ladder: Sequence[str]) -> str | None:
    """Every tier of the ladder OR-ed into one query (repeats once); None for an empty ladder."""
    tiers = list(dict.fromkeys(q.strip() for q in ladder if q.strip()))
    if not tiers:
        return None
    return tiers[0] if len(tiers) == 1 else " OR ".join(f"({q})" for q in tiers)


def _quoted(term: str) -> str:
    # User-derived text is always data: strip anything that could act as syntax, then quote it.
    cleaned = "".join(ch for ch in term if ch not in '"[]()*#').strip()
    return f'"{cleaned}"' if cleaned else ""


def relaxed_or(plan: QueryPlan, vocabulary: MeshVocabulary | None = None, max_terms: int = 4) -> str | None:
    """The last-resort query: an OR of the plan's top concepts, broadened one step up the MeSH tree.

    Concept words are searched in Title/Abstract (a concept the indexers did not assign can still match
    the text); with a vocabulary, each concept's parent descriptors join as ``[mh]`` — the clinical
    abstraction a librarian makes when nothing specific exists (glioblastoma -> glioma).

    A plan without concepts has none (None): its question's words are not sent instead. The rewriters
    only ever leave a plan without concepts when the question holds no vocabulary word, and an unknown
    word may be a name the PHI scrubber missed ("zofia wisniewska"); nothing but clinical concepts leaves.
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
        return None
    query = " OR ".join(terms[: max_terms * 3])
    parse_query(query)  # raises QuerySyntaxError if our quoting ever let syntax through
    return query


def _in_window(record: PubmedRecord, mindate: str | None, maxdate: str | None) -> bool:
    """Whether the record's year is inside the ESearch date window, as the evidence stage judges it (a record
    without a year cannot be shown to be inside a window)."""
    low, high = (int(d[:4]) if d and d[:4].isdigit() else None for d in (mindate, maxdate))
    if low is None and high is None:
        return True
    if record.year is None:
        return False
    return (low is None or record.year >= low) and (high is None or record.year <= high)


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
        strategy: Literal["ladder", "union"] = "ladder",
        union_retmax: int = 100,
        check_vocabulary: Callable[[], MeshVocabulary] | None = None,
    ) -> None:
        self.client = client
        # "union": one ESearch of every tier OR-ed together (relevance order), then, given the records, the
        # strictest tier each hit satisfies is found locally (:meth:`rank_locally`) instead of one ESearch
        # per tier. "ladder": the tiers one by one, strict -> relaxed (the CoMeta paper's Adapt-E).
        self.strategy = strategy
        self.union_retmax = union_retmax
        # The MeSH vocabulary the local checks explode descriptors with: the server's own when offline
        # (``retrieval.ncbi.corpus_vocabulary``), else the bundled one. Built once, on first use.
        self._vocabulary_factory = check_vocabulary or MeshVocabulary.load
        self._check_vocabulary: MeshVocabulary | None = None
        self._check_lock = threading.Lock()
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
        # Union: the stricter tiers in one ESearch; the loosest tier (often thousands of hits) runs alone,
        # after it, only when the union found fewer than min_hits, as the ladder would have reached it.
        ladder: Sequence[str] = plan.ladder
        union = union_query(plan.ladder[:-1]) if self.strategy == "union" and len(plan.ladder) > 1 else None
        if union is not None:
            outcome = await self._search(union, mindate, maxdate, api_key, retmax=self.union_retmax)
            tier = self._record(1, union, "union", outcome, collected)
            tiers.append(tier)
            if tier.error:
                errors.append(tier.error)
            ladder = plan.ladder[-1:] if len(collected) < self.min_hits else ()
            stopped_at = len(plan.ladder) - 1 if not ladder else None
        if self.speculative and union is None:
            pending = [asyncio.create_task(self._search(q, mindate, maxdate, api_key)) for q in plan.ladder]
        first = 1 if union is None else len(plan.ladder)
        try:
            for number, query in enumerate(ladder, start=first):
                if pending:
                    outcome = await pending[number - first]
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
            relaxed = fallback if fallback_used and fallback else (union or plan.ladder[-1])
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
            union_hits=tiers[0].new_pmids if union is not None and tiers and tiers[0].kind == "union" else 0,
            mindate=None if date_relaxed else mindate,
            maxdate=None if date_relaxed else maxdate,
            concepts=frozenset(n.lower() for c in plan.concepts for n in (c.text, c.mesh) if n),
        )

    def prepare(self) -> None:
        """Build the tier check's vocabulary now (a world's full MeSH takes a moment), not on a question."""
        if self.strategy == "union":
            with self._check_lock:
                if self._check_vocabulary is None:
                    self._check_vocabulary = self._vocabulary_factory()

    def rank_locally(
        self,
        plan: QueryPlan,
        result: AdaptEResult,
        records: Mapping[str, PubmedRecord],
        others: Sequence[str] = (),
    ) -> AdaptEResult:
        """The union's hits in ladder order: each by the strictest tier it satisfies (checked on its record
        with our own query engine), then in ESearch's order; tiers are taken, at most ``retmax`` each, until
        ``min_hits`` are in, as the ladder would have stopped. Hits after the union (the loosest tier's)
        follow unchanged, less those moved up, and then ``stopped_at`` stays the ESearches' own (their tier
        ran). A hit whose record is missing keeps its place after the ranked ones.

        ``others``: the other arms' candidates (the dense top-k), best first, whose records were fetched with
        the union's. One that satisfies a tier joins that tier after the union's own hits (within the same
        ``retmax``): it *is* a hit of that tier's query, which the ladder's own ESearch of the tier would have
        returned, but the union's ``union_retmax`` cut, ordered by the whole OR's relevance, can miss it when
        looser tiers crowd the strict ones out (docs/history/performance-notes.md, "ladder vs union"). Only
        candidates inside the ESearch's date window join (the ladder's ESearch would not return the
        others)."""
        n = result.union_hits
        if n == 0 or len(plan.ladder) < 2:
            return result
        head, tail = list(result.pmids[:n]), list(result.pmids[n:])
        in_head = set(head)
        found = [records[p] for p in head if p in records]
        joined = [
            p
            for p in dict.fromkeys(others)
            if p in records and p not in in_head and _in_window(records[p], result.mindate, result.maxdate)
        ]
        self.prepare()
        with self._check_lock:
            index = LiteratureIndex([*found, *(records[p] for p in joined)], self._check_vocabulary)
            members = [set(index.search(q).ids) for q in plan.ladder[:-1]]
        ranked: dict[str, None] = {}
        stopped_at: int | None = None
        # The gate's tier signal stays the union's own: the other arms know no date window.
        strictest = next((q for q, hits in zip(plan.ladder, members, strict=False) if hits & in_head), None)
        for number, hits in enumerate(members, start=1):
            own = [p for p in head if p in hits and p not in ranked]
            fresh = [*own, *(p for p in joined if p in hits and p not in ranked)][: self.retmax]
            ranked.update(dict.fromkeys(fresh))
            if len(ranked) >= self.min_hits:
                stopped_at = number
                break
        if stopped_at is None:
            ranked.update(dict.fromkeys(head))  # the ladder would have taken every tier: all of the union
            stopped_at = result.stopped_at
        else:
            ranked.update(dict.fromkeys(p for p in head if p not in records))  # unchecked: kept, after
        rest = [p for p in tail if p not in ranked]
        pmids = (*ranked, *rest)
        if rest:
            # The loosest tier's (or the fallback's) hits still follow: the ladder did not stop early.
            stopped_at = result.stopped_at
        # The union's entry accounts for the hits it kept, and each later tier for its hits still after
        # them (a joined candidate moved up from the loosest tier's hits counts once, in the union's): the
        # tiers' new_pmids still add up to len(pmids), so walking the tiers tags every PMID.
        tiers = list(result.tiers)
        tiers[0] = dataclasses.replace(tiers[0], new_pmids=len(ranked), used=bool(ranked))
        start = 0
        for i, tier in enumerate(tiers[1:], start=1):
            own = tail[start : start + tier.new_pmids]
            start += tier.new_pmids
            moved = sum(1 for p in own if p in ranked)
            if moved:
                left = tier.new_pmids - moved
                tiers[i] = dataclasses.replace(tier, new_pmids=left, used=tier.used and left > 0)
        return dataclasses.replace(
            result,
            pmids=pmids,
            tiers=tuple(tiers),
            stopped_at=stopped_at,
            union_hits=0,
            strictest_local=strictest,
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
        self,
        query: str,
        mindate: str | None,
        maxdate: str | None,
        api_key: str | None,
        *,
        retmax: int | None = None,
    ) -> _Outcome:
        started = time.perf_counter()
        try:
            result: ESearchResult | EutilsError = await self.client.esearch(
                query,
                retmax=self.retmax if retmax is None else retmax,
                sort=self.sort,
                mindate=mindate,
                maxdate=maxdate,
                api_key=api_key,
            )
        except EutilsError as exc:
            result = exc
        return result, (time.perf_counter() - started) * 1000

    def _record(
        self,
        number: int,
        query: str,
        kind: Literal["ladder", "union", "fallback", "undated"],
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
            phrases_not_found=result.phrases_not_found,
            fields_not_found=result.fields_not_found,
            quoted_phrases_not_found=result.quoted_phrases_not_found,
            phrases_ignored=result.phrases_ignored,
        )

"""Async E-utilities client.

One :class:`EutilsClient` wraps one ``httpx.AsyncClient``; rate limiting is process-wide per key
(``_ratelimit``), so any number of clients and coroutines together stay under NCBI's limit.
The same code path serves live NCBI, a ``cometa eutils serve`` URL, or the bundled corpus in-process
(``backend="local"``: httpx's ASGI transport into :func:`retrieval.localncbi.create_eutils_app`, which the
caller builds and passes in: the client never builds a server).

Every request: ``tool``/``email``/``api_key`` sent, explicit ``retmode``, a timeout, retries with
exponential backoff and jitter on 429 / rate-limit bodies / 5xx / timeouts / malformed bodies, the limiter
re-acquired before each attempt, and a total retry budget. Failures surface as the
:class:`~retrieval.ncbi.EutilsError` tree, never as raw httpx or lxml errors.

Results are cached in a :mod:`retrieval.eutils._store` store (memory, SQLite or Redis). When a call fails for
availability reasons (transport, 5xx, rate limited, garbage bodies: everything but BadRequest) after its
retries, an expired entry younger than ``max_stale_s`` is served instead (stale-if-error) and recorded in
``stats`` and in the :class:`EutilsDegradation` of the surrounding :func:`track_degradation` block, which
is how the pipeline knows to mark its answer.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from retrieval.ncbi import (
    BadRequest,
    DocSummary,
    EInfoResult,
    ESearchResult,
    EutilsError,
    MalformedResponse,
    PmcArticle,
    PubmedRecord,
    RateLimited,
    ServerError,
    TransportError,
    normalise_pmcid,
    parse_einfo,
    parse_elink_pubmed_pmc,
    parse_esearch,
    parse_esummary,
    parse_pmc_articles,
    parse_pubmed_articles,
)

from ._config import EutilsSettings
from ._metrics import EUTILS_CACHE, EUTILS_LATENCY, EUTILS_REQUESTS, EUTILS_RETRIES
from ._ratelimit import (
    DEPLOYMENT,
    NCBI_RATE_WITH_KEY,
    LocalLimiter,
    RateLimiter,
    RedisLimiter,
    burst_for,
    effective_rate,
    window_rate,
)
from ._store import CacheEntry, CacheStore, hash_part, open_store

__all__ = [
    "LOCAL_BASE_URL",
    "ClientStats",
    "EutilsClient",
    "EutilsDegradation",
    "deadline_paused",
    "is_unavailable",
    "open_limiter",
    "question_deadline",
    "track_degradation",
]

LOCAL_BASE_URL = "http://eutils.local/entrez/eutils/"
LOCAL_REQUESTS_PER_SECOND = 1000.0
ESEARCH_MAX = 10_000  # NCBI: retmax cap, and PubMed returns only the first 10,000 matches at all

T = TypeVar("T")
R = TypeVar("R")
Params = list[tuple[str, str]]


@dataclass
class ClientStats:
    """Counters for benchmarks and the response metadata (calls per question, cache hit rate)."""

    requests: Counter[str]
    retries: Counter[str]
    cache_hits: int = 0  # fresh entries served
    cache_misses: int = 0  # absent or expired at lookup (an expired one may still be served as stale)
    stale_served: int = 0  # expired entries served because E-utilities failed
    failures: int = 0  # calls that failed for availability reasons after their retries

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())


@dataclass
class EutilsDegradation:
    """What went wrong with E-utilities inside one :func:`track_degradation` block (one question)."""

    allow_partial: bool = True  # efetch/elink may return what they could serve and count the rest
    failures: list[str] = field(default_factory=list)  # availability errors after retries, ``Type: message``
    stale: Counter[str] = field(default_factory=Counter)  # endpoint -> expired entries served
    max_stale_age_s: float = 0.0
    unserved: int = 0  # ids neither fetched nor cached, left out of partial results
    calls: Counter[str] = field(default_factory=Counter)  # endpoint -> HTTP requests sent (retries included)

    @property
    def total_calls(self) -> int:
        """Requests this question sent to E-utilities: what NCBI's rate limit counts."""
        return sum(self.calls.values())

    @property
    def unavailable(self) -> bool:
        """E-utilities failed at least once (after retries) for availability reasons."""
        return bool(self.failures)

    @property
    def stale_served(self) -> int:
        return sum(self.stale.values())

    @property
    def degraded(self) -> bool:
        return self.stale_served > 0 or self.unserved > 0


_DEGRADATION: ContextVar[EutilsDegradation | None] = ContextVar("cometa_eutils_degradation", default=None)


@contextmanager
def track_degradation(*, allow_partial: bool = True) -> Iterator[EutilsDegradation]:
    """Record E-utilities failures and stale answers of every client call inside the block.

    A context variable, not client state: one client serves many concurrent questions, and tasks started
    inside the block (gather, TaskGroup) share its record. With ``allow_partial``, a batched EFetch/ELink
    whose batch failed returns the ids it could serve (fresh, fetched or stale) instead of raising, as long
    as it can serve at least one; outside such a block a call raises unless every id could be served.
    """
    record = EutilsDegradation(allow_partial=allow_partial)
    token = _DEGRADATION.set(record)
    try:
        yield record
    finally:
        _DEGRADATION.reset(token)


@dataclass
class _Deadline:
    at: float  # moved later by :func:`deadline_paused` only
    clock: Callable[[], float]

    def remaining(self) -> float:
        return self.at - self.clock()


_DEADLINE: ContextVar[_Deadline | None] = ContextVar("cometa_eutils_deadline", default=None)


@contextmanager
def question_deadline(seconds: float, *, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Every client call inside the block ends within ``seconds`` from now, retries and rate-limiter waits
    included, whatever its own ``retry_budget_s``.

    The retry budget is per call and a question makes several calls one after the other, so only this
    bounds how long one question waits on NCBI (issue 27, finding 13). A context variable like
    :func:`track_degradation`: tasks started inside the block share it; a block inside another keeps the
    earlier deadline.
    """
    outer = _DEADLINE.get()
    mine = _Deadline(clock() + seconds, clock)
    token = _DEADLINE.set(mine if outer is None or outer.remaining() > seconds else outer)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@contextmanager
def deadline_paused() -> Iterator[None]:
    """The time spent inside the block does not count against the question's deadline (if any): it is
    moved later by that much on the way out. For waits on our own start-up (a model or an index still
    loading), which are not NCBI's and would otherwise leave a first question no time for its calls."""
    current = _DEADLINE.get()
    if current is None:
        yield
        return
    start = current.clock()
    try:
        yield
    finally:
        # The one deadline object is shared by the question's tasks: every call of it sees the new time.
        current.at += current.clock() - start


def is_unavailable(exc: BaseException) -> bool:
    """An E-utilities failure that says nothing about the request itself: worth a stale answer."""
    return isinstance(exc, EutilsError) and not isinstance(exc, BadRequest)


def _is_rate_limit_body(body: bytes) -> bool:
    # NCBI's limiter answers with a small JSON object; third parties report it with 2xx statuses too.
    head = body[:512].lstrip()
    if not head.startswith(b"{") or b"rate limit" not in head.lower():
        return False
    try:
        payload = json.loads(body)
    except ValueError:
        return False
    return isinstance(payload, dict) and "rate limit" in str(payload.get("error", "")).lower()


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _unique(ids: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for i in ids:
        s = str(i).strip()
        if s:
            seen.setdefault(s, None)
    return list(seen)


def open_limiter(settings: EutilsSettings) -> RateLimiter:
    """The NCBI rate limiter ``settings`` ask for: per process, or shared by every replica through Redis."""
    if settings.limiter == "redis":
        return RedisLimiter(
            settings.redis_limiter_url(),
            timeout_s=settings.limiter_timeout_s,
            on_error=settings.limiter_on_error,
            fallback_replicas=settings.limiter_fallback_replicas,
        )
    return LocalLimiter()


class EutilsClient:
    """Async client for ESearch, EFetch (PubMed XML, PMC JATS), ESummary, ELink ``pubmed_pmc``, EInfo."""

    def __init__(
        self,
        settings: EutilsSettings | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        store: CacheStore | None = None,
        limiter: RateLimiter | None = None,
    ) -> None:
        settings = settings or EutilsSettings()
        if settings.backend == "local" and settings.requests_per_second is None:
            # NCBI's 3/10 req/s protect NCBI; the in-process server needs no such spacing.
            settings = settings.model_copy(update={"requests_per_second": LOCAL_REQUESTS_PER_SECOND})
        if settings.backend == "local" and transport is None:
            raise ValueError(
                'backend "local" needs the transport into the local server: '
                "eutils_transport(create_eutils_app(...))"
            )
        self.settings = settings
        base_url = self.settings.base_url
        if not base_url.endswith("/"):
            base_url += "/"
        self.base_url = base_url
        timeout = httpx.Timeout(self.settings.timeout_s, connect=self.settings.connect_timeout_s)
        self._http = httpx.AsyncClient(
            transport=transport,
            timeout=timeout,
            headers={"User-Agent": f"{self.settings.tool} (CoMeta; httpx)"},
            follow_redirects=True,
        )
        self._rng = rng or random.Random()
        self._sleep = sleep
        self._clock = clock  # injectable with ``sleep`` so retry-budget tests need not wait
        cache = self.settings.cache
        # A store passed in is shared (tests, several clients of one process) and stays open on aclose.
        self._owns_store = store is None
        self.store = store if store is not None else open_store(cache)
        # Keys: normalised parameters (never tool/email/api_key: same question, same answer), under a
        # namespace that includes the E-utilities URL, so two backends never share entries.
        self._key_prefix = f"{cache.namespace}:eutils:{hash_part(self.base_url, 12)}:v1"
        self._owns_limiter = limiter is None
        if limiter is None:
            limiter = open_limiter(self.settings)
        self.limiter: RateLimiter = limiter
        # One ceiling for every key (a caller's own ncbi_api_key too): keys must not multiply our rate.
        ceiling = self.settings.max_requests_per_second or max(
            NCBI_RATE_WITH_KEY, self.settings.requests_per_second or 0.0
        )
        self._ceiling = self._pace(DEPLOYMENT, ceiling)
        self.stats = ClientStats(requests=Counter(), retries=Counter())

    async def __aenter__(self) -> EutilsClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()
        if self._owns_store and self.store is not None:
            await self.store.aclose()
        if self._owns_limiter:
            await self.limiter.aclose()

    # ------------------------------------------------------------------ public API

    async def esearch(
        self,
        term: str,
        *,
        db: str = "pubmed",
        retmax: int = 20,
        retstart: int = 0,
        sort: str | None = None,
        field: str | None = None,
        mindate: str | None = None,
        maxdate: str | None = None,
        datetype: str | None = None,
        reldate: int | None = None,
        count_only: bool = False,
        usehistory: bool = False,
        api_key: str | None = None,
        use_cache: bool = True,
    ) -> ESearchResult:
        """Run one ESearch (JSON). ``mindate``/``maxdate`` must come together, as NCBI requires."""
        if not term or not term.strip():
            raise BadRequest("empty search term", endpoint="esearch")
        if (mindate is None) != (maxdate is None):
            raise BadRequest("mindate and maxdate must be used together", endpoint="esearch")
        retmax = max(0, min(int(retmax), ESEARCH_MAX))
        retstart = max(0, int(retstart))
        params: Params = [("db", db), ("term", term), ("retmode", "json")]
        if count_only:
            params.append(("rettype", "count"))
        else:
            params += [("retmax", str(retmax)), ("retstart", str(retstart))]
        for name, value in (
            ("sort", sort),
            ("field", field),
            ("mindate", mindate),
            ("maxdate", maxdate),
            ("datetype", datetype or ("pdat" if mindate or reldate else None)),
            ("reldate", None if reldate is None else str(reldate)),
        ):
            if value:
                params.append((name, value))
        if usehistory:
            params.append(("usehistory", "y"))
        cacheable = use_cache and not usehistory and self.store is not None
        # Hashed: the term derives from a patient's question and must not sit readable in a shared store.
        key = self._key("esearch", hash_part(json.dumps(sorted(params))))
        fresh: dict[str, Any] = {}
        stale: dict[str, CacheEntry] = {}
        if cacheable:
            fresh, stale = await self._lookup("esearch", {key: key})
            if key in fresh:
                return fresh[key]  # type: ignore[no-any-return]
        post = len(term) >= self.settings.post_min_term_chars
        try:
            result = await self._call("esearch", params, parse_esearch, api_key=api_key, post=post)
        except EutilsError as exc:
            if key in stale and is_unavailable(exc):
                self._served_stale("esearch", [stale[key]])
                return stale[key].value  # type: ignore[no-any-return]
            raise
        if cacheable:
            await self._put({key: result})
        return result

    async def efetch_pubmed(self, pmids: Iterable[str], *, api_key: str | None = None) -> list[PubmedRecord]:
        """PubMed XML records for ``pmids``, in the order asked; unknown PMIDs are simply absent.

        Cached per PMID, so overlapping candidate sets only fetch what is new; misses go out in
        batches of ``efetch_batch_size`` (POST above ``post_min_ids``).
        """
        return await self._efetch_cached(
            "pubmed", _unique(pmids), str, parse_pubmed_articles, lambda r: r.pmid, api_key
        )

    async def efetch_pmc(self, pmcids: Iterable[str], *, api_key: str | None = None) -> list[PmcArticle]:
        """PMC JATS full texts. Accepts ``PMC123`` or ``123``; a withheld body is flagged, not an error."""
        wanted = _unique(normalise_pmcid(p) for p in pmcids)
        # EFetch db=pmc takes bare numeric UIDs.
        return await self._efetch_cached(
            "pmc", wanted, lambda pmcid: pmcid[3:], parse_pmc_articles, lambda a: a.pmcid, api_key
        )

    async def _efetch_cached(
        self,
        db: str,
        wanted: list[str],
        uid: Callable[[str], str],
        parser: Callable[[bytes], list[R]],
        key_of: Callable[[R], str],
        api_key: str | None,
    ) -> list[R]:
        keys = {ident: self._key("efetch", db, ident) for ident in wanted}
        fresh, stale = await self._lookup("efetch", keys)
        found: dict[str, R] = dict(fresh)
        missing = [i for i in wanted if i not in found]

        async def fetch(batch: Sequence[str]) -> list[tuple[str, R]]:
            params: Params = [("db", db), ("id", ",".join(uid(i) for i in batch)), ("retmode", "xml")]
            post = len(batch) > self.settings.post_min_ids
            items = await self._call("efetch", params, parser, api_key=api_key, post=post)
            return [(key_of(item), item) for item in items]

        await self._fetch_missing(
            "efetch",
            missing,
            fetch,
            lambda ident: keys.get(ident) or self._key("efetch", db, ident),
            stale,
            found,
        )
        return [found[i] for i in wanted if i in found]

    async def esummary(
        self, ids: Iterable[str], *, db: str = "pubmed", api_key: str | None = None
    ) -> list[DocSummary]:
        """Document summaries (JSON); an unknown id comes back with ``error`` set, as NCBI does."""
        wanted = _unique(ids)
        if not wanted:
            return []

        async def fetch(batch: Sequence[str]) -> list[DocSummary]:
            params: Params = [("db", db), ("id", ",".join(batch)), ("retmode", "json")]
            return await self._call(
                "esummary",
                params,
                parse_esummary,
                api_key=api_key,
                post=len(batch) > self.settings.post_min_ids,
            )

        out: list[DocSummary] = []
        for part in await self._gather(fetch(b) for b in _chunks(wanted, self.settings.efetch_batch_size)):
            out.extend(part)
        return out

    async def elink_pubmed_pmc(
        self, pmids: Iterable[str], *, api_key: str | None = None
    ) -> dict[str, str | None]:
        """PMID -> ``PMC<digits>`` (or None) via ELink ``linkname=pubmed_pmc``.

        One-to-one mode (repeated ``id=``) keeps the PMID -> PMCID correspondence that a comma list loses.
        """
        wanted = _unique(pmids)
        keys = {pmid: self._key("elink", "pubmed_pmc", pmid) for pmid in wanted}
        fresh, stale = await self._lookup("elink", keys)
        out: dict[str, str | None] = dict(fresh)  # negative answers (no PMC copy) are cached too
        missing = [p for p in wanted if p not in out]

        async def fetch(batch: Sequence[str]) -> list[tuple[str, str | None]]:
            params: Params = [
                ("dbfrom", "pubmed"),
                ("db", "pmc"),
                ("linkname", "pubmed_pmc"),
                ("retmode", "xml"),
            ]
            params += [("id", p) for p in batch]
            links = await self._call(
                "elink",
                params,
                parse_elink_pubmed_pmc,
                api_key=api_key,
                post=len(batch) > self.settings.post_min_ids,
            )
            return list(links.items())

        await self._fetch_missing(
            "elink", missing, fetch, lambda p: keys.get(p) or self._key("elink", "pubmed_pmc", p), stale, out
        )
        return {p: out.get(p) for p in wanted}  # unserved ids read as "no PMC copy"

    async def einfo(self, db: str | None = None, *, api_key: str | None = None) -> EInfoResult:
        params: Params = [("retmode", "xml")]
        if db:
            params.append(("db", db))
        return await self._call("einfo", params, parse_einfo, api_key=api_key, post=False)

    # ------------------------------------------------------------------ internals

    async def _gather(self, coros: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
        # The shared limiter spaces the batches; the task group overlaps their network time and cancels
        # the siblings as soon as one batch fails, so a failed call never leaves requests running.
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(c) for c in coros]
        except BaseExceptionGroup as grouped:
            raise _first_leaf(grouped) from None
        return [t.result() for t in tasks]

    async def _fetch_missing(
        self,
        endpoint: str,
        missing: list[str],
        fetch: Callable[[Sequence[str]], Coroutine[Any, Any, list[tuple[str, T]]]],
        cache_key: Callable[[str], str],
        stale: Mapping[str, CacheEntry],
        found: dict[str, T],
    ) -> None:
        """Fetch ``missing`` in batches into ``found`` and the cache; ids of a failed batch are served stale
        (or the batch's error raised, see :meth:`_serve_failed`)."""
        batches = list(_chunks(missing, self.settings.efetch_batch_size))
        fetched: dict[str, Any] = {}
        failed: list[str] = []
        error: EutilsError | None = None
        for batch, outcome in zip(
            batches, await self._gather_tolerant([fetch(b) for b in batches]), strict=True
        ):
            if isinstance(outcome, EutilsError):
                failed.extend(batch)
                error = error or outcome
                continue
            for ident, value in outcome:
                found[ident] = value
                fetched[cache_key(ident)] = value
        await self._put(fetched)
        if error is not None:
            self._serve_failed(endpoint, failed, stale, found, error)

    async def _gather_tolerant(self, coros: Sequence[Coroutine[Any, Any, T]]) -> list[T | EutilsError]:
        """Like :meth:`_gather`, but with a cache an availability failure of one batch is returned, not
        raised, so the batches that worked still count and the failed ids can be served stale."""
        if self.store is None:
            return list(await self._gather(coros))

        async def tolerant(coro: Coroutine[Any, Any, T]) -> T | EutilsError:
            try:
                return await coro
            except EutilsError as exc:
                if is_unavailable(exc):
                    return exc
                raise

        return await self._gather(tolerant(c) for c in coros)

    def _key(self, *parts: str) -> str:
        return ":".join((self._key_prefix, *parts))

    async def _lookup(
        self, endpoint: str, keys: Mapping[str, str]
    ) -> tuple[dict[str, Any], dict[str, CacheEntry]]:
        """``ids -> key`` looked up at once: (fresh values by id, expired-but-kept entries by id)."""
        if self.store is None or not keys:
            return {}, {}
        entries = await self.store.get_many(list(dict.fromkeys(keys.values())))
        fresh: dict[str, Any] = {}
        stale: dict[str, CacheEntry] = {}
        for ident, key in keys.items():
            entry = entries.get(key)
            if entry is not None and entry.fresh:
                fresh[ident] = entry.value
            elif entry is not None:
                stale[ident] = entry
        hits = len(fresh)
        self.stats.cache_hits += hits
        self.stats.cache_misses += len(keys) - hits
        if hits:
            EUTILS_CACHE.labels(endpoint, "hit").inc(hits)
        if len(keys) - hits:
            EUTILS_CACHE.labels(endpoint, "miss").inc(len(keys) - hits)
        return fresh, stale

    async def _put(self, items: Mapping[str, Any]) -> None:
        if self.store is not None and items:
            await self.store.set_many(items)

    def _served_stale(self, endpoint: str, entries: Sequence[CacheEntry]) -> None:
        if not entries:
            return
        self.stats.stale_served += len(entries)
        EUTILS_CACHE.labels(endpoint, "stale").inc(len(entries))
        record = _DEGRADATION.get()
        if record is not None and self.store is not None:
            record.stale[endpoint] += len(entries)
            oldest = max(e.age_s(self.store.clock()) for e in entries)
            record.max_stale_age_s = max(record.max_stale_age_s, oldest)

    def _serve_failed(
        self,
        endpoint: str,
        failed: Sequence[str],
        stale: Mapping[str, CacheEntry],
        found: dict[str, Any],
        error: EutilsError,
    ) -> None:
        """Serve failed batches' ids from stale entries; raise ``error`` unless the rest may be left out."""
        served = [i for i in failed if i in stale]
        unserved = len(failed) - len(served)
        record = _DEGRADATION.get()
        partial_ok = record is not None and record.allow_partial and bool(served or found)
        if unserved and not partial_ok:
            raise error
        for ident in served:
            found[ident] = stale[ident].value
        self._served_stale(endpoint, [stale[i] for i in served])
        if record is not None:
            record.unserved += unserved

    def _identity(self, api_key: str | None) -> tuple[Params, str | None]:
        key = api_key or (self.settings.api_key.get_secret_value() if self.settings.api_key else None)
        params: Params = [("tool", self.settings.tool)]
        if self.settings.email:
            params.append(("email", self.settings.email))
        if key:
            params.append(("api_key", key))
        return params, key

    def _pace(self, api_key: str | None, configured: float | None) -> tuple[float, int]:
        """The limiter's ``rate`` and ``burst`` for ``api_key`` at ``configured`` req/s (None: NCBI's)."""
        safety = self.settings.rate_safety
        rate = effective_rate(api_key, configured, safety)
        if not self.settings.limiter_burst:
            return rate, 1
        burst = burst_for(api_key, configured)
        return window_rate(burst, rate, safety), burst  # a window of at least 1 / safety s, even at 2.5/s

    def _backoff(self, attempt: int) -> float:
        cap = min(self.settings.backoff_max_s, self.settings.backoff_base_s * 2.0 ** (attempt - 1))
        # "Equal jitter": keeps a floor so retries never stampede, while desynchronising replicas.
        return cap / 2 + self._rng.uniform(0, cap / 2)

    async def _call(
        self, endpoint: str, params: Params, parser: Callable[[bytes], T], *, api_key: str | None, post: bool
    ) -> T:
        try:
            return await self._call_with_retries(endpoint, params, parser, api_key=api_key, post=post)
        except EutilsError as exc:
            if is_unavailable(exc):
                self.stats.failures += 1
                record = _DEGRADATION.get()
                if record is not None:
                    record.failures.append(f"{type(exc).__name__}: {exc}"[:300])
            raise

    async def _call_with_retries(
        self, endpoint: str, params: Params, parser: Callable[[bytes], T], *, api_key: str | None, post: bool
    ) -> T:
        """Send one E-utility call and parse it, with retries.

        Parsing happens inside the retry loop: a truncated body or a rate-limit answer hidden behind a 2xx
        is a transient failure like a 5xx, while an ``<ERROR>`` payload (BadRequest) is final.
        """
        identity, key = self._identity(api_key)
        all_params = params + identity
        url = f"{self.base_url}{endpoint}.fcgi"
        rate, burst = self._pace(key, self.settings.requests_per_second)
        ceiling_rate, ceiling_burst = self._ceiling
        budget, spent = self.settings.retry_budget_s, "retry budget"
        question = _DEADLINE.get()
        if question is not None and question.remaining() < budget:
            budget, spent = question.remaining(), "question deadline"
        deadline = self._clock() + budget
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise TransportError(f"{endpoint}: {spent} exhausted", endpoint=endpoint)
            try:
                # A Retry-After pauses every call of the key (up to retry_after_max_s, extended by further
                # 429s): the wait for the limiter counts against this call's budget like everything else.
                # A window limiter cancelled while waiting has not taken its slot.
                async with asyncio.timeout(remaining):
                    await self.limiter.acquire(key, rate, burst, max_wait_s=remaining)
                    # The key's slot first, then the deployment's: a wait here wastes a slot of one key
                    # at most, never one of the ceiling that every caller shares.
                    await self.limiter.acquire(
                        DEPLOYMENT, ceiling_rate, ceiling_burst, max_wait_s=max(0.0, deadline - self._clock())
                    )
            except TimeoutError:
                raise TransportError(
                    f"{endpoint}: {spent} spent waiting for the rate limiter", endpoint=endpoint
                ) from None
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise TransportError(
                    f"{endpoint}: {spent} spent waiting for the rate limiter", endpoint=endpoint
                )
            record = _DEGRADATION.get()
            if record is not None:
                record.calls[endpoint] += 1
            timeout = httpx.Timeout(
                min(self.settings.timeout_s, remaining),
                connect=min(self.settings.connect_timeout_s, remaining),
            )
            started = time.perf_counter()
            error: EutilsError
            reason: str
            retry_after: float | None = None
            try:
                # httpx's timeouts are per phase (and absent on the in-process ASGI transport); this caps
                # the whole exchange, so a stalled or slowly dripping server cannot hold a call forever.
                async with asyncio.timeout(min(self.settings.timeout_s, remaining)):
                    if post:
                        response = await self._http.post(url, data=_form(all_params), timeout=timeout)
                    else:
                        response = await self._http.get(
                            url, params=httpx.QueryParams(tuple(all_params)), timeout=timeout
                        )
                    body = response.content
            except TimeoutError:
                error, reason = (
                    TransportError(f"{endpoint}: no answer within the timeout", endpoint=endpoint),
                    "timeout",
                )
            except httpx.TimeoutException as exc:
                error, reason = (
                    TransportError(f"{endpoint}: timed out ({exc.__class__.__name__})", endpoint=endpoint),
                    "timeout",
                )
            except httpx.HTTPError as exc:
                error, reason = (
                    TransportError(f"{endpoint}: {exc.__class__.__name__}: {exc}", endpoint=endpoint),
                    "transport",
                )
            else:
                EUTILS_LATENCY.labels(endpoint).observe(time.perf_counter() - started)
                self.stats.requests[endpoint] += 1
                status = response.status_code
                if status in (429, 503):
                    retry_after = _retry_after_s(response.headers.get("retry-after"))
                if status == 429 or _is_rate_limit_body(body):
                    error, reason = (
                        RateLimited(f"{endpoint}: API rate limit exceeded", endpoint=endpoint, status=status),
                        "rate_limited",
                    )
                elif status >= 500:
                    error, reason = (
                        ServerError(f"{endpoint}: HTTP {status}", endpoint=endpoint, status=status),
                        "server_error",
                    )
                elif status >= 400:
                    EUTILS_REQUESTS.labels(endpoint, "bad_request").inc()
                    raise BadRequest(
                        f"{endpoint}: HTTP {status}: {_snippet(body)}", endpoint=endpoint, status=status
                    )
                elif not body.strip():
                    error, reason = (
                        MalformedResponse(f"{endpoint}: empty body", endpoint=endpoint, status=status),
                        "malformed",
                    )
                elif _looks_like_html(body, response.headers.get("content-type", "")):
                    # We always send retmode, so HTML here is a proxy/error page: transient, worth a retry.
                    error, reason = (
                        MalformedResponse(
                            f"{endpoint}: HTML instead of XML/JSON", endpoint=endpoint, status=status
                        ),
                        "malformed",
                    )
                else:
                    try:
                        parsed = parser(body)
                    except BadRequest as exc:
                        exc.endpoint = exc.endpoint or endpoint
                        EUTILS_REQUESTS.labels(endpoint, "bad_request").inc()
                        raise
                    except (MalformedResponse, RateLimited) as exc:
                        exc.endpoint = exc.endpoint or endpoint
                        error = exc
                        reason = "rate_limited" if isinstance(exc, RateLimited) else "malformed"
                    except Exception as exc:  # a parser bug must still surface as our typed error
                        error = MalformedResponse(
                            f"{endpoint}: unparseable response ({exc})", endpoint=endpoint
                        )
                        reason = "malformed"
                    else:
                        EUTILS_REQUESTS.labels(endpoint, "ok").inc()
                        return parsed
            EUTILS_REQUESTS.labels(endpoint, reason).inc()
            pause: float | None = None
            if retry_after is not None:
                # The server's own word on when to come back, rather than our guess: it concerns the key,
                # not this call, so the limiter holds every call of the key until then (capped at
                # retry_after_max_s), even when this call gives up; a retry then waits its turn there.
                pause = min(retry_after, self.settings.retry_after_max_s)
                await self.limiter.pause(key, rate, burst, pause)
            if attempt >= self.settings.max_attempts:
                raise error
            delay = self._backoff(attempt) if pause is None else pause
            if self._clock() + delay >= deadline:
                raise error
            EUTILS_RETRIES.labels(endpoint, reason).inc()
            self.stats.retries[reason] += 1
            if pause is None:
                await self._sleep(delay)  # with a pause the limiter does the waiting, for every call


def _retry_after_s(value: str | None) -> float | None:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _form(params: Params) -> dict[str, list[str]]:
    # httpx encodes list values as repeated fields: needed for ELink's one-to-one id= mode.
    form: dict[str, list[str]] = {}
    for name, value in params:
        form.setdefault(name, []).append(value)
    return form


def _looks_like_html(body: bytes, content_type: str) -> bool:
    head = body[:256].lstrip().lower()
    return head.startswith((b"<html", b"<!doctype html")) or (
        "text/html" in content_type.lower() and not head.startswith((b"<?xml", b"{"))
    )


def _snippet(body: bytes, limit: int = 200) -> str:
    return body[:limit].decode("utf-8", "replace").replace("\n", " ").strip()

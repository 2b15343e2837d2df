"""Cache stores (memory, SQLite, Redis), stale-if-error in the client, and the Redis-shared rate limiter.

The Redis tests run a real ``redis-server`` on a free loopback port in a temporary folder; CI installs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as redis_sync
import uvicorn
import yaml
from pydantic import BaseModel
from starlette.applications import Starlette

from app.settings import Settings
from retrieval import EutilsSettings, LocalServerSettings, ServerError, create_eutils_app
from retrieval.eutils import (
    CacheSettings,
    CacheStore,
    CacheStoreError,
    EutilsClient,
    LimiterUnavailable,
    MemoryStore,
    RedisLimiter,
    RedisStore,
    SqliteStore,
    decode_value,
    encode_value,
    open_store,
    track_degradation,
)
from retrieval.ncbi import (
    PubmedRecord,
    parse_einfo,
    parse_esearch,
    parse_esummary,
    parse_pmc_articles,
    parse_pubmed_articles,
)
from tests._paths import BIOPYTHON_SAMPLES
from tests._procs import REPO, free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
needs_redis = pytest.mark.skipif(
    not Path(REDIS_SERVER).exists(),
    reason="redis-server binary not installed (CI installs it; locally: apt-get install redis-server)",
)
TTL, MAX_STALE = 100.0, 1000.0


# ------------------------------------------------------------------------------------------ fixtures


# redis_server / redis_url: tests/conftest.py (a real redis-server, skipped only when it is not installed).


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_store(kind: str, clock: Clock, tmp_path: Path, redis_url: str | None = None) -> CacheStore:
    if kind == "memory":
        return MemoryStore(ttl_s=TTL, max_stale_s=MAX_STALE, max_entries=100, clock=clock)
    if kind == "sqlite":
        return SqliteStore(
            tmp_path / "cache.sqlite3", ttl_s=TTL, max_stale_s=MAX_STALE, max_entries=100, clock=clock
        )
    assert redis_url is not None
    return RedisStore(redis_url, ttl_s=TTL, max_stale_s=MAX_STALE, clock=clock)


BACKENDS = [
    "memory",
    "sqlite",
    pytest.param("redis", marks=needs_redis),
]


@pytest.fixture
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[CacheStore, Clock]]:
    kind = request.param
    url = request.getfixturevalue("redis_url") if kind == "redis" else None
    clock = Clock()
    s = make_store(kind, clock, tmp_path, url)
    yield s, clock
    await s.aclose()


def sample_values() -> dict[str, Any]:
    """One real parsed value of every type the client caches (and the rest of the models for good measure)."""
    pmc = parse_pmc_articles((BIOPYTHON_SAMPLES / "efetch_pmc.xml").read_bytes())[0]
    assert pmc.sections and pmc.license is not None  # a rich article: sections, paths, licence
    record = parse_pubmed_articles((BIOPYTHON_SAMPLES / "pubmed4.xml").read_bytes())[0]
    assert record.mesh and any(h.qualifiers for h in record.mesh) and record.abstract
    search = parse_esearch((BIOPYTHON_SAMPLES / "esearch3.xml").read_bytes())
    assert search.translations and search.ids
    return {
        "esearch": search,
        "pubmed": record,
        "pmc": pmc,
        "elink_hit": "PMC123",
        "elink_none": None,
        "esummary": parse_esummary((BIOPYTHON_SAMPLES / "esummary1.xml").read_bytes())[0],
        "einfo": parse_einfo((BIOPYTHON_SAMPLES / "einfo2.xml").read_bytes()),
    }


# ------------------------------------------------------------------------------------------ serialisation


def test_every_cached_type_round_trips_through_tagged_json() -> None:
    for name, value in sample_values().items():
        blob = encode_value(value, 12.5)
        back, stored_at = decode_value(blob)
        assert back == value and type(back) is type(value), name
        assert stored_at == 12.5
    # Large values are compressed, small ones stay readable JSON.
    values = sample_values()
    assert encode_value(values["pmc"], 0)[:1] == b"z"
    assert encode_value(values["elink_hit"], 0)[:1] == b"j"


def test_decoding_never_instantiates_unlisted_types() -> None:
    # A poisoned shared store can only name our frozen dataclasses, never arbitrary callables.
    evil = b"j" + json.dumps({"t": 0, "v": {"@t": "Popen", "args": ["sh"]}}).encode()
    with pytest.raises(ValueError, match="unknown cached type"):
        decode_value(evil)
    with pytest.raises(ValueError):
        decode_value(b"\x80\x04pickle")
    drifted = b"j" + json.dumps({"t": 0, "v": {"@t": "PubDate", "no_such_field": 1}}).encode()
    with pytest.raises(ValueError, match="schema"):
        decode_value(drifted)
    with pytest.raises(TypeError):
        encode_value({"a": 1}, 0)


# ------------------------------------------------------------------------------------------ stores


@pytest.mark.parametrize("store", BACKENDS, indirect=True)
async def test_backends_round_trip_every_value_type(store: tuple[CacheStore, Clock]) -> None:
    s, _clock = store
    values = sample_values()
    await s.set_many(values)
    got = await s.get_many([*values, "absent"])
    assert set(got) == set(values)
    for name, value in values.items():
        assert got[name].value == value and got[name].fresh, name
    assert await s.get("absent") is None


@pytest.mark.parametrize("store", BACKENDS, indirect=True)
async def test_ttl_then_max_stale_then_gone(store: tuple[CacheStore, Clock]) -> None:
    s, clock = store
    await s.set("k", "PMC1")
    clock.now += TTL - 1
    entry = await s.get("k")
    assert entry is not None and entry.fresh and entry.value == "PMC1"
    clock.now += 2  # TTL + 1: expired, still kept for stale-if-error
    entry = await s.get("k")
    assert entry is not None and not entry.fresh and entry.age_s(clock.now) == pytest.approx(TTL + 1)
    clock.now += MAX_STALE  # past ttl + max_stale: gone
    assert await s.get("k") is None
    await s.set("k", "PMC2")  # a rewrite is fresh again
    entry = await s.get("k")
    assert entry is not None and entry.fresh and entry.value == "PMC2"


@needs_redis
async def test_redis_entries_expire_server_side_after_ttl_plus_max_stale(redis_url: str) -> None:
    s = RedisStore(redis_url, ttl_s=TTL, max_stale_s=MAX_STALE)
    await s.set("k", "v")
    pttl = redis_sync.Redis.from_url(redis_url).pttl("k")
    assert (TTL + MAX_STALE) * 1000 - 5000 < pttl <= (TTL + MAX_STALE) * 1000
    # Garbage written by someone else is a miss, counted, not a crash.
    redis_sync.Redis.from_url(redis_url).set("junk", b"\x80\x04not-json")
    got = await s.get_many(["junk", "k"])
    assert list(got) == ["k"] and got["k"].value == "v" and s.stats.decode_errors == 1
    await s.aclose()


async def test_unreachable_redis_is_a_counted_miss_not_an_error() -> None:
    s = RedisStore(f"redis://127.0.0.1:{free_port()}/0", ttl_s=TTL, max_stale_s=MAX_STALE, timeout_s=0.5)
    assert await s.get_many(["a", "b"]) == {}
    await s.set("a", "v")  # skipped while marked down
    assert s.stats.errors == 1
    await s.aclose()


def test_sqlite_trim_keeps_the_newest_entries(tmp_path: Path) -> None:
    clock = Clock()
    s = SqliteStore(tmp_path / "c.sqlite3", ttl_s=TTL, max_stale_s=MAX_STALE, max_entries=3, clock=clock)
    for i in range(5):
        clock.now += 1
        asyncio.run(s.set(f"k{i}", i))
    s.trim()
    assert len(s) == 3
    got = asyncio.run(s.get_many([f"k{i}" for i in range(5)]))
    assert sorted(got) == ["k2", "k3", "k4"]
    clock.now += TTL + MAX_STALE + 10
    s.trim()
    assert len(s) == 0
    asyncio.run(s.aclose())


def test_open_store_follows_settings(tmp_path: Path) -> None:
    assert isinstance(open_store(CacheSettings()), MemoryStore)
    assert open_store(CacheSettings(max_entries=0)) is None and open_store(CacheSettings(ttl_s=0)) is None
    path = tmp_path / "sub" / "c.sqlite3"
    s = open_store(CacheSettings(backend="sqlite", url=f"sqlite:///{path}"))
    assert isinstance(s, SqliteStore) and s.path == path and path.exists()
    assert isinstance(open_store(CacheSettings(backend="redis", url="redis://127.0.0.1:1/0")), RedisStore)
    with pytest.raises(CacheStoreError):
        open_store(CacheSettings(backend="redis", url="http://not-redis"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheStoreError):
        open_store(CacheSettings(backend="sqlite", url=str(tmp_path / "file" / "c.sqlite3")))


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMETA_EUTILS__CACHE__BACKEND", "redis")
    monkeypatch.setenv("COMETA_EUTILS__CACHE__URL", "redis://cache:6379/1")
    monkeypatch.setenv("COMETA_EUTILS__CACHE__TTL_S", "60")
    monkeypatch.setenv("COMETA_EUTILS__CACHE__MAX_STALE_S", "600")
    monkeypatch.setenv("COMETA_EUTILS__LIMITER", "redis")
    eutils = Settings().eutils
    assert eutils.cache.backend == "redis" and eutils.cache.ttl_s == 60 and eutils.cache.max_stale_s == 600
    assert eutils.limiter == "redis" and eutils.redis_limiter_url() == "redis://cache:6379/1"


# ------------------------------------------------------------------------------------------ the client

ESEARCH_JSON = json.dumps(
    {"esearchresult": {"count": "1", "retmax": "1", "retstart": "0", "idlist": ["27797938"]}}
).encode()
PUBMED4 = (BIOPYTHON_SAMPLES / "pubmed4.xml").read_bytes()


class Switch:
    """A scripted NCBI that can go down: 500s once ``down``; records what it was asked."""

    def __init__(self) -> None:
        self.down = False
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.down:
            return httpx.Response(500, content=b"<html>maintenance</html>")
        if request.url.path.endswith("esearch.fcgi"):
            return httpx.Response(200, content=ESEARCH_JSON)
        return httpx.Response(200, content=PUBMED4)


def switch_client(switch: Switch, store: CacheStore | None, **overrides: Any) -> EutilsClient:
    base: dict[str, Any] = {"requests_per_second": 1000.0, "max_attempts": 2, "backoff_base_s": 0.0}
    base.update(overrides)
    return EutilsClient(EutilsSettings(**base), transport=httpx.MockTransport(switch), store=store)


@pytest.mark.parametrize("store", BACKENDS, indirect=True)
async def test_stale_if_error_from_every_backend(store: tuple[CacheStore, Clock]) -> None:
    s, clock = store
    ncbi = Switch()
    client = switch_client(ncbi, s)
    first = await client.esearch("telomere pancreatic", api_key="SECRET-KEY-123")
    records = await client.efetch_pubmed(["27797938"])
    assert first.ids == ("27797938",) and [r.pmid for r in records] == ["27797938"]
    sent = len(ncbi.requests)
    # Fresh: answered from the store, no request.
    assert await client.esearch("telomere pancreatic") == first and len(ncbi.requests) == sent
    clock.now += TTL + 1
    ncbi.down = True
    with track_degradation() as record:
        assert await client.esearch("telomere pancreatic") == first
        assert await client.efetch_pubmed(["27797938"]) == records
    assert record.stale == {"esearch": 1, "efetch": 1} and record.unavailable and record.degraded
    assert record.max_stale_age_s == pytest.approx(TTL + 1)
    assert client.stats.stale_served == 2 and client.stats.failures == 2
    assert len(ncbi.requests) == sent + 4  # two attempts per call went out first
    # Past max_stale the failure surfaces as before.
    clock.now += MAX_STALE
    with pytest.raises(ServerError):
        await client.esearch("telomere pancreatic")
    await client.aclose()


async def test_sqlite_cache_survives_a_restart_and_keeps_secrets_out_of_keys(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    ncbi = Switch()
    settings = CacheSettings(backend="sqlite", url=str(path))
    first = switch_client(ncbi, None, cache=settings)
    assert isinstance(first.store, SqliteStore)
    await first.esearch("whipple procedure outcome", api_key="SECRET-KEY-123")
    await first.efetch_pubmed(["27797938"])
    await first.aclose()
    sent = len(ncbi.requests)
    second = switch_client(ncbi, None, cache=settings)  # a new process, same file
    assert (await second.esearch("whipple procedure outcome")).ids == ("27797938",)
    assert [r.pmid for r in await second.efetch_pubmed(["27797938"])] == ["27797938"]
    assert len(ncbi.requests) == sent and second.stats.cache_hits == 2
    await second.aclose()
    with sqlite3.connect(path) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM eutils_cache")]
    assert len(keys) == 2
    assert not any("SECRET" in k or "whipple" in k for k in keys)  # query text hashed, API key absent
    assert any(k.endswith(":efetch:pubmed:27797938") for k in keys)


@needs_redis
async def test_redis_cache_is_shared_between_clients(redis_url: str) -> None:
    ncbi = Switch()
    settings = CacheSettings(backend="redis", url=redis_url)
    a, b = switch_client(ncbi, None, cache=settings), switch_client(ncbi, None, cache=settings)
    await a.efetch_pubmed(["27797938"])
    sent = len(ncbi.requests)
    got = await b.efetch_pubmed(["27797938"])
    assert isinstance(got[0], PubmedRecord) and len(ncbi.requests) == sent
    # Another E-utilities URL is another namespace: no cross-talk between deployments.
    other = switch_client(ncbi, None, cache=settings, base_url="http://other.example/eutils/")
    await other.efetch_pubmed(["27797938"])
    assert len(ncbi.requests) == sent + 1
    for c in (a, b, other):
        await c.aclose()


# ------------------------------------------------------------------------------------------ the limiter


@needs_redis
async def test_redis_limiter_reserves_consecutive_slots_per_key(redis_url: str) -> None:
    limiter = RedisLimiter(redis_url, on_error="error")
    waits = [await limiter.reserve("KEY-A", 1.0) for _ in range(3)]
    # One slot per second: the second caller waits ~1 s, the third ~2 s (minus the time between calls).
    assert waits[0] == pytest.approx(0, abs=0.05)
    assert 0.5 < waits[1] <= 1.0 and waits[1] + 0.5 < waits[2] <= 2.0
    # Another key has its own chain; the key itself is never stored, only its hash.
    assert await limiter.reserve("KEY-B", 1.0) == pytest.approx(0, abs=0.05)
    keys = [k.decode() for k in redis_sync.Redis.from_url(redis_url).keys("*")]
    assert len(keys) == 2 and not any("KEY-" in k for k in keys)
    await limiter.aclose()


@needs_redis
async def test_a_wait_over_the_callers_limit_reserves_no_slot(redis_url: str) -> None:
    a = RedisLimiter(redis_url, on_error="error")
    await a.pause("KEY-W", 1.0, 1, 10.0)  # a Retry-After: the next slot is 10 s away
    with pytest.raises(TimeoutError):
        await a.acquire("KEY-W", 1.0, 1, max_wait_s=0.5)  # at once, not after 10 s
    # Nothing was reserved: the next caller's slot is still the pause's end, not one interval later.
    assert 9.0 < await a.reserve("KEY-W", 1.0) <= 10.0
    await a.aclose()


@needs_redis
async def test_a_retry_after_pause_moves_the_keys_next_slot_for_every_replica(redis_url: str) -> None:
    a = RedisLimiter(redis_url, on_error="error")
    b = RedisLimiter(redis_url, on_error="error")  # another replica, same Redis
    await a.pause("KEY-P", 1.0, 1, 2.0)
    wait = await b.reserve("KEY-P", 1.0)
    assert 1.5 < wait <= 2.0  # the other replica's next slot is after the pause
    await a.pause("KEY-P", 1.0, 1, 0.1)  # a shorter pause never pulls the slot chain earlier
    assert 2.5 < await b.reserve("KEY-P", 1.0) <= 3.0
    await a.aclose()
    await b.aclose()


async def test_redis_limiter_down_falls_back_or_raises_as_configured() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    fallback = RedisLimiter(url, timeout_s=0.5, on_error="local", fallback_replicas=3)
    await fallback.acquire(None, 3.0)
    await fallback.acquire(None, 3.0)  # Redis marked down: straight to the fallback, no new timeout
    assert fallback.fallbacks == 2
    strict = RedisLimiter(url, timeout_s=0.5, on_error="error")
    with pytest.raises(LimiterUnavailable, match="rate limiter unavailable"):
        await strict.acquire(None, 3.0)
    # A typed E-utilities availability failure: the API's 503, or a stale answer from the cache.
    ncbi = Switch()
    clock = Clock()
    cache = MemoryStore(ttl_s=TTL, max_stale_s=MAX_STALE, max_entries=10, clock=clock)
    client = switch_client(ncbi, cache)
    await client.esearch("x")
    client.limiter = strict
    clock.now += TTL + 1
    assert (await client.esearch("x")).ids == ("27797938",) and client.stats.stale_served == 1
    await client.aclose()


# --------------------------------------------------------------------------------- several replicas

WORKER = """
import asyncio, json, sys
from retrieval import CacheSettings, EutilsClient, EutilsSettings

base, redis_url, tag, n, rate = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])

async def main() -> None:
    settings = EutilsSettings(
        base_url=base, limiter="redis", limiter_url=redis_url, limiter_on_error="error",
        requests_per_second=rate, rate_safety=0.5, cache=CacheSettings(max_entries=0), max_attempts=1,
        timeout_s=20,
        retry_budget_s=60,
    )
    async with EutilsClient(settings) as client:
        await client.limiter.reserve("warm-up", 1000.0)  # connect before the start signal
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        results = await asyncio.gather(
            *(client.esearch(f"neoplasms {tag} {i}", retmax=1) for i in range(n)), return_exceptions=True
        )
        errors = [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
        print(json.dumps({"errors": errors, "requests": client.stats.total_requests}), flush=True)

asyncio.run(main())
"""


@contextmanager
def eutils_server_thread(settings: LocalServerSettings) -> Iterator[tuple[str, Starlette]]:
    """The local E-utilities server on a loopback port, in a thread of this process (its request_log
    is then readable here)."""
    app = create_eutils_app(settings)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("local E-utilities server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/entrez/eutils/", app
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def max_in_window(times: list[float], window: float = 1.0) -> int:
    """Most requests within any ``window`` seconds (half-open, as NCBI's per-second count)."""
    times = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(times):
        while times[start] <= t - window:
            start += 1
        best = max(best, end - start + 1)
    return best


@pytest.mark.slow  # ~10-25 s: three interpreters start, then 15 requests at 2.5 req/s
@needs_redis
def test_three_replicas_sharing_the_redis_limiter_stay_under_the_rate(redis_url: str) -> None:
    # Slots 0.4 s apart (5 req/s x safety 0.5): six requests span 2 s, so only a scheduling stall of a
    # whole second on this shared 2-core machine could put six in one second. Three replicas with local
    # limiters would send 7.5 req/s and fail this test (checked by hand: 429s and 8+ requests a second).
    rate, per_process, replicas = 5, 5, 3
    # The server enforces the same limit (HTTP 429 above 5 req/s), as NCBI would.
    with eutils_server_thread(LocalServerSettings(rate_limit=True, rate_no_key=rate)) as (base, app):
        # Warm the server's lazily built search index first: a request stuck behind that build would be
        # logged late, bunched with the next ones, and the log must show when the replicas sent.
        httpx.get(base + "esearch.fcgi", params={"term": "neoplasms", "retmode": "json"}, timeout=60)
        time.sleep(1.1)  # let the warm-up leave the server's 1 s rate window
        app.state.request_log.clear()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WORKER, base, redis_url, f"r{n}", str(per_process), str(rate)],
                cwd=REPO,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for n in range(replicas)
        ]
        try:
            for p in procs:  # a start barrier: every replica connected before any sends
                assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            for p in procs:
                assert p.stdin is not None
                p.stdin.write("go\n")
                p.stdin.flush()
            reports = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        times = [r.time for r in app.state.request_log if r.endpoint == "esearch"]
    spread = sorted(round(t - min(times), 3) for t in times)
    assert [r["errors"] for r in reports] == [[]] * replicas, spread  # no 429 from the server
    assert sum(r["requests"] for r in reports) == len(times) == per_process * replicas
    assert max_in_window(times) <= rate, spread


def test_max_in_window_counts_half_open_seconds() -> None:
    assert max_in_window([0.0, 0.5, 0.99, 1.0, 1.5]) == 3
    assert max_in_window([0.0, 0.25, 0.5, 0.75, 1.0]) == 4
    assert max_in_window([]) == 0


# --------------------------------------------------------------------------------- deployment wiring


def _field_exists(model: type[BaseModel], path: list[str]) -> bool:
    name, rest = path[0], path[1:]
    info = model.model_fields.get(name)
    if info is None:
        return False
    if not rest:
        return True
    sub = info.annotation
    return isinstance(sub, type) and issubclass(sub, BaseModel) and _field_exists(sub, rest)


def test_compose_environment_names_real_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # Settings ignore unknown variables, so a typo in deploy/compose.yaml would be silently dropped.
    compose = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())
    env = compose["x-cometa-env"]
    assert compose["services"]["api"]["environment"] == env
    for name in env:
        path = name.removeprefix("COMETA_").lower().split("__")
        assert name.startswith("COMETA_") and _field_exists(Settings, path), name
    for name, value in env.items():
        # Compose interpolation: ${VAR:-default} -> default, ${VAR:?error} -> a stand-in value.
        value = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value))
        value = re.sub(r"\$\{COMETA_API_KEYS:\?[^}]*\}", '["k"]', value)
        monkeypatch.setenv(name, re.sub(r"\$\{[A-Z_]+:\?[^}]*\}", "stand-in", value))
    s = Settings()
    assert s.eutils.cache.backend == "redis" and s.eutils.limiter == "redis"
    assert s.eutils.redis_limiter_url() == s.eutils.cache.url == "redis://redis:6379/0"
    assert s.eutils.limiter_fallback_replicas == 3 and s.eutils.api_key is not None
    assert s.dense.index_backend == "qdrant" and s.dense.qdrant_url == "http://qdrant:6333"
    assert s.llm.base_url == "http://vllm:8000/v1" and len(s.api.api_keys) == 1


async def test_memory_store_is_bounded_by_bytes_as_well_as_entries() -> None:
    clock = Clock()
    big = "x" * 40_000  # a full text weighs a hundred abstracts
    store = MemoryStore(ttl_s=TTL, max_stale_s=MAX_STALE, max_entries=100, max_bytes=100_000, clock=clock)
    await store.set_many({f"k{i}": big for i in range(5)})
    sizes = store.sizes()
    assert sizes["entries"] == 2 and sizes["evictions"] == 3  # 100 entries allowed, 100 kB are not
    assert 80_000 < sizes["bytes"] <= sizes["max_bytes"] == 100_000
    assert set(await store.get_many(["k0", "k3", "k4"])) == {"k3", "k4"}  # least recently stored went first
    await store.set_many({f"s{i}": "y" for i in range(200)})
    assert store.sizes()["entries"] == 100  # the entry bound still holds for small values
    clock.now += TTL + MAX_STALE + 1
    assert await store.get_many(["s199"]) == {}  # past its retention: never served

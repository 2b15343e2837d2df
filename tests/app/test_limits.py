"""The API's request limit: the in-memory sliding window (fake clock) and the Redis-shared one.

The Redis tests use a real ``redis-server`` on loopback (the ``redis_url`` fixture in conftest.py); two
limiter instances, or two apps, sharing it stand for two replicas behind a load balancer.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import cast

import httpx
import pytest
import redis as redis_sync
from fastapi import FastAPI
from prometheus_client import REGISTRY

from app import (
    ApiSettings,
    RateLimiterUnavailable,
    RedisWindowLimiter,
    RequestLimiter,
    SlidingWindowLimiter,
    build_request_limiter,
)
from app.api import create_app
from app.container import build_pipeline
from app.pipeline import Pipeline
from app.settings import Settings
from tests._procs import free_port


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def errors_counted(action: str) -> float:
    return REGISTRY.get_sample_value("cometa_api_rate_limiter_errors_total", {"action": action}) or 0.0


@pytest.fixture
async def limiters() -> AsyncIterator[list[RequestLimiter]]:
    """Limiters made by a test, closed after it (open Redis connections would outlive the loop)."""
    made: list[RequestLimiter] = []
    yield made
    for limiter in made:
        await limiter.aclose()


@pytest.fixture
def dead_redis_url() -> str:
    return f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there: connection refused at once


@pytest.fixture
def silent_redis_url() -> Iterator[str]:
    """A port that accepts connections and never answers: only the timeout gets the caller out."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"


# --------------------------------------------------------------------------------- in-memory window


async def test_sliding_window_frees_slots_as_time_passes() -> None:
    clock = Clock()
    limiter = SlidingWindowLimiter(2, window_s=10, clock=clock)
    assert await limiter.check("a") is None and await limiter.check("a") is None
    assert await limiter.check("a") == pytest.approx(10)
    clock.now = 10.5
    assert await limiter.check("a") is None


async def test_memory_window_math_is_sliding_not_fixed() -> None:
    clock = Clock()
    limiter = SlidingWindowLimiter(2, window_s=10, clock=clock)
    assert await limiter.check("a") is None  # t=0
    clock.now = 4
    assert await limiter.check("a") is None  # t=4
    clock.now = 6
    assert await limiter.check("a") == pytest.approx(4)  # the t=0 request leaves at t=10
    assert await limiter.check("b") is None  # per key
    clock.now = 9.75
    assert await limiter.check("a") == pytest.approx(0.25)  # refusals were not recorded
    clock.now = 10  # an admission exactly one window old no longer counts
    assert await limiter.check("a") is None
    clock.now = 11
    assert await limiter.check("a") == pytest.approx(3)  # now t=4 is the oldest of (4, 10)


async def test_memory_limit_zero_is_off_and_many_clients_stay_bounded() -> None:
    off = SlidingWindowLimiter(0)
    assert all([await off.check("a") is None for _ in range(100)])
    clock = Clock()
    limiter = SlidingWindowLimiter(1, window_s=1, clock=clock)
    for i in range(10_001):
        assert limiter.check_now(f"ip:{i}") is None
    assert len(limiter._hits) == 10_000  # the least recently seen client is forgotten, not all rescanned
    assert limiter.check_now("ip:10000") is not None  # a recent client is still limited


def test_sliding_window_limiter_is_a_request_limiter() -> None:
    assert isinstance(SlidingWindowLimiter(1), RequestLimiter)


# ---------------------------------------------------------------------------------- Redis window


async def test_two_replicas_share_one_window(redis_url: str, limiters: list[RequestLimiter]) -> None:
    a = RedisWindowLimiter(redis_url, 3, window_s=60)
    b = RedisWindowLimiter(redis_url, 3, window_s=60)
    limiters += [a, b]
    assert await a.check("key:k1") is None
    assert await b.check("key:k1") is None
    assert await a.check("key:k1") is None
    retry_b, retry_a = await b.check("key:k1"), await a.check("key:k1")
    # Alone, each replica would still have admitted these. Retry-After: when the first admission expires.
    assert retry_b is not None and 50 < retry_b <= 60
    assert retry_a is not None and 50 < retry_a <= retry_b
    assert await b.check("key:k2") is None  # another client has its own window


async def test_redis_window_slides_and_refusals_are_not_recorded(
    redis_url: str, limiters: list[RequestLimiter]
) -> None:
    limiter = RedisWindowLimiter(redis_url, 2, window_s=60)
    limiters.append(limiter)
    assert await limiter.check("ip:10.0.0.7") is None
    assert await limiter.check("ip:10.0.0.7") is None
    assert await limiter.check("ip:10.0.0.7") is not None
    assert await limiter.check("ip:10.0.0.7") is not None
    r = redis_sync.Redis.from_url(redis_url)
    key = limiter.redis_key("ip:10.0.0.7")
    members = [cast(bytes, m) for m in r.zrange(key, 0, -1)]  # oldest first
    assert len(members) == 2  # the two refusals left no trace
    # Age the first admission by 30 s (scores are Redis-clock microseconds): its slot frees ~30 s sooner.
    r.zincrby(key, -30_000_000, members[0])
    retry = await limiter.check("ip:10.0.0.7")
    assert retry is not None and 20 < retry <= 30
    # Age it past the window: it drops out, so one more request is admitted, and then the window is full.
    r.zincrby(key, -31_000_000, members[0])
    assert await limiter.check("ip:10.0.0.7") is None
    assert await limiter.check("ip:10.0.0.7") is not None
    r.close()


async def test_redis_window_slides_in_real_time(redis_url: str, limiters: list[RequestLimiter]) -> None:
    limiter = RedisWindowLimiter(redis_url, 1, window_s=0.3)
    limiters.append(limiter)
    assert await limiter.check("k") is None
    retry = await limiter.check("k")
    assert retry is not None and 0 < retry <= 0.3
    await asyncio.sleep(retry + 0.05)  # Retry-After is honest: waiting it out is enough
    assert await limiter.check("k") is None


async def test_redis_keeps_only_a_hash_of_the_key_and_expires_it(
    redis_url: str, limiters: list[RequestLimiter]
) -> None:
    limiter = RedisWindowLimiter(redis_url, 5, window_s=60)
    limiters.append(limiter)
    ident = "key:SECRET-API-KEY-0042"
    assert await limiter.check(ident) is None and await limiter.check("ip:192.0.2.55") is None
    r = redis_sync.Redis.from_url(redis_url, decode_responses=True)
    keys = sorted(str(k) for k in r.keys("*"))
    assert len(keys) == 2 and all(k.startswith("cometa:api:ratelimit:") for k in keys)
    stored = " ".join(keys + [str(m) for k in keys for m in r.zrange(k, 0, -1)])
    assert "SECRET" not in stored and "0042" not in stored and "192.0.2" not in stored
    assert 59_000 < r.pttl(limiter.redis_key(ident)) <= 61_000  # gone a second after the window
    r.close()


async def test_redis_down_allows_with_a_warning_and_a_count(
    dead_redis_url: str, limiters: list[RequestLimiter], caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    limiter = RedisWindowLimiter(dead_redis_url, 1, timeout_s=0.5, clock=clock)
    limiters.append(limiter)
    before = errors_counted("allow")
    with caplog.at_level(logging.WARNING, logger="cometa.api.limits"):
        results = [await limiter.check("key:k") for _ in range(3)]
    assert results == [None, None, None]  # fail open: over the limit of 1, still admitted
    assert limiter.errors == 3 and errors_counted("allow") - before == 3
    warnings = [r for r in caplog.records if "rate limiter unavailable" in r.getMessage()]
    assert len(warnings) == 1  # at most one a minute, not one per request


async def test_redis_down_denies_and_retries_redis_only_after_a_pause(
    dead_redis_url: str, limiters: list[RequestLimiter]
) -> None:
    clock = Clock()
    limiter = RedisWindowLimiter(dead_redis_url, 1, timeout_s=0.5, on_error="deny", clock=clock)
    limiters.append(limiter)
    before = errors_counted("deny")
    with pytest.raises(RateLimiterUnavailable, match="ConnectionError"):
        await limiter.check("key:k")
    with pytest.raises(RateLimiterUnavailable, match="marked down"):  # no new connection attempt
        await limiter.check("key:k")
    clock.now += 6
    with pytest.raises(RateLimiterUnavailable, match="ConnectionError"):  # tried again
        await limiter.check("key:k")
    assert errors_counted("deny") - before == 3


async def test_a_redis_that_never_answers_is_cut_off_by_the_timeout(
    silent_redis_url: str, limiters: list[RequestLimiter]
) -> None:
    limiter = RedisWindowLimiter(silent_redis_url, 1, timeout_s=0.2, on_error="deny")
    limiters.append(limiter)
    with pytest.raises(RateLimiterUnavailable, match="Timeout"):
        await limiter.check("key:k")


async def test_settings_pick_the_backend(
    monkeypatch: pytest.MonkeyPatch, limiters: list[RequestLimiter]
) -> None:
    assert isinstance(build_request_limiter(ApiSettings()), SlidingWindowLimiter)
    monkeypatch.setenv("COMETA_API__RATE_LIMIT_BACKEND", "redis")
    monkeypatch.setenv("COMETA_API__RATE_LIMIT_PER_MINUTE", "30")
    monkeypatch.setenv("COMETA_API__RATE_LIMIT_TIMEOUT_S", "0.25")
    monkeypatch.setenv("COMETA_API__RATE_LIMIT_ON_ERROR", "deny")
    monkeypatch.setenv("COMETA_EUTILS__CACHE__BACKEND", "redis")
    monkeypatch.setenv("COMETA_EUTILS__CACHE__URL", "redis://cache:6379/2")
    settings = Settings()
    # Unset rate_limit_url: the Redis the E-utilities limiter uses (one Redis per deployment is enough).
    limiter = build_request_limiter(settings.api, default_url=settings.eutils.redis_limiter_url())
    limiters.append(limiter)
    assert isinstance(limiter, RedisWindowLimiter)
    assert (limiter.redis.url, limiter.redis.timeout_s) == ("redis://cache:6379/2", 0.25)
    assert (limiter.limit, limiter.window_s, limiter.on_error) == (30, 60.0, "deny")
    monkeypatch.setenv("COMETA_API__RATE_LIMIT_URL", "redis://limits:6379/0")
    own = build_request_limiter(Settings().api, default_url="redis://cache:6379/2")
    limiters.append(own)
    assert isinstance(own, RedisWindowLimiter) and own.redis.url == "redis://limits:6379/0"
    monkeypatch.setenv("COMETA_API__RATE_LIMIT_ON_ERROR", "sometimes")
    with pytest.raises(ValueError, match="rate_limit_on_error"):
        Settings()


# --------------------------------------------------------------------------------- through the API

BODY = {
    "question": "Is aspirin safe?",
    "documents": [{"text": "Low-dose aspirin was well tolerated in the trial.", "pmid": "123"}],
    "documents_mode": "replace",
}


@pytest.fixture
async def pipeline() -> AsyncIterator[Pipeline]:
    # Only the limiter matters here: no LLM, no dense model to load; requests answer from BODY's document.
    async with build_pipeline(Settings().offline(), use_llm=False, use_dense=False, use_passages=False) as p:
        yield p


@asynccontextmanager
async def serve(application: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client


def replica(pipeline: Pipeline, **api: object) -> FastAPI:
    return create_app(pipeline.settings, api_settings=ApiSettings.model_validate(api), pipeline=pipeline)


async def test_two_apps_sharing_redis_enforce_one_limit(redis_url: str, pipeline: Pipeline) -> None:
    def make() -> FastAPI:
        return replica(
            pipeline, rate_limit_per_minute=3, rate_limit_backend="redis", rate_limit_url=redis_url
        )

    async with serve(make()) as a, serve(make()) as b:
        statuses = [(await c.post("/ask", json=BODY)).status_code for c in (a, b, a)]
        assert statuses == [200, 200, 200]
        r = await b.post("/ask", json=BODY)  # b has served one request itself: per process it would pass
        assert r.status_code == 429 and r.json()["error"] == "rate limited"
        assert 1 <= int(r.headers["retry-after"]) <= 60
        assert (await a.post("/ask", json=BODY)).status_code == 429
        assert (await a.get("/healthz")).status_code == 200  # ops endpoints are not limited


async def test_api_answers_503_or_admits_when_redis_is_down(dead_redis_url: str, pipeline: Pipeline) -> None:
    shared = {"rate_limit_per_minute": 3, "rate_limit_backend": "redis", "rate_limit_url": dead_redis_url}
    async with serve(replica(pipeline, **shared, rate_limit_on_error="deny")) as deny:
        r = await deny.post("/ask", json=BODY)
        assert r.status_code == 503 and r.json()["error"] == "rate limiter unavailable"
        assert "ConnectionError" in r.json()["reason"]
    async with serve(replica(pipeline, **shared)) as allow:  # the default: fail open
        assert [(await allow.post("/ask", json=BODY)).status_code for _ in range(4)] == [200] * 4

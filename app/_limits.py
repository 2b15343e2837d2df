"""The API's per-client request limit: a sliding window per process (memory) or shared by replicas (Redis).

Both count at most ``limit`` admitted requests in any ``window_s`` seconds per client identity (a hashed
API key, or the client IP without auth); refused requests do not count. ``check`` returns None when the
request is admitted, else the seconds until a slot frees (the 429's ``Retry-After``).

Behind N replicas the in-memory window lets a client through N times; :class:`RedisWindowLimiter` keeps
one sorted set of admission times per hashed identity in Redis and decides atomically in a Lua script on
Redis's own clock, so every replica sees the same window and host clock skew does not matter. If Redis
cannot be reached, ``on_error="allow"`` admits the request (fail open: a warning at most once a minute and
``cometa_api_rate_limiter_errors_total``), ``on_error="deny"`` raises :class:`RateLimiterUnavailable`
(the API's 503). After a failure Redis is skipped for a few seconds rather than paying a timeout per request.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from prometheus_client import Counter

from core import CometaError, KeyedWindows
from retrieval.eutils import LoopBoundRedis

if TYPE_CHECKING:
    from .settings import ApiSettings

__all__ = [
    "RATE_LIMITER_ERRORS",
    "RateLimiterUnavailable",
    "RedisWindowLimiter",
    "RequestLimiter",
    "SlidingWindowLimiter",
    "build_request_limiter",
]

log = logging.getLogger("cometa.api.limits")

RATE_LIMITER_ERRORS = Counter(
    "cometa_api_rate_limiter_errors_total",
    "API rate-limit checks that could not reach the shared (Redis) limiter, by the action taken",
    ["action"],
)

_WARN_EVERY_S = 60.0
_RETRY_AFTER_S = 5.0  # after a Redis failure, skip it this long instead of paying a timeout per request
_MIN_RETRY_S = 0.001

# KEYS[1]: the identity's sorted set; ARGV: window (µs), limit, a unique member suffix.
# Returns -1 when admitted, else the µs until the oldest admission leaves the window.
# Same rule as the in-memory window: entries at or before now - window are gone; refusals are not recorded.
_SLIDING_WINDOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.floor(tonumber(oldest[2]) + window - now)
end
redis.call('ZADD', KEYS[1], now, string.format('%.0f', now) .. ':' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.floor(window / 1000) + 1000)
return -1
"""


class RateLimiterUnavailable(CometaError):
    """The shared (Redis) request limiter cannot be reached and ``rate_limit_on_error`` is ``deny``."""


@runtime_checkable
class RequestLimiter(Protocol):
    """At most ``limit`` requests per ``window_s`` seconds per key (``limit`` 0 = no limit)."""

    limit: int
    window_s: float

    async def check(self, key: str) -> float | None:
        """Record one request; None if admitted, else the seconds until a slot frees (Retry-After)."""
        ...

    async def aclose(self) -> None: ...


class SlidingWindowLimiter:
    """In-memory per-key sliding window: at most ``limit`` requests in any ``window_s`` seconds.

    Per process: behind several workers the effective limit multiplies; fine for one uvicorn worker.
    """

    def __init__(
        self, limit: int, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._hits = KeyedWindows(clock=clock)  # bounded: many distinct clients cannot grow memory

    async def check(self, key: str) -> float | None:
        return self.check_now(key)

    def check_now(self, key: str) -> float | None:
        """:meth:`check` without the coroutine (the window never waits on anything)."""
        if self.limit <= 0:
            return None
        now = self._clock()
        hits = self._hits.get(key, self.limit, self.window_s)  # settings may change between checks
        wait = hits.wait(now)
        if wait > 0:
            return max(wait, _MIN_RETRY_S)
        hits.add(now)
        return None

    async def aclose(self) -> None:
        return None


class RedisWindowLimiter:
    """The same sliding window, kept in Redis and shared by every replica that uses the same URL."""

    def __init__(
        self,
        url: str,
        limit: int,
        window_s: float = 60.0,
        *,
        timeout_s: float = 0.5,
        on_error: Literal["allow", "deny"] = "allow",
        prefix: str = "cometa:api:ratelimit",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis = LoopBoundRedis(url, timeout_s=timeout_s)  # validates the URL now (start-up)
        self.limit = limit
        self.window_s = window_s
        self.on_error = on_error
        self.prefix = prefix
        self._clock = clock  # only for the skip-after-failure window and warning throttle
        self._down_until = float("-inf")
        self._warned_at = float("-inf")
        self.errors = 0  # checks that could not reach Redis since start

    def redis_key(self, key: str) -> str:
        # Identities are API-key hashes or client IPs: hash again so neither is readable in Redis.
        return f"{self.prefix}:{hashlib.sha256(key.encode()).hexdigest()[:32]}"

    async def check(self, key: str) -> float | None:
        from redis.exceptions import RedisError

        if self.limit <= 0:
            return None
        if self._clock() < self._down_until:
            self._unavailable(None)
            return None
        window_us = max(1, round(self.window_s * 1_000_000))
        try:
            wait_us = await self.redis.client().eval(
                _SLIDING_WINDOW, 1, self.redis_key(key), window_us, self.limit, uuid.uuid4().hex
            )
        except (RedisError, OSError, TimeoutError) as exc:
            self._down_until = self._clock() + _RETRY_AFTER_S
            self._unavailable(exc)
            return None
        wait = int(wait_us)
        return None if wait < 0 else max(wait / 1_000_000, _MIN_RETRY_S)

    def _unavailable(self, exc: BaseException | None) -> None:
        """Count and warn (``allow``: the caller admits the request) or raise (``deny``)."""
        reason = f"{type(exc).__name__}: {exc}" if exc is not None else "Redis marked down after a failure"
        self.errors += 1
        RATE_LIMITER_ERRORS.labels(self.on_error).inc()
        if self.on_error == "deny":
            raise RateLimiterUnavailable(f"shared request rate limiter unavailable ({reason})")
        now = self._clock()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            log.warning("shared request rate limiter unavailable (%s); admitting requests unlimited", reason)

    async def aclose(self) -> None:
        await self.redis.aclose()


def build_request_limiter(api: ApiSettings, *, default_url: str | None = None) -> RequestLimiter:
    """The limiter ``api`` asks for; ``default_url`` is the Redis used when ``rate_limit_url`` is unset."""
    if api.rate_limit_backend == "memory" or api.rate_limit_per_minute <= 0:
        return SlidingWindowLimiter(api.rate_limit_per_minute)
    url = api.rate_limit_url or default_url
    if not url:
        raise ValueError("rate_limit_backend=redis needs rate_limit_url (redis://host:port/db)")
    return RedisWindowLimiter(
        url,
        api.rate_limit_per_minute,
        timeout_s=api.rate_limit_timeout_s,
        on_error=api.rate_limit_on_error,
    )

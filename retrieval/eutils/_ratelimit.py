"""E-utilities rate limiting: per process (local) or shared by every replica (Redis).

NCBI counts requests per key (or per IP without one), so every client object in the process must draw
from the same limiter for the same key. The per-process limiter is a sliding window, counted as NCBI counts:
at most ``burst`` requests (NCBI's 3 or 10; a configured rate's whole part) in any ``window_s`` seconds,
``window_s = max(burst / rate, 1 / safety)`` (:func:`window_rate`), ``rate`` being the configured (or NCBI's)
rate times the client's safety margin. The window is therefore never shorter than ``1 / safety`` seconds,
a little longer than NCBI's second, so any one second holds at most ``burst`` requests: never more than
NCBI accepts, nor more than a fractional configured rate (2.5/s gives 2 in any 1.11 s, not 2 per 0.84 s).
Unlike strict spacing (``burst=1``: one request every ``1 / rate`` s), a slot nobody used in the last window
is still there when several calls become ready at once (a batch of questions getting their ESearch answers
back), so the budget is not left idle while calls wait in line. A ``Retry-After`` from NCBI pauses the whole
key (:meth:`WindowLimiter.pause`), not only the call that received it.

Per-key windows alone would let a caller multiply the deployment's outbound rate by bringing keys (each
per-request ``ncbi_api_key`` its own 10 req/s, all from our one address), so every request also draws a slot
from one more window, :data:`DEPLOYMENT`: the deployment's ceiling (``max_requests_per_second``), whatever
the keys. The per-key table is a bounded LRU (:func:`limiter_for`).

Several replicas sharing one key need one limiter between them: :class:`RedisLimiter` keeps the next free
slot per key hash in Redis, and an atomic Lua script hands each caller the next slot (one interval after the
previous one, on Redis's clock) before it sleeps until that slot. Together the replicas then send no faster
than one process would; the :data:`DEPLOYMENT` chain is the ceiling of every replica together. If Redis
cannot be reached the documented fallback is the per-process limiter at ``rate / limiter_fallback_replicas``
(a warning is logged and counted), or, with ``limiter_on_error=error``, :class:`LimiterUnavailable`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

from prometheus_client import Counter

from core import SizedLRU, SlidingWindow
from retrieval.ncbi import EutilsError

from ._store import LoopBoundRedis

__all__ = [
    "DEPLOYMENT",
    "NCBI_RATE_NO_KEY",
    "NCBI_RATE_WITH_KEY",
    "LimiterUnavailable",
    "LocalLimiter",
    "RateLimiter",
    "RedisLimiter",
    "WindowLimiter",
    "burst_for",
    "effective_rate",
    "key_id",
    "limiter_for",
    "window_rate",
]

log = logging.getLogger("cometa.eutils.ratelimit")

NCBI_RATE_NO_KEY = 3.0
NCBI_RATE_WITH_KEY = 10.0
# The "key" of the deployment-wide ceiling: every request draws a slot here as well as under its own key,
# so callers bringing many keys (``ncbi_api_key``) cannot multiply what the deployment sends.
DEPLOYMENT = "\x00deployment"
_WARN_EVERY_S = 60.0
_RETRY_AFTER_S = 5.0  # after a Redis failure, use the fallback this long before trying Redis again

LIMITER_FALLBACKS = Counter(
    "cometa_eutils_limiter_fallback_total",
    "E-utilities requests spaced by the per-process fallback because the shared limiter was unavailable",
)

# Limiters are bound to an event loop; keep one table per loop so tests with fresh loops stay correct.
# Each table is an LRU of at most _MAX_LIMITERS keys: per-request NCBI keys (``ncbi_api_key``) must not grow
# it without bound. Only idle limiters are evicted (:func:`_make_room`).
_MAX_LIMITERS = 1024
_TABLES: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, SizedLRU[tuple[str, float, int], WindowLimiter]
] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()

# KEYS[1]: the key's slot; ARGV[1]: spacing in microseconds; ARGV[2]: the longest wait the caller accepts
# (microseconds, -1: any). Returns the caller's wait in microseconds; a wait over ARGV[2] reserves nothing.
# Redis's own clock (TIME) orders all replicas, so host clock skew cannot let two callers share a slot.
_RESERVE_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now then slot = now end
local most = tonumber(ARGV[2] or '-1')
if most >= 0 and slot - now > most then return slot - now end
local nxt = slot + interval
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.floor((nxt - now) / 1000) + 1000)
return slot - now
"""

# KEYS[1]: the key's slot; ARGV[1]: pause in microseconds. No slot before now + pause (a Retry-After).
_PAUSE_KEY = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local till = now + tonumber(ARGV[1])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < till then
  redis.call('SET', KEYS[1], string.format('%.0f', till), 'PX', math.floor((till - now) / 1000) + 1000)
end
return 0
"""


class LimiterUnavailable(EutilsError):
    """The shared (Redis) rate limiter cannot be reached and ``limiter_on_error`` is ``error``."""


def effective_rate(api_key: str | None, configured: float | None, safety: float) -> float:
    """Requests per second for this key: the configured rate, else NCBI's 3 (no key) or 10 (key)."""
    base = configured if configured is not None else (NCBI_RATE_WITH_KEY if api_key else NCBI_RATE_NO_KEY)
    return base * safety


def key_id(api_key: str | None) -> str:
    """Opaque id of an API key. Never keep the key itself in a table or a shared store."""
    if api_key == DEPLOYMENT:
        return "deployment"  # not hex: no key's hash can be it
    return "anon" if not api_key else hashlib.sha256(api_key.encode()).hexdigest()[:16]


def burst_for(api_key: str | None, configured: float | None) -> int:
    """Requests NCBI accepts in one second for this key (3 without, 10 with one; a configured rate's whole
    part): the most one window (:func:`window_rate`) may hold."""
    base = configured if configured is not None else (NCBI_RATE_WITH_KEY if api_key else NCBI_RATE_NO_KEY)
    return max(1, math.floor(base))


def window_rate(burst: int, rate: float, safety: float) -> float:
    """The rate to give a window of ``burst``: its window ``burst / rate`` is at least ``1 / safety`` s.

    ``rate`` is already the configured rate times ``safety``. For NCBI's 3 or 10 the window is exactly
    ``1 / safety``; for a fractional configured rate (2.5 -> burst 2) ``burst / rate`` alone would be
    shorter than a second (0.84 s at safety 0.95: four sends within one second), so the window is
    stretched to ``1 / safety`` and any one second holds at most ``burst`` sends, within the configured
    rate and NCBI's (below 2 req/s: one send per ``1 / safety`` s). For the window limiter only: strict
    spacing (``limiter_burst=false``) keeps ``rate``.
    """
    return min(rate, burst * safety)


class WindowLimiter:
    """At most ``burst`` sends in any ``burst / rate`` seconds, first come first served (one event loop).

    ``burst=1`` is strict spacing. With ``rate`` from :func:`window_rate` the window is at least
    ``1 / safety`` seconds, longer than NCBI's one second, so any second NCBI looks at holds at most
    ``burst`` of our requests, whenever they were sent, with ``1 / safety - 1`` of a second to spare for
    network jitter. :meth:`pause` holds every send until a moment (NCBI's ``Retry-After``).
    """

    def __init__(
        self,
        burst: int,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if burst < 1 or rate <= 0:
            raise ValueError("burst must be >= 1 and rate > 0")
        self.burst = burst
        self.window_s = burst / rate
        self._clock = clock
        self._sleep = sleep
        self._sent = SlidingWindow(burst, self.window_s, clock)
        self._paused_until = float("-inf")
        self._turn = asyncio.Lock()  # FIFO: waiters get their slots in the order they asked

    def delay(self) -> float:
        """Seconds until the next send may go out (0: now)."""
        now = self._clock()
        return max(self._sent.wait(now), self._paused_until - now, 0.0)

    def pause(self, seconds: float) -> None:
        """No send before ``seconds`` from now (later pauses extend it, earlier ones never shorten it)."""
        self._paused_until = max(self._paused_until, self._clock() + seconds)

    def busy(self) -> bool:
        """Whether forgetting this limiter would lose something: a caller waiting or sending, a pause
        running, or a send still in the window (a fresh limiter for the key would ignore them)."""
        now = self._clock()
        return self._turn.locked() or self._paused_until > now or self._sent.active(now)

    async def acquire(self) -> None:
        async with self._turn:
            while (wait := self.delay()) > 0:
                await self._sleep(wait)
            self._sent.add()


def limiter_for(api_key: str | None, rate: float, burst: int = 1) -> WindowLimiter:
    """The shared limiter of this event loop for ``api_key`` at ``rate`` requests per second, ``burst`` at
    most in any ``burst / rate`` seconds."""
    loop = asyncio.get_running_loop()
    with _LOCK:
        table = _TABLES.get(loop)
        if table is None:
            # Bounded by max_entries (see _make_room), not by bytes: busy limiters may exceed it for a while.
            table = _TABLES[loop] = SizedLRU(_MAX_LIMITERS, sys.maxsize, lambda _: 1)
        key = (key_id(api_key), rate, burst)
        limiter = table.get(key)  # a hit makes the key the most recently used
        if limiter is None:
            limiter = WindowLimiter(burst, rate)
            _make_room(table)
            table[key] = limiter
        return limiter


def _make_room(table: SizedLRU[tuple[str, float, int], WindowLimiter]) -> None:
    """Evict idle limiters, least recently used first, until one more fits. A busy one (callers waiting
    on it, a Retry-After pause, sends in its window) is kept and moved up instead: waiting callers never
    refresh its place, and a fresh limiter for its key would send through the pause. With every limiter
    busy the table grows past the bound until they go idle (bounded by the calls in flight)."""
    for _ in range(len(table)):
        if len(table) < table.max_entries:
            return
        key, limiter = table.popitem()
        if limiter.busy():
            table.evictions -= 1  # moved, not evicted
            table[key] = limiter


class RateLimiter(Protocol):
    async def acquire(
        self, api_key: str | None, rate: float, burst: int = 1, max_wait_s: float | None = None
    ) -> None:
        """Return when one request for ``api_key`` (or :data:`DEPLOYMENT`, the ceiling of all keys together)
        may go out at ``rate`` requests per second, at most ``burst`` of them in any ``burst / rate`` seconds
        (a limiter may space strictly instead).
        ``max_wait_s``: a limiter that knows its wait up front raises TimeoutError, without taking a slot,
        when it is longer (the caller also bounds the wait with a timeout; a cancelled wait takes none)."""

    async def pause(self, api_key: str | None, rate: float, burst: int, seconds: float) -> None:
        """No request for ``api_key`` before ``seconds`` from now (the server's ``Retry-After``)."""

    async def aclose(self) -> None: ...


class LocalLimiter:
    """A sliding window per key within this process (the default); strict spacing with ``burst=1``."""

    async def acquire(
        self, api_key: str | None, rate: float, burst: int = 1, max_wait_s: float | None = None
    ) -> None:
        await limiter_for(api_key, rate, burst).acquire()  # a cancelled wait takes no slot

    async def pause(self, api_key: str | None, rate: float, burst: int, seconds: float) -> None:
        limiter_for(api_key, rate, burst).pause(seconds)

    async def aclose(self) -> None:
        return None


class RedisLimiter:
    """Strict spacing across every process that uses the same Redis: one slot chain per API key hash.

    ``burst`` is not used: replicas share one chain of evenly spaced slots, which needs no window state."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 1.0,
        on_error: Literal["local", "error"] = "local",
        fallback_replicas: int = 1,
        prefix: str = "cometa:eutils:ratelimit",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        # Not namespaced per deployment: NCBI counts per key, so every deployment using a key shares it.
        self.redis = LoopBoundRedis(url, timeout_s=timeout_s)
        self.on_error = on_error
        self.fallback_replicas = max(1, fallback_replicas)
        self.prefix = prefix
        self._sleep = sleep
        self._down_until = float("-inf")
        self._warned_at = float("-inf")
        self.fallbacks = 0  # requests spaced by the fallback since start

    def slot_key(self, api_key: str | None) -> str:
        return f"{self.prefix}:{key_id(api_key)}"

    async def reserve(self, api_key: str | None, rate: float, max_wait_s: float | None = None) -> float:
        """Reserve the next slot for this key; the seconds to wait until it. Raises Redis errors. A wait
        over ``max_wait_s`` is returned without reserving the slot."""
        interval_us = max(1, round(1_000_000 / rate))
        most_us = -1 if max_wait_s is None else max(0, round(max_wait_s * 1_000_000))
        client = self.redis.client()
        wait_us = await client.eval(_RESERVE_SLOT, 1, self.slot_key(api_key), interval_us, most_us)
        return max(0, int(wait_us)) / 1_000_000

    async def acquire(
        self, api_key: str | None, rate: float, burst: int = 1, max_wait_s: float | None = None
    ) -> None:
        from redis.exceptions import RedisError

        if time.monotonic() >= self._down_until:
            try:
                wait = await self.reserve(api_key, rate, max_wait_s)
            except (RedisError, OSError, TimeoutError) as exc:
                self._down_until = time.monotonic() + _RETRY_AFTER_S
                await self._fallback(api_key, rate, exc)
                return
            if max_wait_s is not None and wait > max_wait_s:
                raise TimeoutError(f"the next slot is {wait:.2f} s away, over {max_wait_s:.2f} s")
            if wait > 0:
                await self._sleep(wait)
            return
        await self._fallback(api_key, rate, None)

    async def _fallback(self, api_key: str | None, rate: float, exc: BaseException | None) -> None:
        reason = f"{type(exc).__name__}: {exc}" if exc is not None else "Redis marked down"
        if self.on_error == "error":
            raise LimiterUnavailable(f"shared E-utilities rate limiter unavailable ({reason})")
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            log.warning(
                "shared E-utilities rate limiter unavailable (%s); per-process spacing at %.2f req/s",
                reason,
                rate / self.fallback_replicas,
            )
        self.fallbacks += 1
        LIMITER_FALLBACKS.inc()
        await limiter_for(api_key, rate / self.fallback_replicas).acquire()

    async def pause(self, api_key: str | None, rate: float, burst: int, seconds: float) -> None:
        """Move the key's next slot to ``seconds`` from now, for every replica (the fallback too)."""
        from redis.exceptions import RedisError

        limiter_for(api_key, rate / self.fallback_replicas).pause(seconds)
        if time.monotonic() < self._down_until:
            return
        try:
            client = self.redis.client()
            await client.eval(_PAUSE_KEY, 1, self.slot_key(api_key), max(0, round(seconds * 1_000_000)))
        except (RedisError, OSError, TimeoutError):
            self._down_until = time.monotonic() + _RETRY_AFTER_S  # acquire falls back (and says so)

    async def aclose(self) -> None:
        await self.redis.aclose()

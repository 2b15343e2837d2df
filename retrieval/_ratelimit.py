"""Process-wide E-utilities rate limiting.

NCBI counts requests per key (or per IP without one), so every client object in the process must draw
from the same limiter for the same key. aiolimiter's leaky bucket with a capacity of one request gives
strict spacing (no bursts), which is what keeps us under NCBI's per-second window.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import weakref

from aiolimiter import AsyncLimiter

__all__ = ["NCBI_RATE_NO_KEY", "NCBI_RATE_WITH_KEY", "effective_rate", "limiter_for"]

NCBI_RATE_NO_KEY = 3.0
NCBI_RATE_WITH_KEY = 10.0

# Limiters are bound to an event loop; keep one table per loop so tests with fresh loops stay correct.
_TABLES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, float], AsyncLimiter]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def effective_rate(api_key: str | None, configured: float | None, safety: float) -> float:
    """Requests per second for this key: the configured rate, else NCBI's 3 (no key) or 10 (key)."""
    base = configured if configured is not None else (NCBI_RATE_WITH_KEY if api_key else NCBI_RATE_NO_KEY)
    return base * safety


def _key_id(api_key: str | None) -> str:
    # Never keep the key itself in a long-lived table that may end up in a debugger or a log.
    return "anon" if not api_key else hashlib.sha256(api_key.encode()).hexdigest()[:16]


def limiter_for(api_key: str | None, rate: float) -> AsyncLimiter:
    """The shared limiter of this event loop for ``api_key`` at ``rate`` requests per second."""
    loop = asyncio.get_running_loop()
    with _LOCK:
        table = _TABLES.setdefault(loop, {})
        key = (_key_id(api_key), rate)
        limiter = table.get(key)
        if limiter is None:
            limiter = table[key] = AsyncLimiter(1, 1.0 / rate)
        return limiter

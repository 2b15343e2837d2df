"""The E-utilities client: retries, the NCBI rate limit (per process or shared through Redis), the response
cache (memory / sqlite / redis) with stale-if-error, and the transport it is given."""

from ._client import (
    LOCAL_BASE_URL,
    EutilsClient,
    EutilsDegradation,
    deadline_paused,
    is_unavailable,
    open_limiter,
    question_deadline,
    track_degradation,
)
from ._config import NCBI_EUTILS_URL, CacheSettings, EutilsSettings
from ._ratelimit import (
    DEPLOYMENT,
    LimiterUnavailable,
    LocalLimiter,
    RateLimiter,
    RedisLimiter,
    WindowLimiter,
    burst_for,
    effective_rate,
    window_rate,
)
from ._store import (
    CacheStore,
    CacheStoreError,
    LoopBoundRedis,
    MemoryStore,
    RedisStore,
    SqliteStore,
    decode_value,
    encode_value,
    open_store,
)

__all__ = [
    "DEPLOYMENT",
    "LOCAL_BASE_URL",
    "NCBI_EUTILS_URL",
    "CacheSettings",
    "CacheStore",
    "CacheStoreError",
    "EutilsClient",
    "EutilsDegradation",
    "EutilsSettings",
    "LimiterUnavailable",
    "LocalLimiter",
    "LoopBoundRedis",
    "MemoryStore",
    "RateLimiter",
    "RedisLimiter",
    "RedisStore",
    "SqliteStore",
    "WindowLimiter",
    "burst_for",
    "deadline_paused",
    "decode_value",
    "effective_rate",
    "encode_value",
    "is_unavailable",
    "open_limiter",
    "open_store",
    "question_deadline",
    "track_degradation",
    "window_rate",
]

"""Typed configuration of the E-utilities client (``COMETA_EUTILS__*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr

__all__ = [
    "NCBI_EUTILS_URL",
    "CacheSettings",
    "EutilsSettings",
]


NCBI_EUTILS_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"


class CacheSettings(BaseModel):
    """The E-utilities response cache (``COMETA_EUTILS__CACHE__*``).

    ``memory``: per process (the default); ``sqlite``: a file that survives restarts, shared by the processes
    of one host; ``redis``: shared by every replica. Entries are fresh for ``ttl_s`` and kept ``max_stale_s``
    longer, to be served only when E-utilities fails (stale-if-error, marked in the answer's warnings).
    """

    backend: Literal["memory", "sqlite", "redis"] = Field(
        default="memory", description="Where cached responses live: this process, a SQLite file, or Redis."
    )
    url: str | None = Field(
        default=None,
        description="sqlite: a file path (None = $XDG_CACHE_HOME/cometa/eutils-cache.sqlite3); redis: redis://host:port/db.",
    )
    ttl_s: float = Field(default=3600.0, ge=0, description="Seconds an entry is fresh.")
    max_stale_s: float = Field(
        default=86_400.0,
        ge=0,
        description="Seconds an expired entry is kept longer, served only when E-utilities fails "
        "(stale-if-error).",
    )
    max_entries: int = Field(
        default=4096, ge=0, description="memory: LRU size; sqlite: rows kept; 0 disables the cache."
    )
    max_bytes: int = Field(
        default=256 * 2**20,
        ge=1,
        le=2**40,
        description="memory: bytes the cached records may weigh (PMC full texts are large), beside "
        "max_entries.",
    )
    namespace: str = Field(
        default="cometa",
        pattern=r"^[A-Za-z0-9_.-]+$",
        description=(
            "Key prefix in shared stores; the E-utilities base URL is hashed into every key as well, so a "
            "corpus-backed deployment and a live-NCBI one can share a Redis without mixing answers."
        ),
    )
    timeout_s: float = Field(
        default=1.0, gt=0, description="Per Redis/SQLite operation; a slow cache is a miss."
    )


class EutilsSettings(BaseModel):
    """How the async client reaches E-utilities.

    ``backend="http"`` talks HTTP to ``base_url`` (live NCBI by default, or a ``cometa eutils serve`` URL);
    ``backend="local"`` serves the bundled corpus in-process through httpx's ASGI transport, so the
    client code path is identical either way.
    """

    backend: Literal["http", "local"] = Field(
        default="http", description="http: talk HTTP to base_url; local: serve the bundled corpus in-process."
    )
    base_url: str = Field(default=NCBI_EUTILS_URL, description="E-utilities base URL (backend http).")
    tool: str = Field(
        default="cometa", pattern=r"^\S+$", description="The tool name NCBI asks every client to send."
    )
    email: str | None = Field(default=None, description="A contact address NCBI asks every client to send.")
    api_key: SecretStr | None = Field(default=None, description="NCBI API key: 10 requests/s instead of 3.")
    requests_per_second: float | None = Field(
        default=None, gt=0, description="None = NCBI's published limits: 3 req/s without a key, 10 with one."
    )
    max_requests_per_second: float | None = Field(
        default=None,
        gt=0,
        description=(
            "The deployment's outbound ceiling: all E-utilities requests together, whatever their keys "
            "(per-request ncbi_api_key included; every replica together with the Redis limiter), times "
            "rate_safety. None = the larger of NCBI's 10 req/s with a key and requests_per_second."
        ),
    )
    rate_safety: float = Field(
        default=0.95,
        gt=0,
        le=1,
        description=(
            "Margin under NCBI's rate: the limiter sends at rate x this, and its window (at most NCBI's 3 "
            "or 10, or a configured rate's whole part, per window) is at least 1 / this seconds long "
            "(1.053 s at 0.95), since network jitter can bunch requests that left spaced, and NCBI counts "
            "per second; with a fractional requests_per_second (2.5) the window holds its whole part (2)."
        ),
    )
    timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds one request may take, whole exchange (within the retry budget).",
    )
    connect_timeout_s: float = Field(default=5.0, gt=0, description="To establish a connection.")
    max_attempts: int = Field(default=5, ge=1, le=20, description="Tries per call, the first one included.")
    retry_budget_s: float = Field(
        default=15.0, gt=0, description="Seconds all attempts of one call may take together."
    )
    backoff_base_s: float = Field(
        default=0.5,
        ge=0,
        description="Retry delay cap after the first failure; it doubles per attempt (jittered).",
    )
    backoff_max_s: float = Field(default=8.0, ge=0, description="Largest retry delay cap.")
    retry_after_max_s: float = Field(
        default=10.0,
        ge=0,
        description=(
            "A Retry-After on a 429/503 pauses every call of that key until then, capped at this many "
            "seconds (a longer Retry-After waits this long only; the call still ends within retry_budget_s)."
        ),
    )
    cache: CacheSettings = Field(default_factory=CacheSettings, description="The response cache.")
    limiter: Literal["local", "redis"] = Field(
        default="local",
        description=(
            "local: one strict-spacing limiter per process and key; redis: one per key across all replicas "
            "(an atomic slot reservation in Redis), so N replicas together stay under NCBI's 3 or 10 req/s."
        ),
    )
    limiter_url: str | None = Field(
        default=None, description="None = cache.url when the cache is Redis, else redis://localhost:6379/0."
    )
    limiter_on_error: Literal["local", "error"] = Field(
        default="local",
        description=(
            "Redis unreachable: local falls back to a per-process limiter at rate / "
            "limiter_fallback_replicas (logged, counted); error raises LimiterUnavailable (an EutilsError: "
            "503 or stale-if-error)."
        ),
    )
    limiter_fallback_replicas: int = Field(
        default=1, ge=1, description="Replicas sharing the rate when the Redis limiter falls back to local."
    )
    limiter_timeout_s: float = Field(default=1.0, gt=0, description="Per Redis limiter call.")
    limiter_burst: bool = Field(
        default=True,
        description=(
            "local limiter: a sliding window as NCBI counts (at most NCBI's 3 or 10 requests in any "
            "1 / rate_safety seconds), so a slot left unused while calls were in flight can still be spent "
            "when several become ready at once; false: strict spacing, one request every 1 / (rate x "
            "rate_safety) s. The Redis limiter always spaces strictly."
        ),
    )
    efetch_batch_size: int = Field(default=200, ge=1, le=10_000, description="PMIDs per EFetch request.")
    post_min_ids: int = Field(default=200, ge=1, description="Id lists longer than this are sent by POST.")
    post_min_term_chars: int = Field(
        default=1000, ge=1, description="Search terms at least this long are sent by POST."
    )

    def redis_limiter_url(self) -> str:
        if self.limiter_url:
            return self.limiter_url
        if self.cache.backend == "redis" and self.cache.url:
            return self.cache.url
        return "redis://localhost:6379/0"

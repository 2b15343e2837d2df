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

    backend: Literal["memory", "sqlite", "redis"] = "memory"
    # sqlite: a file path (None = ~/.cache/cometa/eutils-cache.sqlite3); redis: redis://host:port/db.
    url: str | None = None
    ttl_s: float = Field(default=3600.0, ge=0)
    max_stale_s: float = Field(default=86_400.0, ge=0)
    max_entries: int = Field(default=4096, ge=0)  # memory: LRU size; sqlite: rows kept; 0 disables the cache
    # Key prefix in shared stores; the E-utilities base URL is hashed into every key as well, so a
    # corpus-backed deployment and a live-NCBI one can share a Redis without mixing answers.
    namespace: str = Field(default="cometa", pattern=r"^[A-Za-z0-9_.-]+$")
    timeout_s: float = Field(default=1.0, gt=0)  # per Redis/SQLite operation; a slow cache is a miss


class EutilsSettings(BaseModel):
    """How the async client reaches E-utilities.

    ``backend="http"`` talks HTTP to ``base_url`` (live NCBI by default, or a ``cometa eutils serve`` URL);
    ``backend="local"`` serves the bundled corpus in-process through httpx's ASGI transport, so the
    client code path is identical either way.
    """

    backend: Literal["http", "local"] = "http"
    base_url: str = NCBI_EUTILS_URL
    tool: str = Field(default="cometa", pattern=r"^\S+$")
    email: str | None = None
    api_key: SecretStr | None = None
    # None = NCBI's published limits: 3 req/s without a key, 10 with one.
    requests_per_second: float | None = Field(default=None, gt=0)
    # Spacing margin: network jitter can bunch requests that left evenly spaced, and NCBI counts per second.
    rate_safety: float = Field(default=0.95, gt=0, le=1)
    timeout_s: float = Field(default=10.0, gt=0)
    connect_timeout_s: float = Field(default=5.0, gt=0)
    max_attempts: int = Field(default=5, ge=1, le=20)
    retry_budget_s: float = Field(default=15.0, gt=0)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=8.0, ge=0)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    # Deprecated flat spellings of ``cache.ttl_s`` / ``cache.max_entries``; they win when set.
    cache_ttl_s: float | None = Field(default=None, ge=0)
    cache_max_entries: int | None = Field(default=None, ge=0)
    # ``local``: one strict-spacing limiter per process and key; ``redis``: one per key across all replicas
    # (an atomic slot reservation in Redis), so N replicas together stay under NCBI's 3 or 10 req/s.
    limiter: Literal["local", "redis"] = "local"
    limiter_url: str | None = None  # None = cache.url when the cache is Redis, else redis://localhost:6379/0
    # Redis unreachable: ``local`` falls back to a per-process limiter at rate / limiter_fallback_replicas
    # (logged, counted); ``error`` raises LimiterUnavailable (an EutilsError: 503 or stale-if-error).
    limiter_on_error: Literal["local", "error"] = "local"
    limiter_fallback_replicas: int = Field(default=1, ge=1)
    limiter_timeout_s: float = Field(default=1.0, gt=0)
    efetch_batch_size: int = Field(default=200, ge=1, le=10_000)
    post_min_ids: int = Field(default=200, ge=1)
    post_min_term_chars: int = Field(default=1000, ge=1)

    def cache_settings(self) -> CacheSettings:
        """``cache`` with the deprecated flat fields applied."""
        update: dict[str, float | int] = {}
        if self.cache_ttl_s is not None:
            update["ttl_s"] = self.cache_ttl_s
        if self.cache_max_entries is not None:
            update["max_entries"] = self.cache_max_entries
        return self.cache.model_copy(update=update) if update else self.cache

    def redis_limiter_url(self) -> str:
        if self.limiter_url:
            return self.limiter_url
        if self.cache.backend == "redis" and self.cache.url:
            return self.cache.url
        return "redis://localhost:6379/0"

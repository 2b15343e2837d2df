"""Typed configuration of the retrieval stage (nested into ``app.settings.Settings``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

__all__ = ["NCBI_EUTILS_URL", "AdaptESettings", "EutilsSettings", "FaultSettings", "LocalServerSettings"]

NCBI_EUTILS_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"


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
    cache_ttl_s: float = Field(default=3600.0, ge=0)
    cache_max_entries: int = Field(default=4096, ge=0)
    efetch_batch_size: int = Field(default=200, ge=1, le=10_000)
    post_min_ids: int = Field(default=200, ge=1)
    post_min_term_chars: int = Field(default=1000, ge=1)


class FaultSettings(BaseModel):
    """Fault injection for the local server (tests, soak and throughput benchmarks). Rates are 0..1."""

    seed: int = 0
    latency_ms_min: float = Field(default=0.0, ge=0)
    latency_ms_max: float = Field(default=0.0, ge=0)
    error_500_rate: float = Field(default=0.0, ge=0, le=1)
    html_rate: float = Field(default=0.0, ge=0, le=1)
    truncated_rate: float = Field(default=0.0, ge=0, le=1)
    ratelimit_2xx_rate: float = Field(default=0.0, ge=0, le=1)
    stall_rate: float = Field(default=0.0, ge=0, le=1)  # sleeps ``stall_s`` before answering
    stall_s: float = Field(default=30.0, ge=0)


class LocalServerSettings(BaseModel):
    """The NCBI-compatible local E-utilities server."""

    corpus_dir: Path | None = None  # None = the corpus bundled with the package
    rate_limit: bool = False  # emulate NCBI's 429 above 3 req/s (10 with api_key)
    rate_no_key: float = Field(default=3.0, gt=0)
    rate_with_key: float = Field(default=10.0, gt=0)
    host: str = "127.0.0.1"
    port: int = Field(default=8088, ge=0, le=65535)
    restricted_pmcids: tuple[str, ...] = ()  # serve these PMC articles without <body>, like publishers do
    faults: FaultSettings = FaultSettings()


class AdaptESettings(BaseModel):
    """Adaptive execution of the Boolean ladder."""

    min_hits: int = Field(default=10, ge=1, le=10_000)  # stop once this many PMIDs are collected
    retmax: int = Field(default=50, ge=1, le=10_000)  # PMIDs taken from each tier
    sort: str | None = "relevance"
    # Send all tiers at once and cancel after early stop. Measured (bench/adapte.py, 150-400 ms latency):
    # no gain at 3 req/s; 1.85x faster per question at 10 req/s with a key, for ~20% more ESearch calls.
    speculative: bool = False

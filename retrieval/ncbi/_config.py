"""Typed configuration of the local NCBI-compatible server (``COMETA_LOCAL_SERVER__*``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

__all__ = [
    "FaultSettings",
    "LocalServerSettings",
]


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

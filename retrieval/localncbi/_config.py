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

    seed: int = Field(default=0, description="Seeds the fault draws: one seed, one fault sequence.")
    latency_ms_min: float = Field(default=0.0, ge=0, description="Added latency per request, lower bound.")
    latency_ms_max: float = Field(default=0.0, ge=0, description="Added latency per request, upper bound.")
    error_500_rate: float = Field(default=0.0, ge=0, le=1, description="Share of requests answered 500.")
    html_rate: float = Field(
        default=0.0, ge=0, le=1, description="Share answered 200 with an HTML page instead of XML/JSON."
    )
    truncated_rate: float = Field(
        default=0.0, ge=0, le=1, description="Share answered with the real body cut in half."
    )
    ratelimit_2xx_rate: float = Field(
        default=0.0, ge=0, le=1, description="Share answered 200 with NCBI's rate-limit JSON error."
    )
    stall_rate: float = Field(
        default=0.0, ge=0, le=1, description="Share of requests that sleep ``stall_s`` before answering."
    )
    stall_s: float = Field(default=30.0, ge=0, description="How long a stalled request sleeps.")
    esearch_not_found_rate: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of ESearch requests answered as if PubMed knew none of the query's terms: "
        "count 0, each term in ErrorList/PhraseNotFound.",
    )
    esearch_quoted_not_found_rate: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of ESearch requests answered as if PubMed found none of the query's phrases: "
        "count 0, each term quoted in WarningList/QuotedPhraseNotFound.",
    )
    esearch_empty_rate: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of ESearch requests answered count 0 without an ErrorList: a search that finds "
        "nothing.",
    )


class LocalServerSettings(BaseModel):
    """The NCBI-compatible local E-utilities server."""

    corpus_dir: Path | None = Field(default=None, description="The corpus served; None = the bundled one.")
    rate_limit: bool = Field(
        default=False,
        description="Emulate NCBI's 429 above rate_no_key req/s (rate_with_key with an api_key).",
    )
    rate_no_key: float = Field(default=3.0, gt=0, description="Requests/s allowed without an api_key.")
    rate_with_key: float = Field(default=10.0, gt=0, description="Requests/s allowed with an api_key.")
    host: str = Field(default="127.0.0.1", description="Bind address of ``cometa eutils serve``.")
    port: int = Field(default=8088, ge=0, le=65535, description="Port of ``cometa eutils serve``.")
    restricted_pmcids: tuple[str, ...] = Field(
        default=(), description="Serve these PMC articles without <body>, like publishers do."
    )
    faults: FaultSettings = Field(default=FaultSettings(), description="Fault injection.")

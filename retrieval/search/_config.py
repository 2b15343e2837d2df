"""Typed configuration of Adapt-E (``COMETA_ADAPTE__*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "AdaptESettings",
]


class AdaptESettings(BaseModel):
    """Adaptive execution of the Boolean ladder."""

    min_hits: int = Field(
        default=10,
        ge=1,
        le=10_000,
        description="Stop descending the ladder once this many PMIDs are collected.",
    )
    retmax: int = Field(default=50, ge=1, le=10_000, description="PMIDs taken from each tier.")
    sort: str | None = Field(default="relevance", description="ESearch sort order; None = PubMed's default.")
    speculative: bool = Field(
        default=False,
        description="Send all tiers at once and cancel after early stop. Measured (bench/adapte.py, 150-400 "
        "ms latency): no gain at 3 req/s; 1.85x faster per question at 10 req/s with a key, for ~20% more "
        "ESearch calls.",
    )
    strategy: Literal["ladder", "union"] = Field(
        default="union",
        description="ladder: one ESearch per tier, strict -> relaxed, until min_hits; union: one ESearch of "
        "all tiers but the loosest OR-ed, each hit ranked by the strictest tier it satisfies (checked "
        "locally "
        "on the fetched records), the loosest tier only when too few (fewer calls; docs/performance.md).",
    )
    union_retmax: int = Field(
        default=100, ge=1, le=10_000, description="PMIDs taken from the union query (strategy union)."
    )

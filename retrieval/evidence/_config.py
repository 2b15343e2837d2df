"""Typed configuration of the evidence policy (``COMETA_EVIDENCE__*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "EvidenceSettings",
]


class EvidenceSettings(BaseModel):
    """Fusion and metadata policy (CHSDR stage 4): RRF, filters and retrieval depth per document class."""

    rrf_k: int = Field(default=60, ge=1)
    boolean_weight: float = Field(default=1.0, ge=0)
    dense_weight: float = Field(default=1.0, ge=0)
    max_candidates: int = Field(default=50, ge=1, le=10_000)  # fused PMIDs fetched in one EFetch batch
    require_abstract: bool = True
    exclude_retracted: bool = True
    # Depth per class (CoMeta Table 2 default): D1 PubMed abstract (primary research), D2 PMC review
    # (Review, Systematic Review, Meta-Analysis, Practice Guideline with a PMCID), D3 other PMC full text.
    depth_d1: Literal["abstract", "fulltext"] = "abstract"
    depth_d2: Literal["abstract", "fulltext"] = "fulltext"
    depth_d3: Literal["abstract", "fulltext"] = "abstract"

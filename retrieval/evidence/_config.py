"""Typed configuration of the evidence policy (``COMETA_EVIDENCE__*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "EvidenceSettings",
]


class EvidenceSettings(BaseModel):
    """Fusion and metadata policy (CHSDR stage 4): RRF, filters and retrieval depth per document class."""

    rrf_k: int = Field(
        default=60,
        ge=1,
        description="Reciprocal rank fusion constant k of every fusion: the Boolean and dense arms, the four "
        "arms within a collection, and the ranking across sources.",
    )
    boolean_weight: float = Field(default=1.0, ge=0, description="RRF weight of the Boolean (Adapt-E) arm.")
    dense_weight: float = Field(default=1.0, ge=0, description="RRF weight of the dense arm.")
    boolean_weight_vague: float = Field(
        default=1.0,
        ge=0,
        description="RRF weight of the Boolean arm instead of `boolean_weight` when the question's plan "
        "recognised fewer than two clinical concepts (its ladder is then the question's plain words, 'clot "
        "AND home AND daily AND belly'). 1.0, the default, changes nothing. 0.25 put the trial in the fused "
        "top 10 for 104 of 110 world dev questions instead of 92, but answered more unanswerable ones and "
        "lost the absent-phrase signal on a bundled near miss ('tongue splitting' for breast cancer): "
        "eval/expected/relevance.yaml.",
    )
    tie_break: Literal["dense", "boolean"] = Field(
        default="dense",
        description="Arm whose hit goes first when two fused scores tie exactly (with equal weights: a hit "
        "only the Boolean arm returned and one only the dense arm returned, at the same rank). `dense` "
        "(chosen on the dev sets, where the dense arm alone ranks the gold higher than the Boolean arm "
        "alone) or `boolean` (the order before; docs/history/performance-notes.md).",
    )
    max_candidates: int = Field(
        default=50, ge=1, le=10_000, description="Fused PMIDs fetched in one EFetch batch."
    )
    require_abstract: bool = Field(default=True, description="Drop records without an abstract.")
    exclude_retracted: bool = Field(default=True, description="Drop retracted publications.")
    prefer_updates: bool = Field(
        default=True,
        description="Drop a review when a newer version of it (PubMed's UpdateIn) is also among the "
        "candidates kept; the newer version takes its place in the ranking.",
    )
    depth_d1: Literal["abstract", "fulltext"] = Field(
        default="abstract",
        description="Depth of D1, PubMed primary research (CoMeta Table 2 default: the abstract).",
    )
    depth_d2: Literal["abstract", "fulltext"] = Field(
        default="fulltext",
        description="Depth of D2, PMC reviews (Review, Systematic Review, Meta-Analysis, Practice Guideline "
        "with a PMCID; default: the full text).",
    )
    depth_d3: Literal["abstract", "fulltext"] = Field(
        default="abstract", description="Depth of D3, other PMC full texts (default: the abstract)."
    )

"""Searching: Adapt-E (the Boolean ladder against ESearch, stopping early), rank fusion (RRF) of the
Boolean and dense arms, and why a search found nothing (the zero-hit cause)."""

from ._adapte import AdaptE, AdaptEResult, MatchedTier, TierResult, union_query
from ._config import AdaptESettings
from ._fusion import BOOLEAN_ARM, DENSE_ARM, ArmHit, FusedHit, Provenance, boolean_hits, dense_hits, fuse, rrf
from ._zerohit import (
    ZERO_HIT_CAUSES,
    ZeroHitCause,
    count_zero_hit,
    error_cause,
    pubmed_warnings,
    zero_hit_cause,
)

__all__ = [
    "BOOLEAN_ARM",
    "DENSE_ARM",
    "ZERO_HIT_CAUSES",
    "AdaptE",
    "AdaptEResult",
    "AdaptESettings",
    "ArmHit",
    "FusedHit",
    "MatchedTier",
    "Provenance",
    "TierResult",
    "ZeroHitCause",
    "boolean_hits",
    "count_zero_hit",
    "dense_hits",
    "error_cause",
    "fuse",
    "pubmed_warnings",
    "rrf",
    "union_query",
    "zero_hit_cause",
]

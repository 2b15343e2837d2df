"""Searching: Adapt-E (the Boolean ladder against ESearch, stopping early) and rank fusion (RRF) of the
Boolean and dense arms."""

from ._adapte import AdaptE, AdaptEResult, MatchedTier, TierResult, union_query
from ._config import AdaptESettings
from ._fusion import BOOLEAN_ARM, DENSE_ARM, ArmHit, FusedHit, Provenance, boolean_hits, dense_hits, fuse, rrf

__all__ = [
    "BOOLEAN_ARM",
    "DENSE_ARM",
    "AdaptE",
    "AdaptEResult",
    "AdaptESettings",
    "ArmHit",
    "FusedHit",
    "MatchedTier",
    "Provenance",
    "TierResult",
    "boolean_hits",
    "dense_hits",
    "fuse",
    "rrf",
    "union_query",
]

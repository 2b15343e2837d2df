"""Prometheus instruments of Adapt-E (exposed at ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter

__all__ = [
    "ADAPTE_FINAL_ZERO_HIT",
    "ADAPTE_TIERS",
    "ADAPTE_ZERO_HIT",
    "ZERO_HITS",
]

ADAPTE_TIERS = Counter(
    "cometa_adapte_tier_runs_total",
    "Adapt-E tiers executed, by tier and outcome (hit/zero/error)",
    ["tier", "outcome"],
)


ADAPTE_ZERO_HIT = Counter("cometa_adapte_zero_hit_total", "ESearch zero-hits per Adapt-E tier", ["tier"])


ADAPTE_FINAL_ZERO_HIT = Counter(
    "cometa_adapte_final_zero_hit_total",
    "Questions for which every tier and the relaxed fallback found nothing",
)


ZERO_HITS = Counter(
    "cometa_zero_hit_total",
    "Questions that ended with no documents, by cause (retrieval.search.ZERO_HIT_CAUSES)",
    ["cause"],
)

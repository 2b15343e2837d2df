"""Prometheus instruments of the retrieval stage (exposed by the service at ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = [
    "ADAPTE_FINAL_ZERO_HIT",
    "ADAPTE_TIERS",
    "ADAPTE_ZERO_HIT",
    "EUTILS_CACHE",
    "EUTILS_LATENCY",
    "EUTILS_REQUESTS",
    "EUTILS_RETRIES",
    "FALLBACKS",
    "QUESTIONS",
]

EUTILS_REQUESTS = Counter(
    "cometa_eutils_requests_total",
    "E-utilities HTTP requests sent, by endpoint and outcome",
    ["endpoint", "outcome"],
)
EUTILS_RETRIES = Counter(
    "cometa_eutils_retries_total", "E-utilities retries, by endpoint and reason", ["endpoint", "reason"]
)
EUTILS_LATENCY = Histogram(
    "cometa_eutils_request_seconds",
    "Latency of one E-utilities HTTP request (without limiter wait)",
    ["endpoint"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
EUTILS_CACHE = Counter(
    "cometa_eutils_cache_total", "E-utilities client cache lookups", ["endpoint", "result"]
)

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
QUESTIONS = Counter("cometa_questions_total", "Questions understood, by rewriting path", ["path"])
FALLBACKS = Counter(
    "cometa_rewriter_fallback_total", "Deterministic-rewriter fallbacks, by reason", ["reason"]
)

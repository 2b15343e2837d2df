"""Prometheus instruments of the E-utilities client (exposed at ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = [
    "EUTILS_CACHE",
    "EUTILS_LATENCY",
    "EUTILS_REQUESTS",
    "EUTILS_RETRIES",
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

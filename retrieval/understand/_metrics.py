"""Prometheus instruments of query understanding (exposed at ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter

__all__ = [
    "FALLBACKS",
    "LANGUAGES",
    "QUESTIONS",
]

QUESTIONS = Counter("cometa_questions_total", "Questions understood, by rewriting path", ["path"])


FALLBACKS = Counter(
    "cometa_rewriter_fallback_total", "Deterministic-rewriter fallbacks, by reason", ["reason"]
)
LANGUAGES = Counter(
    "cometa_question_languages_total", "Questions by detected language (ISO 639-1)", ["language"]
)

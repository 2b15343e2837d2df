"""Understanding a patient's question: PHI scrubbing, the deterministic and LLM rewriters, and the query plan
(a ladder of Boolean queries, strict to relaxed, with date limits)."""

from ._language import LANGUAGE_NAMES, DetectedLanguage, detect_language, language_reply
from ._phi import (
    PHI_KINDS,
    PhiLeakError,
    ScrubResult,
    assert_no_phi,
    hash_text,
    scrub,
    scrub_any_case,
    strip_phi_from_query,
)
from ._plan import MAX_LADDER, MIN_LADDER, Concept, DateLimits, Intent, Pico, QueryPlan
from ._rewrite import DeterministicRewriter, spell_correct
from ._scope import (
    SCOPE_MESSAGES,
    Scope,
    ScopeReason,
    assess_scope,
    capitalised_words,
    looks_like_injection,
)
from ._understand import QueryUnderstander, Understanding, check_ladder_query

__all__ = [
    "LANGUAGE_NAMES",
    "MAX_LADDER",
    "MIN_LADDER",
    "PHI_KINDS",
    "SCOPE_MESSAGES",
    "Concept",
    "DateLimits",
    "DetectedLanguage",
    "DeterministicRewriter",
    "Intent",
    "PhiLeakError",
    "Pico",
    "QueryPlan",
    "QueryUnderstander",
    "Scope",
    "ScopeReason",
    "ScrubResult",
    "Understanding",
    "assert_no_phi",
    "assess_scope",
    "capitalised_words",
    "check_ladder_query",
    "detect_language",
    "hash_text",
    "language_reply",
    "looks_like_injection",
    "scrub",
    "scrub_any_case",
    "spell_correct",
    "strip_phi_from_query",
]

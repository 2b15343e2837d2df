"""Understanding a patient's question: PHI scrubbing, the deterministic and LLM rewriters, and the query plan
(a ladder of Boolean queries, strict to relaxed, with date limits)."""

from ._phi import PHI_KINDS, PhiLeakError, ScrubResult, assert_no_phi, hash_text, scrub, strip_phi_from_query
from ._plan import MAX_LADDER, MIN_LADDER, Concept, DateLimits, Intent, Pico, QueryPlan
from ._rewrite import DeterministicRewriter, spell_correct
from ._understand import QueryUnderstander, Understanding, check_ladder_query

__all__ = [
    "MAX_LADDER",
    "MIN_LADDER",
    "PHI_KINDS",
    "Concept",
    "DateLimits",
    "DeterministicRewriter",
    "Intent",
    "PhiLeakError",
    "Pico",
    "QueryPlan",
    "QueryUnderstander",
    "ScrubResult",
    "Understanding",
    "assert_no_phi",
    "check_ladder_query",
    "hash_text",
    "scrub",
    "spell_correct",
    "strip_phi_from_query",
]

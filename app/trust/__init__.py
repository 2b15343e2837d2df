"""Trust: the evidence gate that decides whether the retrieved evidence answers a question.

Its signals (:func:`evidence_signals`, :func:`text_signals`) with their source-wide count lookups
(:class:`AbsenceCounter`), the verdict (:func:`assess_evidence`) and its settings (:class:`GateSettings`,
``COMETA_GATE__*``). Every answer path asks here before any answer is written.
"""

from ._counts import AbsenceCounter
from ._settings import GateSettings
from ._signals import (
    EvidenceSignals,
    Tier,
    coverage_units,
    evidence_signals,
    gate_question_words,
    phrase_candidates,
    rare_words,
    text_signals,
)
from ._verdict import INSUFFICIENT_EVIDENCE_TEXT, EvidenceVerdict, Verdict, assess_evidence, gate_checks

__all__ = [
    "INSUFFICIENT_EVIDENCE_TEXT",
    "AbsenceCounter",
    "EvidenceSignals",
    "EvidenceVerdict",
    "GateSettings",
    "Tier",
    "Verdict",
    "assess_evidence",
    "coverage_units",
    "evidence_signals",
    "gate_checks",
    "gate_question_words",
    "phrase_candidates",
    "rare_words",
    "text_signals",
]

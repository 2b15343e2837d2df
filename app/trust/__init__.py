"""Trust: the evidence gate that decides whether the retrieved evidence answers a question.

Its signals (:func:`evidence_signals`, :func:`text_signals`) with their source-wide count lookups
(:class:`AbsenceCounter`), the relevance decision per study (:func:`judge_relevance`), the verdict
(:func:`assess_evidence`), the step that weighs a source's evidence with both (:func:`weigh_evidence`),
the settings (:class:`GateSettings`, ``COMETA_GATE__*``) and the calibration of their dense thresholds for
the configured encoder (:class:`Calibration`, :func:`resolve_calibration`). Every answer path asks here
before any answer is written.
"""

from ._calibration import (
    DENSE_THRESHOLDS,
    Calibration,
    CalibrationError,
    CalibrationPair,
    calibration_pairs,
    compute_reference,
    derive_calibration,
    load_reference,
    pair_similarities,
    resolve_calibration,
)
from ._counts import AbsenceCounter
from ._llm_relevance import LLMRelevance
from ._relevance import (
    Focus,
    StudyRelevance,
    judge_relevance,
    question_focus,
    relevance_of_texts,
    study_text,
)
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
from ._weigh import Weighed, certainty, weigh_evidence

__all__ = [
    "DENSE_THRESHOLDS",
    "INSUFFICIENT_EVIDENCE_TEXT",
    "AbsenceCounter",
    "Calibration",
    "CalibrationError",
    "CalibrationPair",
    "EvidenceSignals",
    "EvidenceVerdict",
    "Focus",
    "GateSettings",
    "LLMRelevance",
    "StudyRelevance",
    "Tier",
    "Verdict",
    "Weighed",
    "assess_evidence",
    "calibration_pairs",
    "certainty",
    "compute_reference",
    "coverage_units",
    "derive_calibration",
    "evidence_signals",
    "gate_checks",
    "gate_question_words",
    "judge_relevance",
    "load_reference",
    "pair_similarities",
    "phrase_candidates",
    "question_focus",
    "rare_words",
    "relevance_of_texts",
    "resolve_calibration",
    "study_text",
    "text_signals",
    "weigh_evidence",
]

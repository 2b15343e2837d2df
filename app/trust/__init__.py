"""Trust: the evidence gate that decides whether the retrieved evidence answers a question.

Its signals (:func:`evidence_signals`, :func:`text_signals`) with their source-wide count lookups
(:class:`AbsenceCounter`), the relevance decision per study (:func:`judge_relevance`), the verdict
(:func:`assess_evidence`), the step that weighs a source's evidence with both (:func:`weigh_evidence`) and
the settings (:class:`GateSettings`, ``COMETA_GATE__*``). Every answer path asks here before any answer
is written.
"""

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
    "INSUFFICIENT_EVIDENCE_TEXT",
    "AbsenceCounter",
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
    "certainty",
    "coverage_units",
    "evidence_signals",
    "gate_checks",
    "gate_question_words",
    "judge_relevance",
    "phrase_candidates",
    "question_focus",
    "rare_words",
    "relevance_of_texts",
    "study_text",
    "text_signals",
    "weigh_evidence",
]

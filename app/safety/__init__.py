"""The safety step: the first thing the question flow does, for every route and every source combination.

An emergency, a risk of suicide or self-harm, or a request for a lethal amount or a means of self-harm is
answered with guidance (call the emergency number, a crisis line, the emergency department), in the
question's language, before and instead of any search or model answer. :func:`assess_safety` decides
offline from the red-flag table (:data:`RED_FLAGS`, documented in docs/safety.md) and the urgency model
(:mod:`app.safety._model`, trained on the blind sets' dev splits); nothing of the question is logged or sent
anywhere to decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._detect import Finding, detect, normalise
from ._guidance import GUIDANCE_LANGUAGES, SafetySettings, guidance
from ._model import UrgencyModel, load_model
from ._patterns import RED_FLAGS, Kind, RedFlag
from ._triage import SafetyTriage, TriageOutput

__all__ = [
    "GUIDANCE_LANGUAGES",
    "NOT_URGENT",
    "RED_FLAGS",
    "Finding",
    "Kind",
    "RedFlag",
    "SafetyDecision",
    "SafetySettings",
    "SafetyTriage",
    "TriageOutput",
    "UrgencyModel",
    "assess_safety",
    "detect",
    "guidance",
    "load_model",
    "normalise",
    "urgent_decision",
]


@dataclass(frozen=True, slots=True)
class SafetyDecision:
    """Whether a question is urgent; if so its kind, the red flags that decided it and the guidance."""

    urgent: bool
    kind: Kind | None = None
    conditions: tuple[str, ...] = ()
    message: str | None = None
    language: str = "en"


NOT_URGENT = SafetyDecision(False)


def urgent_decision(
    kind: Kind, conditions: tuple[str, ...], language: str, settings: SafetySettings
) -> SafetyDecision:
    """An urgent decision with its guidance (the red flags', or the LLM triage's: ``("llm_triage",)``)."""
    return SafetyDecision(True, kind, conditions, guidance(kind, language, settings), language)


def assess_safety(question: str, language: str, settings: SafetySettings) -> SafetyDecision:
    """The offline decision on ``question``: the red flags that count, else the urgency model, which may add
    an urgent decision the table missed, never remove one (it cannot weigh "a 6 week old" against "a fever"
    as the table's companions do); ``language`` (ISO 639-1) picks the guidance's language."""
    found = detect(question)
    if found:
        kind = found[0].kind  # detect() puts the most pressing kind first
        conditions = tuple(dict.fromkeys(f.condition for f in found))
        return urgent_decision(kind, conditions, language, settings)
    model = load_model()
    guess = model.urgent_kind(model.probabilities(question))
    if guess is None:
        return SafetyDecision(False, language=language)
    return urgent_decision(guess, ("urgency_model",), language, settings)

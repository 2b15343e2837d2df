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
from typing import Final

from ._detect import Finding, detect, normalise, told_as_over
from ._guidance import GUIDANCE_LANGUAGES, SafetySettings, guidance
from ._model import UrgencyModel, load_model
from ._patterns import RED_FLAGS, Kind, RedFlag
from ._triage import SafetyTriage, TriageOutput

__all__ = [
    "GUIDANCE_LANGUAGES",
    "MODEL_CONDITION",
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
    "told_as_over",
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


# The condition named by a decision of the urgency model (the red flags name their own).
MODEL_CONDITION: Final = "urgency_model"
# Red flags decided by a combination (a fever *and* an infant under three months): what a bag of n-grams
# weighs worst, so the model overrules them only when it is all but sure (below MODEL_VETO_COMBINED).
# The warning signs are one too: two danger signs, or a strong one beside its context (cancer and weak legs).
_COMBINED: Final = frozenset(f.condition for f in RED_FLAGS if f.with_) | {"warning_signs"}
# Below this P(urgent) the model overrules an emergency red flag of a single cue: the
# table's false alarms on fresh batches were history, prevention and mild symptoms told in an emergency's
# words. Leaving one batch out (batches 3-7) it removed 3-7 points of false urgency and no urgent item.
MODEL_VETO = 0.1
# The same for a combination's red flag ("what temperature counts as a fever on chemo? I start on Monday"):
# leaving one batch out (batches 3-8, trained with 10) 0.05 removed 2 points of false urgency and no urgent
# item; 0.1 lost a fever on chemotherapy. Also for two emergency conditions found together (batches 3-21:
# one more false alarm than 0.1). Self-harm and means are never overruled.
MODEL_VETO_COMBINED = 0.05


# Never overruled either: a poisoning or a swallowed object, and a blow to the head on a blood thinner, where
# "he looks fine and is playing" is no reassurance (the harm comes hours later), and where the model learnt
# exactly that wording as a sign of calm (batch 14's read missed a toddler who drank a bottle of paracetamol).
_DELAYED: Final = frozenset(
    {"swallowed_hazard", "child_medicine_ingestion", "carbon_monoxide", "head_injury"}
)


# Below this P(urgent) a self-harm red flag falls when the message tells it as over and the writer well now
# (:func:`app.safety._detect.told_as_over`): both must agree. Leaving one batch out (3-9, 11, 13-15, 17) the
# disguised self-harm messages the model read worst scored 0.021-0.038, and none of them is told as over.
SELF_HARM_OVER_VETO = 0.1


def counted(found: list[Finding], p_urgent: float, informed: bool, *, over: bool = False) -> list[Finding]:
    """The red flags of ``found`` that stand against the urgency model's ``p_urgent``: an emergency flag the
    model finds very unlikely is dropped (not a poisoning's: _DELAYED), if the question was long enough for
    the model to judge (``informed``: "my 6 week old has a fever of 38.5" is too short, the model gives it
    0.01); a self-harm flag only when the message also tells it as over (``over``, from
    :func:`told_as_over`) and the model finds it unlikely; means always stand."""
    if not informed or p_urgent >= max(MODEL_VETO, SELF_HARM_OVER_VETO):
        return found
    emergency_veto = p_urgent < MODEL_VETO
    veto_combined = p_urgent < MODEL_VETO_COMBINED
    self_harm_veto = over and p_urgent < SELF_HARM_OVER_VETO
    # Two emergency conditions found at once ("crushing chest pain and is sweating": a heart attack and the
    # warning signs) agree like a combination's cues do, so they fall only as a combination would.
    emergencies = {f.condition for f in found if f.kind == "emergency"}
    several = len(emergencies) >= 2
    # The warning signs and a named emergency, each found on its own evidence, stand against the model: it
    # reads a past event told beside them as the story ("dad has crushing chest pain and is sweating, he had
    # a stroke in 2019": P 0.001). Dev: no urgent item gained (all caught), ten look-alikes more of 4,315.
    agreeing = several and "warning_signs" in emergencies

    def stands(f: Finding) -> bool:
        if f.kind == "lethal_means":
            return True
        if f.kind == "self_harm":
            return not self_harm_veto
        combined = f.condition in _COMBINED or several
        return not emergency_veto or f.condition in _DELAYED or agreeing or (combined and not veto_combined)

    return [f for f in found if stands(f)]


def assess_safety(question: str, language: str, settings: SafetySettings) -> SafetyDecision:
    """The offline decision on ``question``: the red flags that count, then the urgency model, which adds an
    urgent decision the table missed, and may overrule an emergency red flag it finds very unlikely (never
    self-harm or means; a combination such as an infant's fever only when all but sure); ``language``
    (ISO 639-1) picks the guidance's language."""
    model = load_model()
    p, enough = model.read(question)
    found, p_urgent = detect(question), 1.0 - float(p[0])
    # Read only where it can matter: a self-harm flag the model finds unlikely (not on every question).
    over = (
        p_urgent < SELF_HARM_OVER_VETO
        and any(f.kind == "self_harm" for f in found)
        and told_as_over(question)
    )
    found = counted(found, p_urgent, enough, over=over)
    if found:
        kind = found[0].kind  # detect() puts the most pressing kind first
        conditions = tuple(dict.fromkeys(f.condition for f in found))
        return urgent_decision(kind, conditions, language, settings)
    guess = model.urgent_kind(p)
    if guess is None:
        return SafetyDecision(False, language=language)
    return urgent_decision(guess, (MODEL_CONDITION,), language, settings)

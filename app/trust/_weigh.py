"""Weighing one source's evidence: the studies that address the question, then the verdict from them alone,
with how sure it is said the way a patient can read it.

:func:`weigh_evidence` is the one step every answer path takes between retrieval and the answer: the
relevance decision per study (:mod:`app.trust._relevance`) keeps what may be cited; the gate
(:func:`~app.trust._verdict.assess_evidence`) decides on the kept studies only; and :func:`certainty` caps
the verdict by what the kept studies are — their designs, sizes and years — and says so first among the
reasons ("low certainty: one cohort study of 344 patients, 2009"). A study with an expression of concern or
a partial retraction is cited with its notice but does not raise the certainty.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from retrieval.evidence import EvidenceDoc, StudyGrade, grade_study

from ._relevance import StudyRelevance
from ._settings import GateSettings
from ._signals import EvidenceSignals
from ._verdict import EvidenceVerdict, Verdict, assess_evidence

__all__ = ["Weighed", "certainty", "weigh_evidence"]

T = TypeVar("T")

_ORDER: dict[Verdict, int] = {"none": 0, "weak": 1, "moderate": 2, "strong": 3}
_CERTAINTY: dict[Verdict, str] = {"strong": "higher", "moderate": "moderate", "weak": "low", "none": "no"}
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
_SYNTHESIS = frozenset({"meta-analysis", "systematic review"})
_TRIALS = frozenset({"randomised trial"})
_CONTROLLED = frozenset({"clinical trial", "cohort study", "case-control study"})


@dataclass(frozen=True, slots=True)
class Weighed(Generic[T]):
    """What one source's evidence is worth: the items that address the question (what may be cited, in
    rank order), the decision on every item retrieved, and the verdict."""

    kept: tuple[T, ...]
    relevance: tuple[StudyRelevance, ...]
    verdict: EvidenceVerdict


def _plural(design: str, n: int) -> str:
    if n == 1:
        return design
    if design.endswith("analysis"):
        return design[: -len("analysis")] + "analyses"
    if design.endswith("study"):
        return design[:-1] + "ies"
    return design + "s"


def certainty(docs: Sequence[EvidenceDoc]) -> tuple[Verdict, str]:
    """The highest verdict the designs of ``docs`` (the studies that address the question) allow, and what
    they are ("one cohort study of 344 patients, 2009"): a synthesis or two randomised trials for
    ``strong``; a trial, or two controlled or cohort studies, for ``moderate``; anything else ``weak``.
    Studies under an expression of concern do not count towards it."""
    grades: list[StudyGrade] = [grade_study(d) for d in docs if not d.concern]
    designs = Counter(g.design for g in grades)
    trials = sum(designs[d] for d in _TRIALS)
    if designs.keys() & _SYNTHESIS or trials >= 2:
        cap: Verdict = "strong"
    elif trials or sum(designs[d] for d in _CONTROLLED) >= 2:
        cap = "moderate"
    else:
        cap = "weak"
    parts = [
        f"{_WORDS.get(n, str(n))} {_plural(design, n)}"
        for design, n in sorted(
            designs.items(), key=lambda kv: (min(g.rank for g in grades if g.design == kv[0]), kv[0])
        )
    ]
    patients = sum(g.patients or 0 for g in grades)
    years = sorted(g.year for g in grades if g.year is not None)
    detail = ", ".join(parts) or "no graded study"
    if patients:
        detail += f" of {patients:,} patients in all" if len(grades) > 1 else f" of {patients:,} patients"
    if years:
        detail += f", {years[0]}" if years[0] == years[-1] else f", {years[0]}-{years[-1]}"
    concern = len(docs) - len(grades)
    if concern:
        detail += f" ({concern} more under an expression of concern, not counted)"
    return cap, detail


def _not_about(relevance: Sequence[StudyRelevance]) -> str:
    missing = Counter(m for r in relevance for m in r.missing)
    n = len(relevance)
    head = f"none of the {n} studies found" if n > 1 else "the one study found"
    if missing:
        return (
            f"{head} is about the question: {'they do' if n > 1 else 'it does'} not mention "
            + (missing.most_common(1)[0][0])
        )
    return f"{head} is about the question"


def weigh_evidence(
    items: Sequence[T],
    relevance: Sequence[StudyRelevance],
    signals_of: Callable[[Sequence[T]], EvidenceSignals],
    settings: GateSettings,
    studies: Callable[[Sequence[T]], Sequence[EvidenceDoc]] | None = None,
) -> Weighed[T]:
    """Keep the ``items`` whose decision (``relevance``, in the same order) says they address the question;
    the verdict on the kept ones (``signals_of``); capped by :func:`certainty` of ``studies(kept)`` when the
    items are studies (a collection's texts have no design to grade)."""
    if len(relevance) != len(items):
        raise ValueError("one relevance decision per item")
    if settings.enabled and settings.relevance:
        kept = [item for item, r in zip(items, relevance, strict=True) if r.addresses]
    else:
        kept = list(items)
    if items and not kept:
        verdict = EvidenceVerdict("none", signals_of(items), (_not_about(relevance),))
        return Weighed((), tuple(relevance), verdict)
    # How specific the relevance decision was: a kept study naming the question's condition and treatment
    # (two concepts or more) is about it whatever share of a long lay question's words it uses.
    named = 0
    if settings.enabled and settings.relevance:
        named = max((len(r.named) for r in relevance if r.addresses and r.judge == "concepts"), default=0)
    signals = dataclasses.replace(signals_of(kept), named_concepts=named)
    verdict = assess_evidence(signals, settings)
    if studies is not None and not verdict.abstain and settings.enabled:
        cap, detail = certainty(studies(kept))
        level = verdict.verdict if _ORDER[verdict.verdict] <= _ORDER[cap] else cap
        said = f"{_CERTAINTY[level]} certainty: {detail}"
        verdict = EvidenceVerdict(level, verdict.signals, (said, *verdict.reasons))
    return Weighed(tuple(kept), tuple(relevance), verdict)

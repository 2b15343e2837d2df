"""The evidence gate's verdict: does the retrieved evidence answer the question? One verdict an answer.

Every answer path (the LLM, the extractive answer, each source's answer across sources) is decided here
before any answer is written: :func:`assess_evidence` turns a source's signals
(:class:`~app.trust._signals.EvidenceSignals`) into a verdict with the thresholds of :class:`GateSettings`.
Verdicts: ``none`` (below the thresholds: the answer is ``insufficient_evidence``, no citations, no LLM call),
``weak``, ``moderate``, ``strong``. The thresholds are calibrated on the dev split of the world's gold sets
for the offline models (``cometa eval calibrate-gate``); recalibrate for MedCPT or your cross-encoder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ._settings import GateSettings
from ._signals import EvidenceSignals

__all__ = ["INSUFFICIENT_EVIDENCE_TEXT", "EvidenceVerdict", "Verdict", "assess_evidence", "gate_checks"]

# How well the evidence answers the question: "none" means the service abstained.
Verdict = Literal["strong", "moderate", "weak", "none"]

INSUFFICIENT_EVIDENCE_TEXT = (
    "I could not find studies that answer this question, so I cannot give an answer from the literature. "
    "Here is what I searched: {searched}. Please discuss the question with your care team."
)


@dataclass(frozen=True, slots=True)
class EvidenceVerdict:
    verdict: Verdict
    signals: EvidenceSignals
    reasons: tuple[str, ...]  # why the verdict is what it is, in plain words

    @property
    def abstain(self) -> bool:
        return self.verdict == "none"

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "signals": self.signals.to_json(), "reasons": list(self.reasons)}


_Check = Callable[[EvidenceSignals, GateSettings], str | None]


def _dense_floor(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    dense = signals.dense_top
    floor = (
        min(settings.min_dense_strict, settings.min_dense) if signals.tier == "strict" else settings.min_dense
    )
    if dense is not None and dense < floor:
        return f"the closest study is only loosely related (similarity {dense:.2f})"
    return None


# A kept study naming this many of the question's concepts lowers the coverage bar (min_coverage_named).
_NAMED_ENOUGH = 2


def _coverage(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    floor = settings.min_coverage
    if signals.named_concepts >= _NAMED_ENOUGH:
        floor = min(floor, settings.min_coverage_named)
    if signals.coverage < floor:
        return f"the studies mention {signals.coverage:.0%} of the question's words"
    return None


def _generic_tier(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    dense = signals.dense_top
    if signals.tier in ("generic", "none") and (dense is None or dense < settings.min_dense_generic):
        return "only the generic last-resort search matched"
    return None


def _absent_words(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    # A word the literature has never used abstains unless the evidence is close anyway (an odd lay word in
    # a long story), but never when it is a large share of what the question asks (a nonexistent drug
    # compared with a real one: the real one makes the similarity high).
    dense = signals.dense_top
    close = dense is not None and dense >= settings.absent_max_dense
    if signals.absent_terms and (not close or signals.absent_share >= settings.absent_min_share):
        return f"{signals.absent_terms} word(s) of the question appear in no study at all"
    return None


def _absent_technical(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    # A technical term (not an English word) that no study of the whole source uses is what the question is
    # about (an unknown drug compared with a known one): close evidence about the known one does not answer.
    dense, limit = signals.dense_top, settings.absent_technical_max_dense
    if signals.absent_technical and limit > -1 and (dense is None or dense < limit):
        return f"{signals.absent_technical} term(s) of the question appear in no study at all"
    return None


def _absent_phrases(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    # Only weighed against a similarity: without one, a lay phrase the literature words differently
    # ("pancreas mass" for "pancreatic mass") is no reason to abstain.
    dense = signals.dense_top
    if signals.absent_phrases and dense is not None and dense < settings.absent_phrase_max_dense:
        return f"{signals.absent_phrases} phrase(s) of the question appear together in no study"
    return None


def _rerank(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    rerank = signals.rerank_top
    if settings.min_rerank is not None and rerank is not None and rerank < settings.min_rerank:
        return f"the best passage scores {rerank:.2f} with the cross-encoder"
    return None


# Each abstention check and the GateSettings fields it reads: assess_evidence abstains when any check gives
# a reason; the calibration evaluates each check once per distinct value of its own fields.
_CHECKS: tuple[tuple[str, tuple[str, ...], _Check], ...] = (
    ("dense", ("min_dense", "min_dense_strict"), _dense_floor),
    ("coverage", ("min_coverage", "min_coverage_named"), _coverage),
    ("generic", ("min_dense_generic",), _generic_tier),
    ("absent_words", ("absent_max_dense", "absent_min_share"), _absent_words),
    ("absent_technical", ("absent_technical_max_dense",), _absent_technical),
    ("absent_phrases", ("absent_phrase_max_dense",), _absent_phrases),
    ("rerank", ("min_rerank",), _rerank),
)


def gate_checks() -> tuple[tuple[str, tuple[str, ...], _Check], ...]:
    """The gate's abstention checks: (name, the GateSettings fields it reads, check). A check returns the
    reason to abstain in plain words, or None. :func:`assess_evidence` abstains when any gives a reason."""
    return _CHECKS


def assess_evidence(signals: EvidenceSignals, settings: GateSettings) -> EvidenceVerdict:
    """The verdict for ``signals`` under ``settings``' thresholds (the one gate every answer path uses)."""
    if not settings.enabled:
        return EvidenceVerdict("weak" if signals.documents else "none", signals, ("the gate is off",))
    if not signals.documents:
        return EvidenceVerdict("none", signals, ("no documents were found",))
    reasons = [reason for _, _, check in _CHECKS if (reason := check(signals, settings)) is not None]
    if reasons:
        return EvidenceVerdict("none", signals, tuple(reasons))
    dense = signals.dense_top
    strong_dense = dense is None or dense >= settings.strong_dense
    if signals.tier == "strict" and strong_dense and signals.coverage >= settings.strong_coverage:
        return EvidenceVerdict(
            "strong", signals, ("a strict search matched and the studies cover the question",)
        )
    if strong_dense or signals.coverage >= settings.strong_coverage:
        return EvidenceVerdict("moderate", signals, ("related studies were found",))
    return EvidenceVerdict("weak", signals, ("the studies are only partly related to the question",))

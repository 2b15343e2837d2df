"""Wire models of trustworthy answers: the evidence gate's verdict and what was kept out of an answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.safety import Kind as UrgentKind
from app.trust import Verdict

__all__ = ["EvidenceVerdictOut", "SafetyOut", "UrgentKind", "Verdict"]


class SafetyOut(BaseModel):
    """The safety step's decision (``app.safety``): an urgent question is answered with ``message`` only."""

    urgent: bool = Field(description="true: an emergency, self-harm or a request for means; mode is 'urgent'")
    kind: UrgentKind | None = Field(default=None, description="emergency | self_harm | lethal_means")
    message: str | None = Field(default=None, description="the guidance, in the question's language")
    conditions: list[str] = Field(
        default_factory=list, description="the red flags that decided it (names of docs/safety.md's table)"
    )


class EvidenceVerdictOut(BaseModel):
    """The relevance and sufficiency gate's verdict on the evidence of one answer (``app.trust``)."""

    verdict: Verdict = Field(description="strong | moderate | weak | none (none: the answer abstained)")
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="what the gate measured: documents, dense_top, rerank_top, tier, coverage",
    )
    reasons: list[str] = Field(default_factory=list, description="why, in plain words")

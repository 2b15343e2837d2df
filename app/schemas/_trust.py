"""Wire models of trustworthy answers: the evidence gate's verdict and what was kept out of an answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.trust import Verdict

__all__ = ["EvidenceVerdictOut", "Verdict"]


class EvidenceVerdictOut(BaseModel):
    """The relevance and sufficiency gate's verdict on the evidence of one answer (``app.trust``)."""

    verdict: Verdict = Field(description="strong | moderate | weak | none (none: the answer abstained)")
    signals: dict[str, Any] = Field(
        default_factory=dict,
        description="what the gate measured: documents, dense_top, rerank_top, tier, coverage",
    )
    reasons: list[str] = Field(default_factory=list, description="why, in plain words")

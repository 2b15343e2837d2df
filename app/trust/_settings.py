"""The evidence gate's settings: its thresholds and how many count lookups it may send (COMETA_GATE__*)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["GateSettings"]


class GateSettings(BaseModel):
    """The relevance and sufficiency gate (``COMETA_GATE__*``; :mod:`app.trust`): below these thresholds the
    answer is ``insufficient_evidence``, with no citations and no LLM call.

    The defaults are calibrated for the offline models (MiniLM-L6 dense encoder, bi-encoder rerank) on the
    dev split of the world's gold sets (``cometa eval calibrate-gate`` measures them again where those sets
    are). The dense thresholds are on that encoder's cosine scale: for another encoder (MedCPT, your own)
    ``calibration="auto"`` derives them at start-up from the calibration set shipped in the package
    (:mod:`app.trust._calibration`; docs/trust.md has the procedure), and /readyz names what is in force.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Off: every non-empty evidence set is answered (weak).")
    relevance: bool = Field(
        default=True,
        description="Judge each study against the question's concepts before it may be cited or counted "
        "(the condition and the treatment asked about); off: every retrieved study counts.",
    )
    relevance_min_words: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="The relevance decision also asks a study to use this share of the question's content "
        "words, each weighted by its rarity in everyday English (0: off).",
    )
    relevance_llm: bool = Field(
        default=True,
        description="With an LLM configured: one batched relevance call decides per study (the offline "
        "concept match stands where it fails or is silent).",
    )
    relevance_timeout_s: float = Field(
        default=20.0,
        gt=0,
        le=120,
        description="The relevance call's time limit; past it the offline decision.",
    )
    calibration: str = Field(
        default="auto",
        description="Where the dense thresholds (min_dense, min_dense_strict, min_dense_generic, "
        "absent_max_dense, strong_dense, absent_phrase_max_dense, absent_technical_max_dense; MiniLM-L6 "
        "cosine scale) come from: profile (as set: for the encoder they were measured for; the offline "
        "profile), auto (derived at start-up for the configured encoder from the calibration set shipped "
        "in the package; as set for MiniLM-L6 itself; one set explicitly still wins) or the path of a JSON "
        "file of thresholds. /readyz names the one in force.",
    )
    min_dense: float = Field(
        default=0.40,
        description="Abstain below this best dense similarity (question vs document).",
    )
    min_dense_strict: float = Field(
        default=0.25,
        description="When a strict Boolean query (every concept of the question, AND-ed) matched: abstain "
        "below this similarity instead of min_dense (a general encoder can miss what the concepts prove).",
    )
    min_dense_generic: float = Field(
        default=0.50,
        description="When only the generic last-resort Boolean query matched: abstain below this similarity.",
    )
    min_coverage: float = Field(
        default=0.30,
        ge=0,
        le=1,
        description="Abstain below this share of the question's words in the top studies.",
    )
    min_coverage_named: float = Field(
        default=0.10,
        ge=0,
        le=1,
        description="Abstain below this share instead of min_coverage when a study the relevance decision "
        "kept names two or more of the question's concepts (its condition and treatment, say): a long lay "
        "question's words are not an abstract's, and the concepts already say the study is about it.",
    )
    min_rerank: float | None = Field(
        default=None,
        description="With a cross-encoder: abstain below this best passage score (None: unused).",
    )
    absent_max_dense: float = Field(
        default=0.55,
        description="A question word no document contains: abstain unless the best similarity reaches this "
        "and the words' share is below absent_min_share (-1: only the share rule, when there is a "
        "similarity; 2: always).",
    )
    absent_term_checks: int = Field(
        default=4,
        ge=0,
        le=20,
        description='Rare question words counted with one "word"[tiab] search each; 0: off.',
    )
    strong_dense: float = Field(default=0.55, description="Similarity of moderate/strong evidence.")
    strong_coverage: float = Field(
        default=0.6, ge=0, le=1, description="Coverage of moderate/strong evidence."
    )
    coverage_documents: int = Field(
        default=5, ge=1, le=100, description="Top studies whose title and abstract the coverage looks at."
    )
    absent_min_share: float = Field(
        default=2.0,
        ge=0,
        le=2,
        description="Question words no document contains, as a share of the question's concepts and words: "
        "at or above this share abstain whatever the similarity (a nonexistent drug compared with a real "
        "one); above 1: off.",
    )
    absent_phrase_checks: int = Field(
        default=4,
        ge=0,
        le=20,
        description="Two-word phrases of the question whose words the evidence has but never together, "
        'counted with one "w1 w2*"[tiab] search each (only while the similarity is below '
        "absent_phrase_max_dense); 0: off.",
    )
    absent_phrase_max_dense: float = Field(
        default=0.5,
        description="A question phrase no document contains (its words found apart): abstain unless the "
        "best similarity reaches this; -1: off.",
    )
    absent_technical_max_dense: float = Field(
        default=2.0,
        description="A question word that is not English (a drug or procedure name) and that no study of the "
        "whole source contains: abstain unless the best similarity reaches this; 2: always; -1: off.",
    )

    @field_validator("calibration")
    @classmethod
    def _calibration_mode(cls, value: str) -> str:
        if value not in ("profile", "auto") and not value.endswith(".json"):
            raise ValueError("calibration: profile, auto or the path of a .json file of thresholds")
        return value

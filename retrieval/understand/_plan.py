"""The query plan: what the Understand stage hands to Adapt-E.

Produced by the LLM rewriter (JSON-schema-constrained output) or by the deterministic rewriter; both fill
the same model, and ``source`` says which one produced the plan that ran.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

__all__ = [
    "MAX_LADDER",
    "MIN_LADDER",
    "Concept",
    "DateLimits",
    "Intent",
    "Pico",
    "QueryPlan",
    "RewriterOutput",
]

MIN_LADDER = 3
MAX_LADDER = 6
MAX_QUERY_CHARS = 480  # LLM output; llama.cpp drops grammar length limits above 500
MAX_PLAN_QUERY_CHARS = 1000  # any plan, our deterministic ladders included

Intent = Literal[
    "treatment",
    "diagnosis",
    "prognosis",
    "etiology",
    "prevention",
    "side_effects",
    "screening",
    "communication",
    "coping",
    "other",
]


class Concept(BaseModel):
    """A clinical concept in the question, normalised to MeSH where the vocabulary knows it."""

    text: str = Field(min_length=1, max_length=120)
    mesh: str | None = Field(default=None, max_length=200)
    role: Literal["population", "intervention", "comparison", "outcome", "other"] = "other"
    # The question's own words for it ("whipple" for pancreaticoduodenectomy); None when unknown (LLM plans).
    # Never serialised: the API's plan stays as it was, and the patient's words stay in the service.
    surface: str | None = Field(default=None, max_length=120, exclude=True)

    @property
    def recognised(self) -> bool:
        """The lexicon or MeSH recognised it (plain fallback words carry no MeSH and the "other" role)."""
        return bool(self.mesh) or self.role != "other"


class Pico(BaseModel):
    population: list[str] = Field(default_factory=list, max_length=8)
    intervention: list[str] = Field(default_factory=list, max_length=8)
    comparison: list[str] = Field(default_factory=list, max_length=8)
    outcome: list[str] = Field(default_factory=list, max_length=8)


class DateLimits(BaseModel):
    """Publication-year window (inclusive), pushed into ESearch as ``mindate``/``maxdate``."""

    min_year: int = Field(ge=1800, le=2100)
    max_year: int = Field(ge=1800, le=2100)

    @model_validator(mode="after")
    def _ordered(self) -> DateLimits:
        if self.min_year > self.max_year:
            raise ValueError("min_year must not be after max_year")
        return self


class RewriterOutput(BaseModel):
    """What the LLM rewriter must return (JSON-schema-constrained); see ``prompts/rewrite_query``."""

    corrected_question: str = Field(max_length=4000)
    intent: Intent = "other"
    concepts: list[Concept] = Field(default_factory=list, max_length=12)
    pico: Pico = Field(default_factory=Pico)
    date_limits: DateLimits | None = None
    # Strict conjunction first, relaxed disjunction last; each one valid PubMed syntax.
    # Each query bounded: a small model can loop inside an unbounded JSON string until max_tokens.
    ladder: list[Annotated[str, Field(max_length=MAX_QUERY_CHARS)]] = Field(
        min_length=1, max_length=MAX_LADDER
    )

    @field_validator("ladder")
    @classmethod
    def _strip(cls, ladder: list[str]) -> list[str]:
        cleaned = [q.strip() for q in ladder if q and q.strip()]
        if not cleaned:
            raise ValueError("the ladder needs at least one query")
        return cleaned


class QueryPlan(RewriterOutput):
    """A rewriter's output plus which rewriter produced it."""

    ladder: list[Annotated[str, Field(max_length=MAX_PLAN_QUERY_CHARS)]] = Field(
        min_length=1, max_length=MAX_LADDER
    )
    source: Literal["llm", "deterministic"] = "deterministic"

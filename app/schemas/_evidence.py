"""The wire schema: evidence, passages, query plans and judge results as the API and other nodes see them.

Plain models: the presenter (``app.frontends.present``) builds them from the stages' own objects, once, at
the edge, and OpenAPI (``/docs``) documents every field. Field order is the JSON key order. Node-to-node
evidence (``POST /collections/search``) is written and read with :class:`CollectionEvidenceOut`
(``app.sources``).

The wire schema sits above the stages it shows (answer, judge, pipeline, trust) and below the question flow
that answers with it (sources, the Asker): the stages own their vocabulary (:data:`~app.answer.AnswerMode`,
the judge's :data:`~app.judge.Label` and :data:`~app.judge.Significance`, the gate's
:data:`~app.trust.Verdict`), re-exported here for the wire, and never import the schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from app.answer import AnswerMode
from app.judge import Label, Significance
from retrieval.evidence import Depth, DocClass, NoticeType
from retrieval.search import ZeroHitCause
from retrieval.understand import QueryPlan

__all__ = [
    "AnswerMode",
    "CollectionEvidenceOut",
    "ContextPassageOut",
    "DenseHitOut",
    "DroppedOut",
    "EvidenceDocOut",
    "JudgeReportOut",
    "Label",
    "NoticeOut",
    "NoticeType",
    "PairJudgementOut",
    "PassageContextOut",
    "PassageOut",
    "ProvenanceOut",
    "QueryOut",
    "RejectedQueryOut",
    "RewriterOut",
    "SearchOut",
    "SectionOut",
    "Significance",
    "SourceAnswerOut",
    "SourceEvidenceOut",
    "TierOut",
    "TokenCountsOut",
]


# --- PubMed evidence ------------------------------------------------------------------------------------


class ProvenanceOut(BaseModel):
    """Where a document came from in one retrieval arm."""

    arm: str = Field(description='"boolean", "dense" or "user" (documents supplied with the request)')
    rank: int = Field(description="1-based rank within the arm")
    score: float | None = Field(description="the arm's own score (None for the Boolean arm)")
    tier: int | None = Field(description="Adapt-E ladder tier that found it (Boolean arm)")


class NoticeOut(BaseModel):
    """What PubMed says happened to a study since it was published, in plain words for a patient."""

    type: NoticeType = Field(
        description='"expression_of_concern", "erratum" (a correction), "update" (a newer version of the '
        'review), "retraction", "partial_retraction" or "republished"'
    )
    pmid: str | None = Field(
        default=None, description="PMID of the notice; for an update, of the newer version (when given)"
    )
    text: str = Field(description="what it means, in a sentence for a patient")


class EvidenceDocOut(BaseModel):
    """One evidence item, whatever its source: a PubMed study (identity, class, depth read, provenance) or
    a document of an institutional collection, local or on another node (its PubMed fields null)."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)

    rank: int = Field(description="1-based rank in the evidence list (with several sources: the fused rank)")
    source: str = Field(default="pubmed", description='"pubmed", a collection, or "node/collection"')
    source_rank: int = Field(description="1-based rank within its own source")
    id: str = Field(description="the PMID, or the collection's document id")
    cite: str = Field(description='how answers cite it: "[PMID:n]" or "[DOC:collection/doc §Section p.N]"')
    pmid: str | None = Field(
        default=None,
        description='PubMed id; "U<n>" for a supplied document without one; null for a collection',
    )
    pmcid: str | None = None
    title: str
    year: int | None = None
    journal: str | None = None
    publication_types: list[str] = Field(default_factory=list)
    doc_class: DocClass | None = Field(
        default=None, alias="class", description="evidence class (CoMeta D1-D3); null for a collection"
    )
    depth: Depth | None = Field(default=None, description="what was read: the abstract or the PMC full text")
    depth_fallback_reason: str | None = Field(
        default=None, description="why a full-text class was read as an abstract"
    )
    url: str | None = None
    rrf_score: float = Field(
        description="reciprocal-rank-fusion score: over the retrieval arms (PubMed only), over the sources "
        "(several sources; comparable within one response only)"
    )
    provenance: list[ProvenanceOut] = Field(default_factory=list)
    text_units: int | None = Field(
        default=None, description="text units (abstract, full-text sections) a PubMed document carries"
    )
    addresses_question: bool | None = Field(
        default=None,
        description="whether the study is about the question (its condition and the treatment asked "
        "about); only those are cited and counted in the verdict; null where not judged",
    )
    relevance: str | None = Field(
        default=None,
        description='why, in plain words: "about leukemia, prognosis" / "does not mention exercise"',
    )
    notices: list[NoticeOut] = Field(
        default_factory=list,
        description="PubMed's notices about the study: expression of concern, correction, newer version, ...",
    )


class PassageOut(BaseModel):
    """A passage the answer was written from (``/ask``)."""

    rank: int = Field(description="1-based rank of the selected passage; a neighbour shares its rank")
    pmid: str
    pmcid: str | None
    section: str = Field(description="the heading of the section it comes from")
    scores: dict[str, float] = Field(description='score per stage it went through: "dense", "rerank"')
    expanded_from: str | None = Field(description="chunk id of the selected passage that pulled it in")
    text: str


class ContextPassageOut(BaseModel):
    """A passage with its place in the document (``/search``)."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)

    rank: int
    chunk_id: str
    pmid: str
    pmcid: str | None
    doc_class: DocClass = Field(alias="class")
    section: str
    start: int = Field(description="character offsets in its section's text")
    end: int
    scores: dict[str, float]
    expanded_from: str | None
    text: str


class PassageContextOut(BaseModel):
    """The passage stage's result: the passages for the answer and how they were scored."""

    reranker: str | None
    reranker_kind: str | None
    rerank_note: str | None = Field(description="set when the rerank was degraded (e.g. offline)")
    budget_tokens: int
    budget_used: int
    passages: list[ContextPassageOut]


# --- the query plan ------------------------------------------------------------------------------------


class RejectedQueryOut(BaseModel):
    query: str
    reason: str


class TokenCountsOut(BaseModel):
    prompt: int
    completion: int


class RewriterOut(BaseModel):
    """How the question became a plan: the LLM rewriter or the deterministic one, and why."""

    path: str = Field(description='"llm" or "deterministic"')
    fallback_reason: str | None
    dropped: list[RejectedQueryOut] = Field(description="LLM ladder queries rejected, with the reason")
    padded: int = Field(description="deterministic queries appended to a short LLM ladder")
    model: str | None
    prompt: str | None
    tokens: TokenCountsOut
    phi_removed: dict[str, int] = Field(description="identifiers scrubbed from the question, by kind")


class TierOut(BaseModel):
    """One Adapt-E ESearch: a ladder tier, the union of the stricter ones, the fallback, the undated retry."""

    tier: int
    kind: str = Field(
        description='"ladder", "union" (the stricter tiers in one query), "fallback" or "undated"'
    )
    query: str
    count: int
    latency_ms: float
    used: bool = Field(description="its PMIDs were collected")
    new_pmids: int
    error: str | None


_ZERO_HIT = (
    "why the search found no documents (null: it found some): none_found, filtered (every candidate left "
    "out by the evidence policy), pubmed_error (a query refused, or ErrorList: phrase or field unknown), "
    "pubmed_warning (WarningList: quoted phrase not found, phrase ignored), ncbi_unavailable, "
    "phi_scrubbed (only personal details in the question: nothing searched)"
)


class QueryOut(BaseModel):
    """The query plan and how it ran (``/ask``'s ``query``)."""

    plan: QueryPlan
    rewriter: RewriterOut
    tiers: list[TierOut]
    fallback_used: bool
    date_limits_relaxed: bool = Field(description="nothing within the asked years: older evidence shown")
    stopped_at: int | None = Field(description="the tier that reached the hit target")
    question_hash: str
    zero_hit_cause: ZeroHitCause | None = Field(default=None, description=_ZERO_HIT)


class DenseHitOut(BaseModel):
    pmid: str
    score: float
    rank: int


class DroppedOut(BaseModel):
    pmid: str
    reason: str
    replaced_by: str | None = Field(
        default=None, description="the newer version of the review kept in its place (reason: newer version)"
    )


class SearchOut(BaseModel):
    """Everything retrieval found for a question (``/search``, ``cometa search --json``)."""

    pmids: list[str] = Field(description="the final ranking: fused, fetched, filtered")
    zero_hit: bool
    plan: QueryPlan
    rewriter: RewriterOut
    tiers: list[TierOut]
    boolean_pmids: list[str]
    boolean_zero_hit: bool
    fallback_used: bool
    date_limits_relaxed: bool
    stopped_at: int | None
    dense: list[DenseHitOut]
    evidence: list[EvidenceDocOut]
    dropped: list[DroppedOut] = Field(description="fused candidates left out, with the reason")
    context: PassageContextOut | None = Field(description="None when passages are off")
    warnings: list[str]
    timings_ms: dict[str, float]
    question_hash: str
    zero_hit_cause: ZeroHitCause | None = Field(default=None, description=_ZERO_HIT)


# --- judge results -------------------------------------------------------------------------------------


class SourceAnswerOut(BaseModel):
    """One source's own answer, absence-screened."""

    source_id: str
    label: str
    text: str
    absent: bool = Field(description="the answer says the source does not address the question")
    absence_method: Literal["prefix", "llm"] | None = Field(description="None: not screened, or it failed")
    error: str | None = Field(description="the answer call failed: its pairs are not judged")
    screen_error: str | None = Field(description="the absence check failed: treated as present")


class PairJudgementOut(BaseModel):
    """The judge's verdict on one pair of sources (``a`` is the one listed first)."""

    a: str
    b: str
    classification: Label | None = Field(description="None: the judge call failed (see errors)")
    reasoning: str | None
    divergence_topic: str | None
    clinical_significance: Significance | None
    parsed_by: Literal["json", "label-fallback", "prescreen"] | None


class JudgeReportOut(BaseModel):
    """Cross-source agreement: every pair's label, the symmetric matrix and the rates (HERO-QA)."""

    question_hash: str
    sources: list[str] = Field(description="the labels of the sources, in matrix order")
    answers: list[SourceAnswerOut]
    pairs: list[PairJudgementOut]
    matrix: list[list[Label | None]] = Field(description="N x N over sources, symmetric, diagonal None")
    counts: dict[Label, int]
    r_abs: float | None = Field(
        description="absence rate (HERO-QA): answers that do not address the question / answers screened"
    )
    r_abs_pairs: float | None = Field(
        default=None, description="ABSENT pairs / judged pairs (a pair is ABSENT when either side is)"
    )
    r_div: float | None = Field(description="(DIVERGENT + CONTRADICTORY) / non-absent judged pairs")
    r_con: float | None = Field(description="CONSISTENT / non-absent judged pairs")
    any_div: bool
    note: str | None = Field(description="plain-language note for the patient when sources diverge")
    pairs_judged_by_llm: int
    errors: list[str]


# --- collection evidence -------------------------------------------------------------------------------


def _page(value: Any) -> int | None:
    # A page is an int or nothing: another node's "3", 3.5 or true is no page, not an error.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _clip(limit: int) -> BeforeValidator:
    """A string cut to ``limit`` characters: another node's free text is bounded, not refused for length."""
    return BeforeValidator(lambda value: value[:limit] if isinstance(value, str) else value)


# A document's or section's id between nodes: a slug (what ingest makes), never a path or markup.
_SLUG = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"


class SectionOut(BaseModel):
    model_config = ConfigDict(coerce_numbers_to_str=True)

    section_id: str = Field(pattern=_SLUG)
    heading: Annotated[str, _clip(300)]
    page_start: int | None = None
    page_end: int | None = None

    _page_or_none = field_validator("page_start", "page_end", mode="before")(_page)


class CollectionEvidenceOut(BaseModel):
    """One document's evidence between nodes (``POST /collections/search``); federation reads other
    nodes' replies with it, leniently (missing title, sections or score take their defaults, long titles
    and headings are cut) but typed: ids are slugs, the text and lists bounded, the score a number."""

    model_config = ConfigDict(coerce_numbers_to_str=True)

    collection: str
    doc_id: str = Field(pattern=_SLUG)
    title: Annotated[str, _clip(500)] = ""
    route: Literal["whole", "chunks", "whole_fallback"]
    text: str = Field(max_length=1_000_000, description="what goes into the answer's context")
    sections: list[SectionOut] = Field(default_factory=list, max_length=200)
    score: float = Field(
        default=0.0, allow_inf_nan=False, description="the source's own score: comparable within it only"
    )
    cite: Annotated[str, _clip(1000)] = Field(
        default="", description="[DOC:collection/doc §Heading p.N]; recomputed on receipt"
    )


class SourceEvidenceOut(BaseModel):
    """A collection document as ``/ask`` with ``sources`` shows it: cited, with an excerpt."""

    rank: int = Field(description="within its source")
    collection: str
    doc_id: str
    title: str
    route: str = Field(description='"whole" | "chunks" | "whole_fallback"')
    sections: list[SectionOut]
    pages: str | None = Field(default=None, description='"3" or "3-4" over the sections used')
    score: float | None = Field(default=None, description="the source's own score: comparable within it only")
    cite: str
    excerpt: str = ""

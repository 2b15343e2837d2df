"""Request/response models and settings of the HTTP API (``app.api``).

The nested payloads (evidence, passages, the query plan, judge reports) are the wire schema of
``app.schemas``, so OpenAPI documents them field by field.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from retrieval.search import ZeroHitCause

from ._evidence import (
    AnswerMode,
    CollectionEvidenceOut,
    EvidenceDocOut,
    JudgeReportOut,
    NoticeOut,
    PassageOut,
    QueryOut,
    SearchOut,
    SourceEvidenceOut,
)
from ._trust import EvidenceVerdictOut, SafetyOut

__all__ = [
    "MAX_QUESTION_CHARS",
    "AskRequest",
    "AskResponse",
    "CitationOut",
    "CollectionListResponse",
    "CollectionMetaOut",
    "CollectionResultOut",
    "CollectionSearchRequest",
    "CollectionSearchResponse",
    "ErrorResponse",
    "HealthResponse",
    "JudgeAnswerIn",
    "JudgeRequest",
    "ModelListOut",
    "ModelOut",
    "ReadyResponse",
    "SearchRequest",
    "SourceResultOut",
    "SourceStatusOut",
    "UrgentResponse",
    "UserDocument",
]

MAX_QUESTION_CHARS = 4000
# NCBI's mindate/maxdate syntax: YYYY, YYYY/MM or YYYY/MM/DD.
_DATE = re.compile(r"^\d{4}(/(0[1-9]|1[0-2])(/(0[1-9]|[12]\d|3[01]))?)?$")


# A source: "pubmed", a local collection, "node/collection" or "node/*" (all the caller may search there).
_SOURCE = re.compile(r"^(pubmed|[a-z0-9][a-z0-9_-]{0,63}(/([a-z0-9][a-z0-9_-]{0,63}|\*))?)$")
_COLLECTION = re.compile(r"^([a-z0-9][a-z0-9_-]{0,63}|\*)$")
# NCBI's API keys: 36 hexadecimal characters. Anything else is no key NCBI would honour.
_NCBI_KEY = re.compile(r"[0-9a-fA-F]{36}")


def _check_date(value: str | None) -> str | None:
    if value is not None and not _DATE.match(value):
        raise ValueError("dates are YYYY, YYYY/MM or YYYY/MM/DD")
    return value


class _Window(BaseModel):
    mindate: str | None = Field(default=None, examples=["2015"])
    maxdate: str | None = Field(default=None, examples=["2024/12/31"])

    _dates = field_validator("mindate", "maxdate")(_check_date)

    @model_validator(mode="after")
    def _both_or_neither(self) -> _Window:
        if (self.mindate is None) != (self.maxdate is None):
            raise ValueError("mindate and maxdate go together: give both or neither")
        if self.mindate and self.maxdate and self.mindate[:4] > self.maxdate[:4]:
            raise ValueError("mindate is after maxdate")
        return self


class SearchRequest(_Window):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    # Per-request NCBI key (higher NCBI rate limit); never logged, never echoed.
    ncbi_api_key: SecretStr | None = None

    @field_validator("ncbi_api_key")
    @classmethod
    def _ncbi_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not _NCBI_KEY.fullmatch(value.get_secret_value()):
            raise ValueError("ncbi_api_key is not an NCBI API key (36 hexadecimal characters)")
        return value

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is blank")
        return value


class UserDocument(BaseModel):
    """Bring-your-own evidence (evaluation suites, pasted articles)."""

    model_config = ConfigDict(extra="forbid")

    pmid: str | None = Field(default=None, pattern=r"^\d{1,9}$")
    title: str = Field(default="", max_length=2000)
    text: str = Field(min_length=1, max_length=200_000)
    year: int | None = Field(default=None, ge=1800, le=2100)


class AskRequest(SearchRequest):
    options: dict[str, str] | None = Field(default=None, examples=[{"A": "yes", "B": "no", "C": "maybe"}])
    answer_type: Literal["free", "choice"] | None = None  # default: "choice" when options are given
    allow_insufficient: bool = False
    max_documents: int = Field(default=10, ge=1, le=50)
    judge: bool = False
    documents: list[UserDocument] | None = Field(default=None, max_length=200)
    documents_mode: Literal["replace", "augment"] = "replace"
    # Where to look: "pubmed", local collection names, "node/collection" (or "node/*") on remote nodes.
    sources: list[str] = Field(default_factory=lambda: ["pubmed"], min_length=1, max_length=8)

    @field_validator("sources")
    @classmethod
    def _sources(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _SOURCE.match(name):
                raise ValueError(
                    f"source {name!r} is not pubmed, a collection name ([a-z0-9_-]) or node/collection"
                )
        if len(set(value)) != len(value):
            raise ValueError("sources must be unique")
        return value

    @property
    def across_sources(self) -> bool:
        """Anything beyond the PubMed-only default goes through ``app.sources``."""
        return self.sources != ["pubmed"]

    @field_validator("options")
    @classmethod
    def _options(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is None:
            return None
        if not 2 <= len(value) <= 10:
            raise ValueError("options needs 2 to 10 entries")
        for key, text in value.items():
            if not re.fullmatch(r"[A-Z]", key):
                raise ValueError(f"option keys are single capital letters, got {key!r}")
            if not text.strip() or len(text) > 1000:
                raise ValueError(f"option {key} must be 1..1000 characters")
        return value

    @model_validator(mode="after")
    def _choice_needs_options(self) -> AskRequest:
        if self.answer_type == "choice" and not self.options:
            raise ValueError('answer_type "choice" needs options')
        if self.across_sources and (self.options or self.documents is not None):
            raise ValueError("options and documents apply to the PubMed-only answer, not to several sources")
        return self

    @property
    def resolved_answer_type(self) -> Literal["free", "choice"]:
        return self.answer_type or ("choice" if self.options else "free")


class JudgeAnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_id: str = Field(min_length=1, max_length=100)
    label: str | None = Field(default=None, max_length=200)
    text: str = Field(max_length=20_000)


class JudgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    answers: list[JudgeAnswerIn] = Field(min_length=2, max_length=8)

    @model_validator(mode="after")
    def _unique_ids(self) -> JudgeRequest:
        ids = [a.source_id for a in self.answers]
        if len(set(ids)) != len(ids):
            raise ValueError("source_id values must be unique")
        return self


class CollectionSearchRequest(BaseModel):
    """``POST /collections/search``: what a federated node asks another (or any client asks directly)."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    collections: list[str] = Field(min_length=1, max_length=20)  # names, or ["*"]: all the caller may search
    top_docs: int = Field(default=3, ge=1, le=10)
    max_chars: int | None = Field(
        default=None,
        ge=500,
        le=1_000_000,
        description="The most text of one document the caller's answer context holds: longer documents "
        "come back as their best chunks, never cut (None: this node's own budget).",
    )

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is blank")
        return value

    @field_validator("collections")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        bad = [c for c in value if not _COLLECTION.match(c)]
        if bad:
            raise ValueError(f"not collection names: {bad}")
        return list(dict.fromkeys(value))


class CollectionMetaOut(BaseModel):
    """A collection's metadata between nodes; read leniently (unknown fields ignored, strings bounded)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    institution: str = Field(default="", max_length=200)
    topic: str = Field(default="", max_length=200)
    care_phase: str = Field(default="", max_length=200)
    version_date: str | None = Field(default=None, max_length=32)
    description: str = Field(default="", max_length=2000)


class CollectionResultOut(BaseModel):
    """One collection of a ``POST /collections/search`` reply: status, metadata when searched, evidence."""

    collection: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    status: Literal["ok", "denied", "failed", "timeout"]
    reason: str | None = None
    meta: CollectionMetaOut | None = None
    evidence: list[CollectionEvidenceOut] = Field(default_factory=list, max_length=10)

    @field_validator("reason", mode="before")
    @classmethod
    def _short(cls, value: Any) -> Any:
        return value[:300] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _own_evidence(self) -> CollectionResultOut:
        # Evidence filed under another collection than the one it answers for is a forged reply.
        if any(e.collection != self.collection for e in self.evidence):
            raise ValueError(f"evidence of another collection under {self.collection!r}")
        if self.status != "ok" and (self.evidence or self.meta is not None):
            raise ValueError(f"content for a collection with status {self.status!r}")
        return self


class CollectionSearchResponse(BaseModel):
    """``POST /collections/search``: written by the node asked, read (and validated) by the node asking."""

    request_id: str = ""
    results: list[CollectionResultOut] = Field(max_length=500)


class CollectionListResponse(BaseModel):
    """``GET /collections``: the collections the caller may search (and, with ``remote``, other nodes')."""

    request_id: str = ""
    collections: list[CollectionMetaOut] = Field(max_length=5000)


class CitationOut(BaseModel):
    pmid: str | None
    pmcid: str | None = None
    title: str = ""
    year: int | None = None
    publication_types: list[str] = Field(default_factory=list)
    url: str | None = None
    doc_class: str | None = None
    design: str | None = Field(
        default=None, description='study design: "meta-analysis", "randomised trial", "cohort study", ...'
    )
    patients: int | None = Field(default=None, description="number of patients the abstract states")
    age_years: int | None = Field(default=None, description="years since publication")
    older_than_years: int | None = Field(
        default=None, description="set (to the threshold) when the study is older than that many years"
    )
    notices: list[NoticeOut] = Field(
        default_factory=list,
        description="PubMed's notices about the study (expression of concern, correction, newer version, "
        "retraction, republication), each with a plain-words text",
    )


class AskResponse(BaseModel):
    request_id: str
    answer: str
    mode: AnswerMode  # "llm" | "extractive" | "insufficient_evidence"
    answer_choice: str | None = None
    reasoning: str | None = None
    citations: list[CitationOut]
    citations_removed: int = 0  # [PMID:n] ids the model cited that were not in the evidence
    # PubMed documents (provenance, scores, class, depth); with ``sources``, every source's evidence fused.
    evidence: list[EvidenceDocOut]
    passages: list[PassageOut]  # the passages the answer was written from, with scores
    query: QueryOut | None  # plan, rewriter path, Adapt-E tiers (None when retrieval was skipped)
    judge: JudgeReportOut | None = None
    timings_ms: dict[str, float]
    warnings: list[str]
    model: str | None = None
    prompt_id: str | None = None
    tokens: dict[str, int | None] = Field(default_factory=dict)
    # Asking across sources (absent on the PubMed-only default):
    sources: list[SourceResultOut] | None = None
    sources_status: dict[str, SourceStatusOut] | None = None
    differences: str | None = None  # plain-language: where the patient's hospital differs, with citations
    # Trustworthy answers (issue 15), absent where not assessed:
    evidence_verdict: EvidenceVerdictOut | None = None  # the relevance and sufficiency gate's verdict
    scope: str | None = (
        None  # why the question is out of scope (mode "out_of_scope"): gibberish, chit_chat, ...
    )
    language: str | None = None  # the question's detected language (ISO 639-1), when it was detected
    retracted_excluded: list[str] = Field(
        default_factory=list, description="PMIDs of retracted studies kept out of the evidence and the answer"
    )
    calibration: str | None = Field(
        default=None,
        description="the evidence gate's calibration in force: where its dense thresholds come from, and "
        "an id of their values (as /readyz checks.calibration)",
    )
    safety: SafetyOut | None = Field(
        default=None,
        description="the safety step's decision; urgent: the answer is the guidance, nothing searched",
    )
    zero_hit_cause: ZeroHitCause | None = Field(
        default=None,
        description="why the question ended with no documents (null: it had some); refused: not searched "
        "(urgent, out of scope); else the search's cause, as on query.zero_hit_cause",
    )


class UrgentResponse(BaseModel):
    """``POST /search`` of an urgent question: the safety guidance instead of a search (nothing searched)."""

    request_id: str
    mode: Literal["urgent"] = "urgent"
    answer: str = Field(description="the guidance, in the question's language")
    safety: SafetyOut


class SourceStatusOut(BaseModel):
    status: Literal["ok", "denied", "failed", "timeout"]
    reason: str | None = None
    ms: float | None = None


class SourceResultOut(BaseModel):
    source: str  # "pubmed", "stmarys", "nodeb/hospital-b"
    kind: Literal["pubmed", "collection", "remote"]
    label: str  # for people: the institution, else the source name
    node: str | None = None
    institution: str | None = None
    version_date: str | None = None
    status: Literal["ok", "denied", "failed", "timeout"]
    reason: str | None = None
    answer: str | None = None
    answer_mode: AnswerMode | None = None
    absent: bool | None = None  # the answer says the source does not address the question
    evidence: list[SourceEvidenceOut] = Field(default_factory=list)
    citations: list[CitationOut] = Field(default_factory=list)  # PubMed only: PMIDs with metadata
    evidence_verdict: EvidenceVerdictOut | None = Field(
        default=None, description="the evidence gate's verdict on this source's evidence (None: not weighed)"
    )


class ErrorResponse(BaseModel):
    error: str
    reason: str | None = None
    request_id: str | None = None
    detail: list[dict[str, Any]] | None = None


class SearchResponse(SearchOut):
    """``POST /search``: the request id, then the search outcome (built by ``SearchOut``)."""

    request_id: str


class HealthResponse(BaseModel):
    """``GET /healthz``: the process answers."""

    status: Literal["ok"] = "ok"


class ReadyResponse(BaseModel):
    """``GET /readyz`` (200 when ready, else 503): each dependency's check, all ``ok`` for ready."""

    ready: bool
    checks: dict[str, dict[str, Any]] = Field(
        description="eutils (reachable, ms or reason), dense (index loaded or what is under way), "
        "passages (the passage stage loaded), "
        "calibration (the gate's dense thresholds in force: name, id, source, encoder, thresholds; not ok "
        "while being derived or when the wanted one could not be had), llm (configured, model: "
        "informational, never makes the service unready)"
    )


class ModelOut(BaseModel):
    """``GET /v1/models/{id}``: one model, in OpenAI's shape."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelListOut(BaseModel):
    """``GET /v1/models``: the models served, in OpenAI's shape."""

    object: Literal["list"] = "list"
    data: list[ModelOut]


class JudgeResponse(JudgeReportOut):
    """``POST /judge``: the request id, then the judge report (built by ``JudgeReportOut``)."""

    request_id: str

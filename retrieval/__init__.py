"""Retrieval stage: E-utilities client, local E-utilities server, query language, corpus."""

from ._adapte import AdaptE, AdaptEResult, TierResult
from ._client import EutilsClient
from ._config import NCBI_EUTILS_URL, AdaptESettings, EutilsSettings, FaultSettings, LocalServerSettings
from ._corpus import Corpus, load_corpus
from ._exceptions import (
    BadRequest,
    CometaError,
    EutilsError,
    MalformedResponse,
    QuerySyntaxError,
    RateLimited,
    ServerError,
    TransportError,
)
from ._index import LiteratureIndex, SearchHits
from ._mesh import MeshVocabulary
from ._models import (
    AbstractSection,
    DbField,
    DbInfo,
    DbLink,
    DocSummary,
    EInfoResult,
    ESearchResult,
    License,
    MeshHeading,
    MeshQualifier,
    PmcArticle,
    PmcSection,
    PubDate,
    PublicationType,
    PubmedRecord,
    normalise_pmcid,
)
from ._plan import Concept, DateLimits, Pico, QueryPlan
from ._query import parse_query, render, validate_query
from ._server import create_eutils_app, eutils_transport

__all__ = [
    "NCBI_EUTILS_URL",
    "AbstractSection",
    "AdaptE",
    "AdaptEResult",
    "AdaptESettings",
    "BadRequest",
    "CometaError",
    "Concept",
    "Corpus",
    "DateLimits",
    "DbField",
    "DbInfo",
    "DbLink",
    "DocSummary",
    "EInfoResult",
    "ESearchResult",
    "EutilsClient",
    "EutilsError",
    "EutilsSettings",
    "FaultSettings",
    "License",
    "LiteratureIndex",
    "LocalServerSettings",
    "MalformedResponse",
    "MeshHeading",
    "MeshQualifier",
    "MeshVocabulary",
    "Pico",
    "PmcArticle",
    "PmcSection",
    "PubDate",
    "PublicationType",
    "PubmedRecord",
    "QueryPlan",
    "QuerySyntaxError",
    "RateLimited",
    "SearchHits",
    "ServerError",
    "TierResult",
    "TransportError",
    "create_eutils_app",
    "eutils_transport",
    "load_corpus",
    "normalise_pmcid",
    "parse_query",
    "render",
    "validate_query",
]

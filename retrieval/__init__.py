"""Retrieval stage: E-utilities client, local E-utilities server, query language, corpus."""

from ._adapte import AdaptE, AdaptEResult, TierResult
from ._client import EutilsClient
from ._config import NCBI_EUTILS_URL, AdaptESettings, EutilsSettings, FaultSettings, LocalServerSettings
from ._corpus import Corpus, load_corpus
from ._dense import DenseHit, DenseRetriever, open_retriever
from ._encoders import Encoder, EncoderUnavailable, load_encoder
from ._evidence import EvidenceBuilder, EvidenceDoc, EvidenceSet, classify
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
from ._fusion import FusedHit, fuse, rrf
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
from ._vector import IndexMismatchError

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
    "DenseHit",
    "DenseRetriever",
    "DocSummary",
    "EInfoResult",
    "ESearchResult",
    "Encoder",
    "EncoderUnavailable",
    "EutilsClient",
    "EutilsError",
    "EutilsSettings",
    "EvidenceBuilder",
    "EvidenceDoc",
    "EvidenceSet",
    "FaultSettings",
    "FusedHit",
    "IndexMismatchError",
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
    "classify",
    "create_eutils_app",
    "eutils_transport",
    "fuse",
    "load_corpus",
    "load_encoder",
    "normalise_pmcid",
    "open_retriever",
    "parse_query",
    "render",
    "rrf",
    "validate_query",
]

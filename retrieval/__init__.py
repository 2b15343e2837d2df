"""Retrieval stage: E-utilities client, local E-utilities server, query language, corpus."""

from ._adapte import AdaptE, AdaptEResult, TierResult
from ._client import EutilsClient, EutilsDegradation, track_degradation
from ._config import (
    NCBI_EUTILS_URL,
    AdaptESettings,
    CacheSettings,
    EutilsSettings,
    FaultSettings,
    LocalServerSettings,
)
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
from ._ratelimit import LimiterUnavailable
from ._server import create_eutils_app, eutils_transport
from ._store import CacheStore, CacheStoreError, open_store
from ._vector import IndexMismatchError

__all__ = [
    "NCBI_EUTILS_URL",
    "AbstractSection",
    "AdaptE",
    "AdaptEResult",
    "AdaptESettings",
    "BadRequest",
    "CacheSettings",
    "CacheStore",
    "CacheStoreError",
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
    "EutilsDegradation",
    "EutilsError",
    "EutilsSettings",
    "EvidenceBuilder",
    "EvidenceDoc",
    "EvidenceSet",
    "FaultSettings",
    "FusedHit",
    "IndexMismatchError",
    "License",
    "LimiterUnavailable",
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
    "open_store",
    "parse_query",
    "render",
    "rrf",
    "track_degradation",
    "validate_query",
]

"""The NCBI protocol: record models, the E-utilities/PubMed/PMC parsers and writers, the protocol's errors,
and the local NCBI-compatible server over a corpus (with its Boolean query engine)."""

from ._config import FaultSettings, LocalServerSettings
from ._corpus import BUNDLED_CORPUS_DIR, Corpus, clear_corpus_cache, load_corpus
from ._envelopes import parse_einfo, parse_elink_pubmed_pmc, parse_esearch
from ._errors import BadRequest, EutilsError, MalformedResponse, RateLimited, ServerError, TransportError
from ._esummary import parse_esummary
from ._index import LiteratureIndex, SearchHits
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
from ._pmc import JatsContent, JatsFront, jats_content, parse_pmc_articles, read_jats_front
from ._pubmed import (
    INFERRED_MARK,
    PubmedXmlExtras,
    iter_pubmed_articles,
    nlm_category,
    parse_pubmed_articles,
    pubmed_article_xml,
    pubmed_articleset,
)
from ._server import HistoryServer, create_eutils_app, eutils_transport
from ._xml import PMC_RESTRICTED_COMMENT, PUBMED_ARTICLESET_PROLOG

__all__ = [
    "BUNDLED_CORPUS_DIR",
    "INFERRED_MARK",
    "PMC_RESTRICTED_COMMENT",
    "PUBMED_ARTICLESET_PROLOG",
    "AbstractSection",
    "BadRequest",
    "Corpus",
    "DbField",
    "DbInfo",
    "DbLink",
    "DocSummary",
    "EInfoResult",
    "ESearchResult",
    "EutilsError",
    "FaultSettings",
    "HistoryServer",
    "JatsContent",
    "JatsFront",
    "License",
    "LiteratureIndex",
    "LocalServerSettings",
    "MalformedResponse",
    "MeshHeading",
    "MeshQualifier",
    "PmcArticle",
    "PmcSection",
    "PubDate",
    "PublicationType",
    "PubmedRecord",
    "PubmedXmlExtras",
    "RateLimited",
    "SearchHits",
    "ServerError",
    "TransportError",
    "clear_corpus_cache",
    "create_eutils_app",
    "eutils_transport",
    "iter_pubmed_articles",
    "jats_content",
    "load_corpus",
    "nlm_category",
    "normalise_pmcid",
    "parse_einfo",
    "parse_elink_pubmed_pmc",
    "parse_esearch",
    "parse_esummary",
    "parse_pmc_articles",
    "parse_pubmed_articles",
    "pubmed_article_xml",
    "pubmed_articleset",
    "read_jats_front",
]

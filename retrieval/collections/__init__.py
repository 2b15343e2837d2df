"""Institutional collections (issue 9): ingest handbooks, search them per document HERO-QA style.

The public face of :mod:`._store` (collections on disk, metadata, ingest reports), :mod:`._search`
(HERO-QA retrieval, its arms and evidence) and :mod:`._ingest` (documents, sections and parsers); see those
modules for the rules.
"""

from ._config import CollectionSearchSettings, CollectionSettings
from ._ingest import (
    FORMATS,
    DocFormat,
    IngestError,
    InstDocument,
    Section,
    SectionRef,
    detect_format,
    parse_document,
    parse_html,
    parse_jats,
    parse_markdown,
    parse_pdf,
)
from ._search import (
    ARM_BM25_CHUNKS,
    ARM_BM25_HEADINGS,
    ARM_BM25_SECTIONS,
    ARM_DENSE,
    CollectionRetriever,
    InstEvidence,
    Route,
)
from ._store import (
    COLLECTION_NAME_PATTERN,
    Collection,
    CollectionError,
    CollectionMeta,
    CollectionNotFound,
    CollectionStore,
    IngestReport,
    InvalidCollectionName,
    default_collections_root,
)

__all__ = [
    "ARM_BM25_CHUNKS",
    "ARM_BM25_HEADINGS",
    "ARM_BM25_SECTIONS",
    "ARM_DENSE",
    "COLLECTION_NAME_PATTERN",
    "FORMATS",
    "Collection",
    "CollectionError",
    "CollectionMeta",
    "CollectionNotFound",
    "CollectionRetriever",
    "CollectionSearchSettings",
    "CollectionSettings",
    "CollectionStore",
    "DocFormat",
    "IngestError",
    "IngestReport",
    "InstDocument",
    "InstEvidence",
    "InvalidCollectionName",
    "Route",
    "Section",
    "SectionRef",
    "default_collections_root",
    "detect_format",
    "parse_document",
    "parse_html",
    "parse_jats",
    "parse_markdown",
    "parse_pdf",
]

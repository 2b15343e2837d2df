"""Institutional collections (issue 9): ingest handbooks, search them per document HERO-QA style.

The public face of :mod:`retrieval.collections._collections` (store, retrieval, evidence) and
:mod:`retrieval.collections._ingest` (documents and parsers); see those modules for the rules.
"""

from ._collections import (
    ARM_BM25_CHUNKS,
    ARM_BM25_HEADINGS,
    ARM_BM25_SECTIONS,
    ARM_DENSE,
    COLLECTION_NAME_PATTERN,
    Collection,
    CollectionError,
    CollectionMeta,
    CollectionNotFound,
    CollectionRetriever,
    CollectionStore,
    IngestReport,
    InstEvidence,
    InvalidCollectionName,
    Route,
    default_collections_root,
)
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

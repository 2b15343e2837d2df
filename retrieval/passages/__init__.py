"""Passages: evidence documents turned into segmentation sources, SEOS chunks retrieved densely and reranked,
with budgeted neighbour expansion."""

from ._jats import source_from_abstract, source_from_pmc, source_from_pubmed
from ._passages import (
    PASSAGE_STORE_FILE,
    Passage,
    PassageContext,
    PassageRetriever,
    PassageSettings,
    VectorSource,
    build_chunks,
)

__all__ = [
    "PASSAGE_STORE_FILE",
    "Passage",
    "PassageContext",
    "PassageRetriever",
    "PassageSettings",
    "VectorSource",
    "build_chunks",
    "source_from_abstract",
    "source_from_pmc",
    "source_from_pubmed",
]

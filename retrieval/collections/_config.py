"""Typed configuration of institutional collections (``COMETA_COLLECTIONS__*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "CollectionSearchSettings",
    "CollectionSettings",
]


class CollectionSearchSettings(BaseModel):
    """HERO-QA routing and retrieval over one institutional collection (``collections/_search.py``).

    Defaults follow the HERO-QA paper: whole document up to 80k characters, 160-word windows with 32-word
    overlap, four arms fused by RRF (k=60) with the two navigation arms down-weighted, top-5 chunks
    expanded to their parent sections and immediate neighbours, full-document fallback on weak evidence.
    """

    whole_doc_max_chars: int = Field(default=80_000, ge=0)  # at or below: the whole document is the context
    chunker: Literal["window", "seos"] = "window"
    window_words: int = Field(default=160, ge=8, le=4096)
    window_overlap: int = Field(default=32, ge=0, le=2048)
    rrf_k: int = Field(default=60, ge=1)
    dense_weight: float = Field(default=1.0, ge=0)
    bm25_chunk_weight: float = Field(default=1.0, ge=0)
    # Navigation arms rank whole sections, not chunks: coarser evidence, so they count half (the paper
    # says only "down-weighted").
    bm25_section_weight: float = Field(default=0.5, ge=0)
    bm25_heading_weight: float = Field(default=0.5, ge=0)
    rerank_candidates: int = Field(default=20, ge=1, le=1000)  # fused chunks per document sent to rerank
    top_chunks: int = Field(default=5, ge=1, le=100)  # reranked chunks expanded into the evidence
    # A hit in a section longer than half the context budget brings this many chunks either side of it
    # instead of the whole section.
    expand_neighbours: int = Field(default=1, ge=0, le=10)
    context_max_chars: int = Field(default=12_000, ge=500)  # budget of one chunk-route evidence text
    # Evidence is weak (-> whole-document fallback) when the top chunks score below the threshold of the
    # scorer's scale (bi-encoder / no reranker: cosine of the dense encoder; cross-encoder: raw logit) or
    # cover less than ``min_coverage`` of the question's IDF-weighted terms. MiniLM cosines barely
    # separate "addressed" from "not addressed" (0.46-0.57 for a handbook silent on travel vs 0.49-0.71
    # for the sections that answer it, tests/fixtures/handbooks), so offline the score is only a floor and
    # term coverage decides (travel question: 0.54-1.0 where answered, 0.07 where not).
    weak_score_bi_encoder: float = 0.25
    weak_score_cross_encoder: float = 0.0
    min_coverage: float = Field(default=0.35, ge=0, le=1)
    fallback_max_chars: int = Field(default=200_000, ge=1000)  # whole-document fallback is cut here
    doc_candidates_factor: int = Field(default=2, ge=1, le=20)  # docs reranked per requested top doc
    encode_batch_size: int = Field(default=32, ge=1, le=4096)


class CollectionSettings(BaseModel):
    """Where institutional collections live (``COMETA_COLLECTIONS__ROOT``) and how they are searched."""

    root: Path | None = None  # None = $XDG_DATA_HOME/cometa/collections (~/.local/share/...)
    search: CollectionSearchSettings = Field(default_factory=CollectionSearchSettings)
    max_file_bytes: int = Field(default=50_000_000, ge=1)  # larger files are refused at ingest

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
    overlap, four arms fused by RRF (k=60: the service's one ``COMETA_EVIDENCE__RRF_K``) with the two
    navigation arms down-weighted, top-5 chunks expanded to their parent sections and immediate neighbours,
    full-document fallback on weak evidence.
    """

    whole_doc_max_chars: int = Field(
        default=80_000, ge=0, description="At or below this length the whole document is the context."
    )
    chunker: Literal["window", "seos"] = Field(
        default="window", description="window: word windows; seos: the SEOS segmenter."
    )
    window_words: int = Field(default=160, ge=8, le=4096, description="Words per window chunk.")
    window_overlap: int = Field(default=32, ge=0, le=2048, description="Words shared by consecutive windows.")
    dense_weight: float = Field(default=1.0, ge=0, description="RRF weight of the dense chunk arm.")
    bm25_chunk_weight: float = Field(default=1.0, ge=0, description="RRF weight of BM25 over chunks.")
    bm25_section_weight: float = Field(
        default=0.5,
        ge=0,
        description="RRF weight of BM25 over section bodies: a navigation arm ranks whole sections, coarser "
        'evidence, so it counts half (the paper says only "down-weighted").',
    )
    bm25_heading_weight: float = Field(
        default=0.5, ge=0, description="RRF weight of BM25 over section headings (a navigation arm too)."
    )
    rerank_candidates: int = Field(
        default=20, ge=1, le=1000, description="Fused chunks per document sent to rerank."
    )
    top_chunks: int = Field(
        default=5, ge=1, le=100, description="Reranked chunks expanded into the evidence."
    )
    expand_neighbours: int = Field(
        default=1,
        ge=0,
        le=10,
        description="A hit in a section longer than half the context budget brings this many chunks either "
        "side of it instead of the whole section.",
    )
    context_max_chars: int = Field(
        default=12_000, ge=500, description="Budget of one chunk-route evidence text."
    )
    # MiniLM cosines barely separate "addressed" from "not addressed" (0.46-0.57 for a handbook silent on
    # travel vs 0.49-0.71 for the sections that answer it, tests/fixtures/handbooks), so offline the score
    # is only a floor and term coverage decides (travel question: 0.54-1.0 where answered, 0.07 where not).
    weak_score_bi_encoder: float = Field(
        default=0.25,
        description="Evidence is weak (-> whole-document fallback) when the top chunks score below this "
        "(bi-encoder / no reranker: cosine of the dense encoder).",
    )
    weak_score_cross_encoder: float = Field(
        default=0.0, description="The same threshold on a cross-encoder's raw logit."
    )
    min_coverage: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description="Evidence is weak too when the top chunks cover less than this share of the question's "
        "IDF-weighted terms.",
    )
    fallback_max_chars: int = Field(
        default=200_000,
        ge=1000,
        description="The whole-document fallback only for documents up to this length (and the caller's "
        "context budget); a longer one keeps its best chunks, never a cut copy.",
    )
    doc_candidates_factor: int = Field(
        default=2, ge=1, le=20, description="Documents reranked per requested top document."
    )
    encode_batch_size: int = Field(default=32, ge=1, le=4096, description="Chunks per encoder batch.")


class CollectionSettings(BaseModel):
    """Where institutional collections live (``COMETA_COLLECTIONS__ROOT``) and how they are searched."""

    root: Path | None = Field(
        default=None, description="None = $XDG_DATA_HOME/cometa/collections (~/.local/share/...)."
    )
    search: CollectionSearchSettings = Field(
        default_factory=CollectionSearchSettings, description="Retrieval within a collection."
    )
    max_file_bytes: int = Field(default=50_000_000, ge=1, description="Larger files are refused at ingest.")

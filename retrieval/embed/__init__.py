"""Embedding models and vector indexes: dense encoders (MedCPT, sentence-transformers), rerankers
(cross-encoder or bi-encoder), FAISS / Qdrant indexes, index builders, the dense retriever and the
micro-batcher that coalesces concurrent document encodes."""

from ._batch import BatchStats, EncodeBatcher, EncodeFailed
from ._config import DenseSettings
from ._dense import (
    BuildProgress,
    DenseHit,
    DenseRetriever,
    build_from_baseline,
    build_from_records,
    bundled_index_dir,
    corpus_fingerprint,
    ensure_bundled_index,
    import_medcpt_embeddings,
    open_retriever,
    prebuilt_index_dir,
    verify_index_vectors,
)
from ._encoders import (
    BUNDLED_MINILM_NAME,
    EncoderUnavailable,
    MedCPTEncoder,
    SentenceTransformerEncoder,
    load_encoder,
)
from ._rerank import (
    BI_ENCODER,
    BiEncoderReranker,
    CrossEncoderReranker,
    RerankerUnavailable,
    RerankSettings,
    load_reranker,
)
from ._vector import (
    FaissIndex,
    IndexCorrupt,
    IndexMismatchError,
    IndexNotFound,
    IndexReadOnly,
    QdrantIndex,
    VectorIndex,
    default_index_dir,
    default_index_root,
    open_index,
    slug,
)

__all__ = [
    "BI_ENCODER",
    "BUNDLED_MINILM_NAME",
    "BatchStats",
    "BiEncoderReranker",
    "BuildProgress",
    "CrossEncoderReranker",
    "DenseHit",
    "DenseRetriever",
    "DenseSettings",
    "EncodeBatcher",
    "EncodeFailed",
    "EncoderUnavailable",
    "FaissIndex",
    "IndexCorrupt",
    "IndexMismatchError",
    "IndexNotFound",
    "IndexReadOnly",
    "MedCPTEncoder",
    "QdrantIndex",
    "RerankSettings",
    "RerankerUnavailable",
    "SentenceTransformerEncoder",
    "VectorIndex",
    "build_from_baseline",
    "build_from_records",
    "bundled_index_dir",
    "corpus_fingerprint",
    "default_index_dir",
    "default_index_root",
    "ensure_bundled_index",
    "import_medcpt_embeddings",
    "load_encoder",
    "load_reranker",
    "open_index",
    "open_retriever",
    "prebuilt_index_dir",
    "slug",
    "verify_index_vectors",
]

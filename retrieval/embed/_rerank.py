"""Second-stage passage rerankers behind one :class:`Reranker` interface (CoMeta §3.2.2, §4.2.2).

* :class:`CrossEncoderReranker` — a one-logit cross-encoder through the ``rerankers`` library
  (``model_type="cross-encoder"``): ``ncbi/MedCPT-Cross-Encoder`` in production, ``BAAI/bge-reranker-v2-m3``
  selectable, or any local folder. rerankers 0.10 tokenises with ``truncation=True`` and *no* max length,
  so it truncates at ``tokenizer.model_max_length`` — unset (~1e30) in many checkpoints, MedCPT's among
  them, which makes a long pair overflow the 512 position embeddings. We therefore pass
  ``tokenizer_kwargs={"model_max_length": max_length}`` explicitly; pairs are cut ``longest_first``.
* :class:`BiEncoderReranker` — the offline fallback: inner product of the dense encoder's query and
  passage vectors. No cross-encoder weights exist on offline machines, so this is what runs there, and
  ``kind``/``note`` say so for the response metadata.

:func:`load_reranker` picks one from :class:`RerankSettings` and falls back to the bi-encoder, with the
reason recorded in ``note``, when a cross-encoder cannot be loaded.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from core import CometaError, Encoder, FloatArray, Reranker, RerankerKind, SizedLRU

from ._encoders import EncoderUnavailable, _hub_offline, _load_pretrained, _model_label, resolve_device

__all__ = [
    "BGE_RERANKER",
    "BI_ENCODER",
    "MEDCPT_CROSS_ENCODER",
    "BiEncoderReranker",
    "CrossEncoderReranker",
    "RerankSettings",
    "RerankerUnavailable",
    "load_reranker",
]

MEDCPT_CROSS_ENCODER = "ncbi/MedCPT-Cross-Encoder"
BGE_RERANKER = "BAAI/bge-reranker-v2-m3"
BI_ENCODER = "bi-encoder"


class RerankerUnavailable(CometaError):
    """A reranker model could not be loaded (not cached offline, missing folder, rerankers refused it)."""

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(message)
        self.model = model


class RerankSettings(BaseModel):
    """Which reranker scores the dense candidates.

    ``model``: a cross-encoder hub id or local folder (``ncbi/MedCPT-Cross-Encoder`` by default,
    ``BAAI/bge-reranker-v2-m3`` the general-domain alternative), or ``"bi-encoder"`` to rerank with the
    dense encoder itself (the offline default: ``RerankSettings.offline()``).
    """

    model: str = Field(
        default=MEDCPT_CROSS_ENCODER,
        description='A cross-encoder hub id or local folder, or "bi-encoder" to rerank with the dense '
        "encoder.",
    )
    max_length: int = Field(
        default=512, ge=8, le=8192, description="Query + passage tokens; the pair is truncated beyond."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(default="auto", description="auto: cuda when available.")
    batch_size: int = Field(default=16, ge=1, le=1024, description="Pairs per cross-encoder batch.")
    fallback_to_bi_encoder: bool = Field(
        default=True,
        description="When the cross-encoder cannot load, rerank with the bi-encoder (and say so) instead of "
        "failing.",
    )
    cache_max_bytes: int = Field(
        default=64 * 2**20,
        ge=0,
        le=2**40,
        description="The bi-encoder's passage-vector cache, bounded by bytes of vectors as well as by its "
        "4096 entries; 0 = off.",
    )

    @classmethod
    def offline(cls) -> RerankSettings:
        return cls(model=BI_ENCODER)


def _rerankers_factory() -> Any:
    # rerankers ships no type information (no py.typed): import it dynamically so mypy needs no override,
    # and keep every untyped call behind this one function.
    return importlib.import_module("rerankers").Reranker


class CrossEncoderReranker:
    """A one-logit cross-encoder loaded through ``rerankers`` (its TransformerRanker code path)."""

    def __init__(
        self,
        model_id_or_path: str | os.PathLike[str],
        *,
        max_length: int = 512,
        device: str = "auto",
        batch_size: int = 16,
    ) -> None:
        self._source = os.fspath(model_id_or_path)
        self._max_length = max_length
        self._batch_size = batch_size
        self.device = resolve_device(device)
        self._name = f"cross-encoder:{_model_label(model_id_or_path)}"
        self._lock = threading.Lock()
        path = Path(self._source).expanduser()
        if not path.exists() and (path.is_absolute() or self._source.startswith((".", "~"))):
            # A path that is not there must not be sent to the hub as a model id.
            raise RerankerUnavailable(
                f"reranker model folder {self._source!r} does not exist", model=self._source
            )
        try:
            self._ranker = _load_pretrained(self._source, self._load)
        except EncoderUnavailable as exc:
            raise RerankerUnavailable(
                str(exc).replace("encoder model", "reranker model"), model=self._source
            ) from exc
        limit = getattr(self._ranker.model.config, "max_position_embeddings", None)
        if isinstance(limit, int) and max_length > limit:
            raise RerankerUnavailable(
                f"max_length={max_length} exceeds {self._source!r}'s {limit} position embeddings",
                model=self._source,
            )

    def _load(self, name: str, local_only: bool) -> Any:
        ranker = _rerankers_factory()(
            name,
            model_type="cross-encoder",
            verbose=0,
            device=self.device,
            batch_size=self._batch_size,
            model_kwargs={"local_files_only": local_only},
            # The one place rerankers lets us bound the input: it truncates at model_max_length.
            tokenizer_kwargs={"model_max_length": self._max_length, "local_files_only": local_only},
        )
        if ranker is None:  # rerankers prints and returns None when its dependencies are missing
            raise RerankerUnavailable(f"rerankers could not build a cross-encoder for {name!r}", model=name)
        return ranker

    @property
    def name(self) -> str:
        return self._name

    @property
    def kind(self) -> RerankerKind:
        return "cross-encoder"

    @property
    def note(self) -> str | None:
        return None

    @property
    def max_length(self) -> int:
        return self._max_length

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        with self._lock:
            ranked = self._ranker.rank(query, list(texts), doc_ids=list(range(len(texts))))
        # rerankers returns results sorted by score; put them back in input order.
        scores = [0.0] * len(texts)
        for result in ranked.results:
            scores[int(result.document.doc_id)] = float(result.score)
        return scores


class BiEncoderReranker:
    """Reranks with the dense encoder: inner product of query and passage vectors (cosine for ST models).

    Passages are encoded as documents with an empty title, the way the dense stage encodes them.
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        note: str | None = None,
        batch_size: int = 32,
        cache_size: int = 4096,
        cache_max_bytes: int = 64 * 2**20,
    ) -> None:
        self._encoder = encoder
        self._batch_size = batch_size
        self._note = note or "bi-encoder rerank (no cross-encoder configured)"
        # Passage vectors by text: the same candidates recur across questions (and across an evaluation's
        # queries), and re-encoding them is the whole cost of this reranker.
        self._cache: SizedLRU[str, FloatArray] = SizedLRU(
            cache_size, cache_max_bytes, lambda v: int(v.nbytes)
        )
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"bi-encoder:{self._encoder.name}"

    def cache_stats(self) -> dict[str, int]:
        """The passage-vector cache: entries, bytes, their bounds, evictions."""
        with self._lock:
            return self._cache.stats()

    @property
    def encoder(self) -> Encoder:
        """The dense encoder it scores with: a caller holding this encoder's vectors can use :meth:`score`."""
        return self._encoder

    @staticmethod
    def score(query_vector: FloatArray, passage_vectors: Sequence[FloatArray]) -> list[float]:
        """Scores of already-encoded passages, computed exactly as :meth:`rerank` computes them."""
        q = np.asarray(query_vector, dtype=np.float64)
        return [float(np.dot(np.asarray(v, dtype=np.float64), q)) for v in passage_vectors]

    @property
    def kind(self) -> RerankerKind:
        return "bi-encoder"

    @property
    def note(self) -> str | None:
        return self._note

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        q = self._encoder.encode_queries([query], batch_size=1)[0]
        with self._lock:
            found = {t: v for t in dict.fromkeys(texts) if (v := self._cache.get(t)) is not None}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            vecs = self._encoder.encode_documents([("", t) for t in missing], batch_size=self._batch_size)
            with self._lock:
                for t, v in zip(missing, vecs, strict=True):
                    found[t] = v
                    self._cache.put(t, v)  # may not keep it (bounds): this call scores with it anyway
        return self.score(q, [found[t] for t in texts])


def load_reranker(settings: RerankSettings, *, encoder: Encoder | None = None) -> Reranker:
    """The reranker ``settings`` names; the bi-encoder (over ``encoder``) when asked for or as a fallback.

    Raises :class:`RerankerUnavailable` when the cross-encoder cannot load and no fallback is possible.
    """
    if settings.model == BI_ENCODER:
        if encoder is None:
            raise RerankerUnavailable("the bi-encoder reranker needs the dense encoder", model=BI_ENCODER)
        return BiEncoderReranker(
            encoder,
            note="bi-encoder rerank: configured (offline default)",
            cache_max_bytes=settings.cache_max_bytes,
        )
    try:
        return CrossEncoderReranker(
            settings.model,
            max_length=settings.max_length,
            device=settings.device,
            batch_size=settings.batch_size,
        )
    except RerankerUnavailable as exc:
        if not settings.fallback_to_bi_encoder or encoder is None:
            raise
        where = "offline: " if _hub_offline() else ""
        return BiEncoderReranker(
            encoder,
            note=f"{where}bi-encoder rerank, cross-encoder {settings.model!r} unavailable ({exc})",
            cache_max_bytes=settings.cache_max_bytes,
        )

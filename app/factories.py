"""Factories of the process's long-lived parts, and the loader of its models.

``build_*`` build the E-utilities transport and client, the LLM and the query understander from settings;
:class:`Models` loads the process's models (dense retriever, encoder, reranker, passage stage) on first
use. :mod:`app.container` calls them once per process and injects the parts; ``build_pipeline`` there builds
a :class:`~app.pipeline.Pipeline` alone (the CLI's offline jobs, evaluation, benchmarks, tests).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import httpx

from core import CometaError, Encoder, OnProgress, Reranker
from llm import LLMClient, build_llm
from retrieval import EutilsClient, create_eutils_app, eutils_transport
from retrieval.embed import BiEncoderReranker, DenseRetriever, load_encoder, load_reranker, open_retriever
from retrieval.eutils import LOCAL_BASE_URL, CacheStore, RateLimiter, deadline_paused
from retrieval.localncbi import SimilarArticles
from retrieval.ncbi import PubmedRecord
from retrieval.passages import PASSAGE_STORE_FILE, PassageRetriever
from retrieval.understand import QueryUnderstander, spell_correct
from segmentation import SEOSSegmenter, counter_for

from .privacy import PhiPolicy
from .settings import Settings, local_server_settings

__all__ = [
    "Models",
    "build_dense_retriever",
    "build_eutils_client",
    "build_eutils_transport",
    "build_llm",
    "build_understander",
    "passage_store_path",
    "similar_articles",
]

log = logging.getLogger("cometa.pipeline")
_PROGRESS_LOG_S = 5.0  # the least time between two progress lines of an index build


def build_dense_retriever(
    settings: Settings, *, encoder: Encoder | None = None, on_progress: OnProgress | None = None
) -> DenseRetriever:
    """Encoder (``encoder``, else the one the settings name) + vector index; offline, the local corpus's
    index (the bundled one or ``COMETA_LOCAL_SERVER__CORPUS_DIR``'s world) is built on first use and cached
    by corpus content and encoder, with ``on_progress(documents seen, total)`` while it builds."""
    local = settings.eutils.backend == "local"
    return open_retriever(
        settings.dense,
        bundled=local,
        corpus_dir=settings.local_server.corpus_dir,
        encoder=encoder,
        on_progress=on_progress,
    )


def build_eutils_transport(
    settings: Settings, models: Models | None = None
) -> httpx.AsyncBaseTransport | None:
    """Offline (``eutils.backend="local"``): the local NCBI-compatible server over the corpus, in-process,
    with ESpell answered by the query speller and, given ``models``, similar articles (ELink
    ``neighbor_score``) by the dense index; None: real HTTP to ``eutils.base_url``."""
    if settings.eutils.backend != "local":
        return None
    similar = similar_articles(models) if models is not None else None
    server = local_server_settings(settings.local_server)  # its rate limit and faults: COMETA_LOCAL_SERVER__*
    app = create_eutils_app(server, speller=spell_correct, similar=similar)
    return eutils_transport(app)


def similar_articles(models: Models) -> SimilarArticles:
    """PubMed's "similar articles" from the dense index: the record's title and abstract as the query
    (the index is loaded on first use; nothing when dense retrieval is off or failed)."""

    async def similar(record: PubmedRecord, n: int) -> list[tuple[str, float]]:
        dense = await models.dense_retriever()
        if dense is None:
            return []
        hits = await dense.asearch(f"{record.title}\n{record.abstract_text}", n + 1)
        return [(h.pmid, h.score) for h in hits]

    return similar


def build_eutils_client(
    settings: Settings,
    transport: httpx.AsyncBaseTransport | None,
    *,
    store: CacheStore | None = None,
    limiter: RateLimiter | None = None,
) -> EutilsClient:
    """The E-utilities client over ``transport`` (:func:`build_eutils_transport`); a ``store`` or
    ``limiter`` given stays its owner's to close (else the client opens one from its settings)."""
    eutils = settings.eutils
    if eutils.backend == "local":
        eutils = eutils.model_copy(update={"base_url": LOCAL_BASE_URL})
    return EutilsClient(eutils, transport=transport, store=store, limiter=limiter)


def passage_store_path(dense: DenseRetriever) -> Path | None:
    """Where the corpus's precomputed passages live: beside the dense index (None for an index without a
    folder, e.g. Qdrant or in memory)."""
    folder = getattr(dense.index, "directory", None)
    return Path(folder) / PASSAGE_STORE_FILE if folder is not None else None


def build_understander(
    settings: Settings, llm: LLMClient | None, *, phi: PhiPolicy | None = None
) -> QueryUnderstander:
    """Understand (LLM rewriter with the deterministic one as its net; deterministic alone without ``llm``),
    scrubbing what the LLM sees by ``phi`` (default: the settings' PHI policy)."""
    policy = phi or PhiPolicy.from_settings(settings.llm)
    return QueryUnderstander(llm=llm, scrub_for_llm=policy.scrub_for_llm)


class Models:
    """The process's models, each loaded once on first use (in a thread): the dense retriever (encoder +
    index), the encoder alone when dense retrieval is off or failed, the reranker on that encoder and the
    passage stage over them. One copy of each model serves the pipeline and the collections alike.

    ``encoder`` injects the dense encoder (tests); the index is still opened or built from the settings.
    While the dense retriever loads (a world's first index build can take minutes), :meth:`dense_status`
    says so without waiting; :meth:`app.container.Container.start_warming` loads them in the background.
    """

    def __init__(
        self, settings: Settings, *, dense: DenseRetriever | None = None, encoder: Encoder | None = None
    ) -> None:
        self.settings = settings
        self._dense = dense
        self.dense_error: str | None = None  # why the dense retriever could not load
        self._given_encoder = encoder
        self._encoder: Encoder | None = None
        self._dense_progress: tuple[int, int] | None = None  # (seen, total) of an index build under way
        self._progress_logged = 0.0  # when the last progress line was logged (monotonic)
        self._reranker: Reranker | None = None
        self._passages: PassageRetriever | None = None
        self.passages_error: str | None = None  # why the passage stage last failed to build
        # One lock each: building the passage stage takes the reranker's, which takes the encoder's.
        self._dense_lock = asyncio.Lock()
        self._encoder_lock = asyncio.Lock()
        self._reranker_lock = asyncio.Lock()
        self._passages_lock = asyncio.Lock()

    async def dense_retriever(self) -> DenseRetriever | None:
        """Model + index; None when dense retrieval is off or, with a remembered reason, cannot load."""
        if not self.settings.dense.enabled:
            return None
        if self._dense is None and self.dense_error is None:
            # A question that arrives while the index loads waits here, not on NCBI: its deadline waits too.
            with deadline_paused():
                return await self._load_dense()
        return self._dense

    async def _load_dense(self) -> DenseRetriever | None:
        async with self._dense_lock:
            if self._dense is None and self.dense_error is None:
                self._dense_progress = (0, 0)
                started, self._progress_logged = time.monotonic(), float("-inf")  # log the first block
                log.info("dense index: loading the encoder and the index")
                try:
                    self._dense = await asyncio.to_thread(
                        build_dense_retriever,
                        self.settings,
                        encoder=self._given_encoder,
                        on_progress=self._on_dense_progress,
                    )
                except CometaError as exc:
                    self.dense_error = f"{type(exc).__name__}: {exc}"
                    log.warning("dense retrieval disabled: %s", self.dense_error)
                else:
                    took = time.monotonic() - started
                    log.info("dense index: ready, %d vectors (%.1f s)", len(self._dense.index), took)
                finally:
                    self._dense_progress = None
        return self._dense

    def _on_dense_progress(self, done: int, total: int) -> None:
        # Called from the build's worker thread; a tuple swap is atomic, readers see one or the other.
        self._dense_progress = (done, total)
        # A build is silent otherwise for minutes: one line per block, at most every few seconds.
        now = time.monotonic()
        if done == total or now - self._progress_logged >= _PROGRESS_LOG_S:
            self._progress_logged = now
            of = f"/{total}" if total else ""
            log.info("dense index: encoding %d%s documents", done, of)

    def dense_status(self) -> dict[str, Any]:
        """Readiness of the dense arm, without waiting: ``ok`` and ``vectors`` once loaded; else ``ok``
        False with the ``reason`` (loading, building the index d/N, failed)."""
        if not self.settings.dense.enabled:
            return {"ok": True, "disabled": True}
        if self._dense is not None:
            return {"ok": True, "vectors": len(self._dense.index)}
        if self.dense_error is not None:
            return {"ok": False, "vectors": 0, "reason": f"dense retrieval unavailable: {self.dense_error}"}
        progress = self._dense_progress
        if progress is None:
            return {"ok": False, "vectors": 0, "reason": "dense retriever not loaded yet"}
        done, total = progress
        if done == 0:
            reason = "loading the dense encoder and index"
        else:
            of = f"/{total}" if total else ""
            reason = f"building the dense index: {done}{of} documents"
        return {"ok": False, "vectors": 0, "reason": reason, "done": done, "total": total}

    def passages_status(self) -> dict[str, Any]:
        """Readiness of the passage stage, without waiting: ``ok`` once built; ``ok`` (``disabled``) when
        it cannot be, the dense retriever having failed (answers then come without passages)."""
        if self._passages is not None:
            return {"ok": True}
        if self.dense_error is not None or not self.settings.dense.enabled:
            return {"ok": True, "disabled": True}
        if self.passages_error is not None:
            return {"ok": False, "reason": f"passage stage unavailable: {self.passages_error}"}
        return {"ok": False, "reason": "loading the passage stage"}

    async def encoder(self) -> Encoder:
        """The dense retriever's encoder; loaded alone when there is no dense retriever."""
        async with self._encoder_lock:
            if self._encoder is None:
                dense = await self.dense_retriever()
                if dense is not None:
                    self._encoder = dense.encoder
                elif self._given_encoder is not None:
                    self._encoder = self._given_encoder
                else:
                    self._encoder = await asyncio.to_thread(load_encoder, self.settings.dense)
        return self._encoder

    async def reranker(self) -> Reranker:
        async with self._reranker_lock:
            if self._reranker is None:
                encoder = await self.encoder()
                self._reranker = await asyncio.to_thread(load_reranker, self.settings.rerank, encoder=encoder)
        return self._reranker

    def cache_stats(self) -> dict[str, dict[str, int]]:
        """Sizes of the models' caches loaded so far (entries, bytes, bounds, hits, misses, evictions):
        the passage cache, the dense query vectors, the bi-encoder reranker's passage vectors."""
        out: dict[str, dict[str, int]] = {}
        if self._passages is not None:
            st = self._passages.cache.stats
            out["passages"] = {
                "entries": st.size,
                "bytes": st.nbytes,
                "max_entries": st.capacity,
                "max_bytes": st.max_bytes,
                "hits": st.vector_hits,
                "misses": st.vector_misses,
                "evictions": st.evictions,
            }
        if self._dense is not None:
            out["dense_queries"] = self._dense.cache_stats()
        if isinstance(self._reranker, BiEncoderReranker):  # a cross-encoder keeps no vectors
            out["rerank_vectors"] = self._reranker.cache_stats()
        return out

    async def passage_retriever(self) -> PassageRetriever | None:
        """SEOS + passage retrieval + rerank on the dense encoder; None without a dense retriever."""
        if self._passages is not None:  # every question asks: no lock once it is built
            return self._passages
        dense = await self.dense_retriever()
        if dense is None:
            return None
        with deadline_paused():  # the passage stage loading is not NCBI's time either
            async with self._passages_lock:
                if self._passages is None:
                    try:
                        self._passages = await self._build_passages(dense)
                    except Exception as exc:
                        # Said by /readyz; the next question tries again (and fails the same way, loudly).
                        self.passages_error = f"{type(exc).__name__}: {exc}"
                        raise
                    self.passages_error = None
        return self._passages

    async def _build_passages(self, dense: DenseRetriever) -> PassageRetriever:
        encoder = dense.encoder
        counter = await asyncio.to_thread(counter_for, encoder)
        reranker = await self.reranker()
        segmenter = SEOSSegmenter(encoder, counter)
        passages = PassageRetriever(
            segmenter, encoder, reranker, self.settings.passages, counter=counter, vectors=dense
        )
        store = passage_store_path(dense)
        if store is not None:
            # Full texts segmented and encoded at index time (cometa index passages), if built.
            loaded = await asyncio.to_thread(passages.cache.load, store)
            if loaded:
                log.info("passage store: %d documents from %s", loaded, store)
        return passages

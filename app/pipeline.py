"""Retrieval orchestration: settings -> the stages, wired once; shared by the CLI, evaluation and the service.

``Pipeline.search``: Understand -> (Adapt-E Boolean arm ‖ dense arm) -> RRF -> one batched EFetch ->
metadata filters and depth policy -> an ordered evidence list. :class:`Models` loads the process's models
(dense retriever, encoder, reranker, passage stage) on first use; ``build_*`` build the other long-lived
parts from settings. :mod:`app.container` wires them once per process and injects them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.schemas import SearchOut
from core import CometaError, Encoder, OnProgress, Reranker, light_stem, words
from llm import LLMClient, build_llm
from retrieval import AdaptE, AdaptEResult, EutilsClient, MeshVocabulary, create_eutils_app, eutils_transport
from retrieval.embed import (
    BiEncoderReranker,
    DenseHit,
    DenseRetriever,
    EncodeFailed,
    load_encoder,
    load_reranker,
    open_retriever,
)
from retrieval.eutils import LOCAL_BASE_URL, CacheStore, EutilsDegradation, RateLimiter, track_degradation
from retrieval.evidence import EvidenceBuilder, EvidenceDoc, EvidenceSet, classify, depth_for
from retrieval.ncbi import (
    BUNDLED_CORPUS_DIR,
    EutilsError,
    PubmedRecord,
    SimilarArticles,
    corpus_vocabulary,
    load_corpus,
)
from retrieval.passages import PASSAGE_STORE_FILE, PassageContext, PassageRetriever
from retrieval.search import FusedHit, fuse
from retrieval.understand import (
    PhiLeakError,
    QueryUnderstander,
    ScrubResult,
    Understanding,
    assert_no_phi,
    scrub_any_case,
    spell_correct,
)
from segmentation import SEOSSegmenter, counter_for

from .gate import EvidenceSignals, common_english, evidence_signals, phrase_candidates, rare_words
from .privacy import PhiPolicy
from .settings import Settings, local_server_settings

__all__ = [
    "Models",
    "Pipeline",
    "SearchOutcome",
    "build_dense_retriever",
    "build_eutils_client",
    "build_eutils_transport",
    "build_passage_store",
    "passage_store_path",
    "similar_articles",
]

log = logging.getLogger("cometa.pipeline")


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


async def build_passage_store(
    pipeline: Pipeline, *, batch: int = 8, on_progress: OnProgress | None = None
) -> tuple[int, int, Path]:
    """Segment and encode, once, every full text of the offline corpus that the evidence stage deepens (its
    depth policy; D2 reviews with a PMC copy by default), exactly as a question would (same evidence
    documents, same cache keys), and write them beside the dense index, where the passage stage loads
    them. Returns (documents, passages, path)."""
    settings = pipeline.settings
    passages = await pipeline.passage_retriever()
    dense = await pipeline.dense_retriever()
    if settings.eutils.backend != "local" or passages is None or dense is None:
        raise CometaError("the passage store is built offline, with the dense index and passages on")
    path = passage_store_path(dense)
    if path is None:
        raise CometaError("the dense index has no folder to keep the passage store in")
    corpus = await asyncio.to_thread(load_corpus, settings.local_server.corpus_dir)
    wanted = [
        r.pmid
        for r in corpus.records.values()
        if r.pmcid and depth_for(classify(r), settings.evidence) == "fulltext"
    ]
    kept: dict[str, Any] = {}
    encoded = 0
    for start in range(0, len(wanted), batch):
        hits = [FusedHit(p, 0.0, n, ()) for n, p in enumerate(wanted[start : start + batch], start=1)]
        evidence = await pipeline.evidence.build(hits)
        docs = [d for d in evidence.docs if d.depth_used == "fulltext"]
        encoded += await asyncio.to_thread(passages.precompute, docs)
        kept.update(passages.cache.entries())
        if on_progress is not None:
            on_progress(min(start + batch, len(wanted)), len(wanted))
    full = {k: v for k, v in kept.items() if any(kind == "section" for _, kind, _ in v[0])}
    await asyncio.to_thread(passages.cache.save, path, full)
    return len(full), encoded, path


def _year(value: str | None) -> int | None:
    return int(value[:4]) if value and value[:4].isdigit() else None


@dataclass
class SearchOutcome:
    understanding: Understanding
    adapte: AdaptEResult
    dense: list[DenseHit]
    fused: list[FusedHit]
    evidence: EvidenceSet
    context: PassageContext | None = None  # passages for the answer (None when passages are off)
    warnings: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # E-utilities failures, stale cache answers and missing records of this question (None: not tracked).
    eutils: EutilsDegradation | None = None
    absent_terms: int = 0  # rare question words no record contains (the evidence gate's signal)
    absent_phrases: int = 0  # question phrases whose words the evidence has, but no record together
    absent_technical: int = 0  # of absent_terms, those that are not English words (a drug name, a procedure)

    @property
    def pmids(self) -> list[str]:
        """The final ranking: fused, fetched, filtered."""
        return list(self.evidence.pmids)

    def gate_signals(
        self,
        docs: Sequence[EvidenceDoc] | None = None,
        context: PassageContext | None = None,
        *,
        top_docs: int = 5,
        lay_words: frozenset[str] = frozenset(),
    ) -> EvidenceSignals:
        """The evidence gate's signals (``app.gate``) of ``docs`` (default: this outcome's evidence) for the
        corrected question: dense similarities, the Boolean tier that matched, coverage, rerank scores."""
        docs = list(self.evidence.docs) if docs is None else docs
        plan = self.understanding.plan
        return evidence_signals(
            plan.corrected_question,
            docs,
            adapte=self.adapte,
            dense=[(h.pmid, h.score) for h in self.dense],
            context=self.context if context is None else context,
            top_docs=top_docs,
            concepts=[(c.text, c.mesh) for c in plan.concepts if c.recognised],
            lay_words=lay_words,
            absent_terms=self.absent_terms,
            absent_phrases=self.absent_phrases,
            absent_technical=self.absent_technical,
            health=self.understanding.scope.health,
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON of ``/search`` and ``cometa search --json`` (:class:`~app.schemas.SearchOut`)."""
        return SearchOut.of(self).model_dump(mode="json")


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
        self._reranker: Reranker | None = None
        self._passages: PassageRetriever | None = None
        # One lock each: building the passage stage takes the reranker's, which takes the encoder's.
        self._dense_lock = asyncio.Lock()
        self._encoder_lock = asyncio.Lock()
        self._reranker_lock = asyncio.Lock()
        self._passages_lock = asyncio.Lock()

    async def dense_retriever(self) -> DenseRetriever | None:
        """Model + index; None when dense retrieval is off or, with a remembered reason, cannot load."""
        if not self.settings.dense.enabled:
            return None
        async with self._dense_lock:
            if self._dense is None and self.dense_error is None:
                self._dense_progress = (0, 0)
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
                finally:
                    self._dense_progress = None
        return self._dense

    def _on_dense_progress(self, done: int, total: int) -> None:
        # Called from the build's worker thread; a tuple swap is atomic, readers see one or the other.
        self._dense_progress = (done, total)

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
        async with self._passages_lock:
            if self._passages is None:
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
                self._passages = passages
        return self._passages


class Pipeline:
    """One E-utilities client, one LLM client and the process's models, for the life of a process.

    What is not given is built from ``settings`` (tests, benchmarks); :mod:`app.container` gives everything.
    ``aclose`` closes the client and the LLM, given or built.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        client: EutilsClient | None = None,
        llm: LLMClient | None = None,
        use_llm: bool = True,
        dense: DenseRetriever | None = None,
        use_dense: bool = True,
        use_passages: bool = True,
        models: Models | None = None,
        understander: QueryUnderstander | None = None,
    ) -> None:
        if dense is not None and models is not None:
            raise ValueError("give the dense retriever or the models holding it, not both")
        self.settings = settings
        if client is None:
            client = build_eutils_client(settings, build_eutils_transport(settings))
        self.client = client
        if llm is None and use_llm:
            llm = build_llm(settings.llm)
        self.llm = llm if use_llm else None
        if understander is None:
            scrub = PhiPolicy.from_settings(settings.llm).scrub_for_llm
            understander = QueryUnderstander(llm=self.llm, scrub_for_llm=scrub)
        self.understander = understander
        a = settings.adapte
        self.adapte = AdaptE(
            client,
            min_hits=a.min_hits,
            retmax=a.retmax,
            sort=a.sort,
            vocabulary=MeshVocabulary.load(),
            speculative=a.speculative,
            strategy=a.strategy,
            union_retmax=a.union_retmax,
            # Offline, tiers are checked with the very vocabulary the local server explodes MeSH with.
            check_vocabulary=(
                (lambda: corpus_vocabulary(settings.local_server.corpus_dir or BUNDLED_CORPUS_DIR))
                if settings.eutils.backend == "local"
                else None
            ),
        )
        self.use_dense = use_dense and settings.dense.enabled
        self.models = models or Models(settings, dense=dense)
        self.evidence = EvidenceBuilder(client, settings.evidence)
        self.use_passages = use_passages
        self._everyday: tuple[object, frozenset[str], frozenset[str]] | None = None  # see _everyday_words

    def cache_stats(self) -> dict[str, dict[str, int]]:
        """:meth:`Models.cache_stats` plus the E-utilities response cache when it lives in this process."""
        out = self.models.cache_stats()
        store = self.client.store
        if store is not None and (sizes := store.sizes()) is not None:
            out["eutils"] = sizes
        return out

    async def warm_vocabularies(self) -> None:
        """Load what a first question would otherwise pay for besides the models: the deterministic
        rewriter's vocabularies (spelling, MeSH, lexicon) and Adapt-E's tier-check vocabulary."""

        def load() -> None:
            self.understander.rewriter.rewrite("does chemotherapy help breast cancer patients")
            self.understander.rewriter.prepare()  # clean text never touches the speller's index
            self._everyday_words()  # the gate's everyday words
            self.adapte.prepare()

        await asyncio.to_thread(load)

    async def __aenter__(self) -> Pipeline:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.client.aclose()
        if self.llm is not None:
            await self.llm.aclose()

    async def dense_retriever(self) -> DenseRetriever | None:
        """The dense arm, loaded once (model + index); None when off or, with a remembered reason, if it
        cannot load."""
        if not self.use_dense:
            return None
        return await self.models.dense_retriever()

    async def passage_retriever(self) -> PassageRetriever | None:
        """SEOS + passage retrieval + rerank on the dense encoder; None when the dense arm is unavailable."""
        if not self.use_passages or not self.use_dense:
            return None
        return await self.models.passage_retriever()

    async def passages_for(
        self, question: str, docs: Sequence[EvidenceDoc], warnings: list[str]
    ) -> PassageContext | None:
        """The passages of ``docs`` for ``question``; None without a passage retriever, without documents,
        or when the encoder fails (like an unavailable dense arm: the answer goes on, and ``warnings`` says
        so). Every answer path asks here, so an encoder failure never becomes a 500."""
        passages = await self.passage_retriever()
        if passages is None or not docs:
            return None
        try:
            return await passages.retrieve(question, docs)
        except EncodeFailed as exc:
            cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "EncodeFailed"
            log.warning("passage encoding failed (%s); no passages for this request", cause)
            warning = f"passage retrieval unavailable (encoder failed: {cause}); no passages"
            if warning not in warnings:  # user documents merged after retrieval: said once
                warnings.append(warning)
            return None

    def gate_signals(
        self,
        outcome: SearchOutcome,
        docs: Sequence[EvidenceDoc] | None = None,
        context: PassageContext | None = None,
    ) -> EvidenceSignals:
        """The evidence gate's signals of ``outcome`` (or of ``docs``/``context`` cut from it) with this
        pipeline's settings and lay lexicon: what /ask, the sources service and the calibration all use."""
        return outcome.gate_signals(
            docs,
            context,
            top_docs=self.settings.gate.coverage_documents,
            lay_words=self.understander.rewriter.lay_words,
        )

    async def search(
        self,
        question: str,
        *,
        mindate: str | None = None,
        maxdate: str | None = None,
        api_key: str | None = None,
        gate_documents: int | None = None,
    ) -> SearchOutcome:
        """Understand ``question``, then :meth:`retrieve`. ``gate_documents``: how many of the evidence's
        documents the evidence gate will weigh (/ask's ``max_documents``; None: all of them)."""
        t0 = time.perf_counter()
        understanding = await self.understander.understand(question)
        understand_ms = (time.perf_counter() - t0) * 1000
        outcome = await self.retrieve(
            understanding, mindate=mindate, maxdate=maxdate, api_key=api_key, gate_documents=gate_documents
        )
        outcome.timings_ms = {"understand": understand_ms, **outcome.timings_ms}
        return outcome

    async def retrieve(
        self,
        understanding: Understanding,
        *,
        mindate: str | None = None,
        maxdate: str | None = None,
        api_key: str | None = None,
        gate_documents: int | None = None,
    ) -> SearchOutcome:
        """Everything after Understand; the evaluation suites call this with precomputed plans.
        ``gate_documents``: how many of the evidence's documents the evidence gate will weigh (None: all).

        Degraded mode: with NCBI unavailable, expired cache entries answer (stale-if-error) and, if the
        Boolean arm fails outright, the local dense arm answers alone with cached records; both are marked
        in ``warnings`` ("NCBI unavailable: ..."). When nothing can be served, the E-utilities error
        propagates (the API's 503 with the reason).
        """
        with track_degradation() as degradation:
            outcome = await self._retrieve(
                understanding, degradation, mindate, maxdate, api_key, gate_documents
            )
        outcome.eutils = degradation
        if degradation.stale_served:
            minutes = max(1, round(degradation.max_stale_age_s / 60))
            outcome.warnings.append(
                f"NCBI unavailable: answered from cache ({degradation.stale_served} E-utilities results "
                f"up to {minutes} min old)"
            )
        if degradation.unserved:
            outcome.warnings.append(
                f"NCBI unavailable: {degradation.unserved} records could not be fetched; evidence may be "
                "incomplete"
            )
        return outcome

    async def _retrieve(
        self,
        understanding: Understanding,
        degradation: EutilsDegradation,
        mindate: str | None,
        maxdate: str | None,
        api_key: str | None,
        gate_documents: int | None = None,
    ) -> SearchOutcome:
        plan = understanding.plan
        timings: dict[str, float] = {}
        warnings: list[str] = []
        started = time.perf_counter()
        boolean_error: EutilsError | None = None

        async def boolean_arm() -> AdaptEResult:
            nonlocal boolean_error
            try:
                result = await self.adapte.run(plan, mindate=mindate, maxdate=maxdate, api_key=api_key)
            except EutilsError as exc:
                # Only an outage (not a refused query) lets the local dense arm answer alone.
                if not (degradation.unavailable and self.use_dense):
                    raise
                boolean_error = exc
                result = AdaptEResult(
                    pmids=(), tiers=(), zero_hit=False, fallback_used=False, stopped_at=None
                )
            timings["esearch"] = (time.perf_counter() - started) * 1000
            return result

        async def dense_arm() -> list[DenseHit]:
            retriever = await self.dense_retriever()
            if retriever is None:
                return []
            hits = await retriever.asearch(plan.corrected_question, self.settings.dense.top_k)
            timings["dense"] = (time.perf_counter() - started) * 1000
            return hits

        boolean, dense = await asyncio.gather(boolean_arm(), dense_arm())
        prefetched: dict[str, PubmedRecord] | None = None
        if boolean.union_hits:
            # Strategy "union": one EFetch for both arms' candidates serves the local tier check and the
            # evidence stage alike (no second EFetch); if it fails, the evidence stage fails the usual way.
            wanted = list(dict.fromkeys([*boolean.pmids, *(h.pmid for h in dense)]))
            try:
                prefetched = {r.pmid: r for r in await self.client.efetch_pubmed(wanted, api_key=api_key)}
            except EutilsError:
                prefetched = None
            else:
                t_rank = time.perf_counter()
                # The dense candidates' records came in the same EFetch: those that satisfy a tier join it.
                others = [h.pmid for h in dense]
                boolean = await asyncio.to_thread(self.adapte.rank_locally, plan, boolean, prefetched, others)
                timings["tier_check"] = (time.perf_counter() - t_rank) * 1000
        if boolean_error is not None:
            if not dense:
                raise boolean_error
            warnings.append(
                "NCBI unavailable: PubMed search failed; answered from the local dense index and cached "
                "records only"
            )
        if self.use_dense and self.models.dense_error:
            warnings.append(f"dense retrieval unavailable ({self.models.dense_error}); Boolean arm only")
        if boolean.date_limits_relaxed:
            warnings.append("no evidence within the requested years; older evidence shown")
        t1 = time.perf_counter()
        fused = fuse(self.settings.evidence, boolean=boolean, dense=dense)
        timings["fuse"] = (time.perf_counter() - t1) * 1000
        min_year, max_year = _year(mindate), _year(maxdate)
        if min_year is None and max_year is None and plan.date_limits is not None:
            min_year, max_year = plan.date_limits.min_year, plan.date_limits.max_year
        if boolean.date_limits_relaxed:
            min_year = max_year = None  # the window was already given up for this question, on purpose
        t2 = time.perf_counter()
        try:
            evidence = await self.evidence.build(
                fused, min_year=min_year, max_year=max_year, api_key=api_key, records=prefetched
            )
        except EutilsError as exc:
            if boolean_error is not None:
                raise boolean_error from exc  # the search failure is the reason to report, as before
            raise
        if boolean_error is not None and not evidence.docs:
            raise boolean_error
        timings["metadata"] = (time.perf_counter() - t2) * 1000
        t3 = time.perf_counter()
        context = await self.passages_for(plan.corrected_question, evidence.docs, warnings)
        if context is not None and context.rerank_note:
            warnings.append(context.rerank_note)
        if evidence.docs and await self.passage_retriever() is not None:
            timings["passages"] = (time.perf_counter() - t3) * 1000
        outcome = SearchOutcome(understanding, boolean, dense, fused, evidence, context, warnings, timings)
        absent = await self._absent(understanding, evidence, dense, api_key, gate_documents)
        outcome.absent_terms, outcome.absent_technical, outcome.absent_phrases = absent
        return outcome

    def _everyday_words(self) -> tuple[frozenset[str], frozenset[str]]:
        """(everyday English plus the rewriter's common words and stopwords, the latter two alone): large
        unions, built once per rewriter rather than per question on the event loop. The first is empty when
        :func:`~app.gate.common_english` is."""
        rewriter = self.understander.rewriter
        cached = self._everyday
        if cached is None or cached[0] is not rewriter:
            everyday = frozenset(rewriter.lexicon.common_words | rewriter.lexicon.stopwords)
            english = common_english()
            cached = self._everyday = (rewriter, english | everyday if english else frozenset(), everyday)
        return cached[1], cached[2]

    async def _absent(
        self,
        understanding: Understanding,
        evidence: EvidenceSet,
        dense: Sequence[DenseHit],
        api_key: str | None,
        gate_documents: int | None = None,
    ) -> tuple[int, int, int]:
        """Rare words of the question that not one PubMed record contains, those of them that are not English
        (technical terms), and phrases of the question whose words the evidence contains but not one record
        together (the evidence gate's signals).

        A word or phrase the fetched evidence already contains needs no lookup; only the others cost one
        count-only ESearch each, so an answerable question usually adds no E-utilities call (issue 17's
        budget). Phrases are counted only when a dense hit is among the gate's own documents (the first
        ``gate_documents`` of the evidence, which every caller's cut keeps) and the best of them stays below
        the similarity that lets an absent phrase pass anyway: with no such hit (the dense arm found nothing,
        or nothing the gate reads) the gate has no similarity and never abstains on phrases, so the count
        could not change the verdict. Every count query passes the ladder's PHI check (:func:`_may_leave`);
        none is sent when the gate's everyday words are missing (:func:`~app.gate.common_english`)."""
        gate = self.settings.gate
        rewriter = self.understander.rewriter
        plain, everyday = self._everyday_words()
        if not plain:
            return 0, 0, 0  # fail closed: without everyday English, common first names would count as rare
        question = understanding.plan.corrected_question
        checks = gate.absent_term_checks
        terms = rare_words(question, rewriter.is_known_word, limit=checks) if checks else []
        phrases: list[str] = []
        if gate.absent_phrase_checks and gate.absent_phrase_max_dense > -1.0 and dense:
            shown = {d.pmid for d in evidence.docs[:gate_documents]}
            best = max((h.score for h in dense if h.pmid in shown), default=None)
            if best is not None and best < gate.absent_phrase_max_dense:
                phrases = phrase_candidates(
                    question, rewriter.is_known_word, everyday, limit=gate.absent_phrase_checks
                )
        if not terms and not phrases:
            return 0, 0, 0  # most questions: every word is known, so the documents need not be read
        # Reading every full text is CPU work: off the event loop.
        terms, queries = await asyncio.to_thread(_unseen, evidence.docs, terms, phrases)
        # A name starts with no everyday word: "my doctor suggests risedronate" names no doctor "Suggests".
        checked = (understanding.phi, scrub_any_case(question, plain, rewriter.is_known_word))
        leaving = [t for t in terms if _may_leave(f'"{t}"[tiab]', checked)]
        term_queries = [f'"{t}"[tiab]' for t in leaving]
        queries = [q for q in queries if _may_leave(q, checked)]

        async def count(query: str) -> int:
            try:
                return (await self.client.esearch(query, retmax=0, api_key=api_key)).count
            except EutilsError:
                return 1  # unknown: never a reason to abstain

        counts = await asyncio.gather(*(count(q) for q in term_queries), *(count(q) for q in queries))
        n = len(term_queries)
        absent = [t for t, c in zip(leaving, counts[:n], strict=True) if c == 0]
        # Each test builds the word's one-edit neighbours: CPU work, off the event loop.
        technical = (
            await asyncio.to_thread(lambda: sum(1 for t in absent if rewriter.is_technical_word(t)))
            if absent
            else 0
        )
        return len(absent), technical, sum(1 for c in counts[n:] if c == 0)


def _unseen(docs: Sequence[EvidenceDoc], terms: list[str], phrases: list[str]) -> tuple[list[str], list[str]]:
    """The ``terms`` no document of ``docs`` contains, and the count queries of the ``phrases`` whose words
    the documents contain, but never side by side."""
    seen: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for d in docs:
        for text in (d.title, *(u.text for u in d.text_units)):
            tokens = words(text)
            seen.update(tokens)
            if phrases:
                stems = [light_stem(w) for w in tokens]
                pairs.update(itertools.pairwise(stems))
    stems_seen = {light_stem(w) for w in seen} if phrases else set()
    queries: list[str] = []
    for phrase in phrases:
        a, b = phrase.split()
        pair = (light_stem(a), light_stem(b))
        # Only the words found apart: a word the literature lacks is rare_words' signal, not this one.
        if pair[0] in stems_seen and pair[1] in stems_seen and pair not in pairs:
            queries.append(f'"{phrase}*"[tiab]' if len(b) >= 4 else f'"{phrase}"[tiab]')
    return [t for t in terms if t not in seen], queries


def _may_leave(query: str, found: Sequence[ScrubResult]) -> bool:
    """Whether a count query built from the question passes the ladder's PHI check against what the
    scrubber found in the question (and, :func:`~retrieval.understand.scrub_any_case`, what its name cues
    would find in any casing)."""
    try:
        for f in found:
            assert_no_phi(query, f)
    except PhiLeakError:
        return False
    return True

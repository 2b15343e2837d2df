"""The composition root: every long-lived component of one process, built once from :class:`Settings`.

Construction order (each part gets what it needs from the ones before it; none builds another's parts):

1. the PHI policy (:class:`~app.privacy.PhiPolicy`), the one decision on what an LLM may see;
2. the models (:class:`~app.factories.Models`: dense retriever, encoder, reranker, passage stage), which
   load on first use, so building the container (and ``/healthz``) waits on none of them;
3. the E-utilities transport: offline, the local NCBI-compatible server over the corpus, in-process (its
   similar-articles answers come from the models of 2); live, none (real HTTP);
4. the E-utilities response cache store and the NCBI rate limiter (per process, or shared through Redis),
   then the E-utilities client over 3-4;
5. the LLM client (None when LLM stages are off);
6. the rewriter, with the PHI policy, and the retrieval :class:`~app.pipeline.Pipeline` over 2-6;
7. the :class:`~app.answer.Answerer` (with ``settings.answer``) and the :class:`~app.judge.CrossSourceJudge`
   (None without an LLM);
8. the :class:`~app.asker.Asker` over 6-7 with the PHI policy;
9. the API's request rate limiter (a Redis one connects on first use);
10. on first use (the API's start-up): the :class:`~app.sources.SourcesService` (collections store,
    access policies, federation) on the same models and PHI policy.

:func:`build_pipeline` builds the retrieval pipeline alone (the CLI's offline jobs, evaluation, benchmarks,
tests) with the same factories (:mod:`app.factories`).

:meth:`Container.aclose` closes what it built, in reverse: the request limiter, then the pipeline, which
closes the LLM and the E-utilities client, then the cache store and the NCBI rate limiter.
"""

from __future__ import annotations

import asyncio
import logging
from functools import cached_property

import httpx

from app.sources import SourcesService
from llm import LLMClient
from retrieval.embed import DenseRetriever
from retrieval.eutils import CacheStore, EutilsClient, RateLimiter, open_limiter, open_store
from retrieval.understand import QueryUnderstander

from ._caches import CACHE_METRICS
from ._limits import RequestLimiter, build_request_limiter
from .answer import Answerer
from .asker import Asker
from .factories import Models, build_eutils_client, build_eutils_transport, build_llm, build_understander
from .judge import CrossSourceJudge
from .pipeline import Pipeline
from .privacy import PhiPolicy, install_log_hygiene
from .safety import SafetyTriage
from .settings import ApiSettings, Settings

__all__ = ["Container", "build_judge", "build_pipeline"]

log = logging.getLogger("cometa.container")


def _log_warm_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("warming the models failed", exc_info=task.exception())


def build_judge(llm: LLMClient | None, api: ApiSettings) -> CrossSourceJudge | None:
    if llm is None:
        return None  # judging is LLM-only: there is no honest deterministic stand-in
    return CrossSourceJudge(llm, max_sources=api.judge_max_sources, concurrency=api.judge_concurrency)


def build_pipeline(
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
) -> Pipeline:
    """The retrieval pipeline alone: what is not given is built from ``settings`` (the E-utilities client
    over its transport, the LLM unless ``use_llm`` is False, the understander with the settings' PHI
    policy). ``aclose`` closes the client and the LLM, given or built."""
    if client is None:
        client = build_eutils_client(settings, build_eutils_transport(settings))
    if llm is None and use_llm:
        llm = build_llm(settings.llm)
    llm = llm if use_llm else None
    if understander is None:
        understander = build_understander(settings, llm)
    return Pipeline(
        settings,
        client=client,
        llm=llm,
        understander=understander,
        dense=dense,
        use_dense=use_dense,
        use_passages=use_passages,
        models=models,
    )


class Container:
    """One of each component for the life of a process; ``async with`` closes them.

    ``use_llm``/``use_dense``/``use_passages`` switch stages off (``cometa search --no-llm``);
    ``pipeline``/``answerer``/``judge`` inject prebuilt parts (tests), which stay their owner's to close.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        api: ApiSettings | None = None,
        use_llm: bool = True,
        use_dense: bool = True,
        use_passages: bool = True,
        pipeline: Pipeline | None = None,
        answerer: Answerer | None = None,
        judge: CrossSourceJudge | None = None,
    ) -> None:
        # Every entry point builds a container: logs lose query strings and credentials from here on.
        install_log_hygiene()
        self.settings = settings
        self._warming: asyncio.Task[None] | None = None
        self.api = api or settings.api
        self.phi = PhiPolicy.from_settings(settings.llm)
        self._owns_pipeline = pipeline is None
        self.transport: httpx.AsyncBaseTransport | None = None
        self.store: CacheStore | None = None
        self.ncbi_limiter: RateLimiter | None = None
        if pipeline is None:
            models = Models(settings)  # before the transport: the local server's similar articles use it
            self.transport = build_eutils_transport(settings, models)
            self.store = open_store(settings.eutils.cache)
            self.ncbi_limiter = open_limiter(settings.eutils)
            client = build_eutils_client(
                settings, self.transport, store=self.store, limiter=self.ncbi_limiter
            )
            llm = build_llm(settings.llm) if use_llm else None
            if use_llm and llm is None:
                # Said once at start-up: an operator who meant to configure one learns it here.
                log.info(
                    "no LLM configured (COMETA_LLM__BACKEND=%s%s): answers are extractive",
                    settings.llm.backend,
                    ", COMETA_LLM__BASE_URL unset" if settings.llm.backend == "openai" else "",
                )
            understander = build_understander(settings, llm, phi=self.phi)
            pipeline = Pipeline(
                settings,
                client=client,
                llm=llm,
                use_dense=use_dense,
                use_passages=use_passages,
                models=models,
                understander=understander,
            )
        self.pipeline = pipeline
        CACHE_METRICS.track("pipeline", pipeline, Pipeline.cache_stats)  # cache sizes at /metrics
        self.client = pipeline.client
        self.llm = pipeline.llm
        self.models = pipeline.models
        self.answerer = answerer or Answerer(self.llm, settings.answer)
        self.judge = judge if judge is not None else build_judge(self.llm, self.api)
        triage = (
            SafetyTriage(self.llm, timeout_s=settings.safety.llm_timeout_s)
            if settings.safety.llm_check and self.llm is not None
            else None
        )
        self.asker = Asker(
            pipeline, self.answerer, self.judge, phi=self.phi, safety=settings.safety, triage=triage
        )
        # The API's per-key rate limit (in memory, or shared through Redis: connects on first use).
        self.request_limiter: RequestLimiter = build_request_limiter(
            self.api, default_url=self.settings.eutils.redis_limiter_url()
        )

    @cached_property
    def sources(self) -> SourcesService:
        """Collections, access decisions and federation; a bad policy file fails here (API start-up)."""
        return SourcesService(self.settings, self.pipeline, models=self.models, phi=self.phi)

    async def warm(self) -> None:
        """Load the encoder, index and reranker now, and resolve the gate's calibration for that encoder
        (``auto``: scored in a thread, cached on disk), so the first question is not the slow one."""
        await self.pipeline.dense_retriever()
        await self.pipeline.calibration()
        await self.pipeline.passage_retriever()
        await self.pipeline.warm_vocabularies()

    def start_warming(self) -> None:
        """:meth:`warm` in the background (the API's start-up): ``/healthz`` answers at once and ``/readyz``
        says why it is not ready while a first index build runs. Call on the event loop."""
        if self._warming is None:
            self._warming = asyncio.get_running_loop().create_task(self.warm())
            self._warming.add_done_callback(_log_warm_failure)

    async def __aenter__(self) -> Container:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._warming is not None and not self._warming.done():
            # A build thread cannot be interrupted; it finishes (and saves a checkpoint) on its own.
            self._warming.cancel()
        try:
            await self.request_limiter.aclose()  # the Redis limiter's connections
        finally:
            if self._owns_pipeline:
                try:
                    await self.pipeline.aclose()
                finally:
                    if self.store is not None:
                        await self.store.aclose()
                    if self.ncbi_limiter is not None:
                        await self.ncbi_limiter.aclose()

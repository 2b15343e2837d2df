"""The ops router: ``GET /healthz`` (liveness), ``GET /readyz`` (readiness of NCBI, the dense index and
the LLM) and ``GET /metrics`` (Prometheus).

``/readyz`` is public and anyone may call it in a loop, so what it asks upstream (an EInfo from the NCBI
rate budget every question needs, the LLM server's model list) is asked at most once per
``api.ready_cache_s``, and never twice at once: concurrent callers share the one probe in flight
(:class:`Readiness`). ``/metrics`` needs an API key when keys are configured, unless
``api.metrics_public``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from app.container import Container
from app.schemas import HealthResponse, ReadyResponse
from llm import LLMError, OpenAICompatibleLLM
from retrieval.ncbi import EutilsError

from ._deps import ContainerDep, check_key, key_of

ops_router = APIRouter(tags=["ops"])


class Readiness:
    """The upstream checks of ``/readyz`` (E-utilities, the LLM server), reused for ``ttl_s`` seconds.

    One probe at a time: callers arriving while one runs wait for it and share its result, so N
    concurrent ``/readyz`` cost one EInfo, not N (each from the NCBI budget that questions need).
    """

    def __init__(self, ttl_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = asyncio.Lock()
        self._owner: Container | None = None  # the container the cached checks describe
        self._checks: dict[str, Any] = {}
        self._at = float("-inf")
        self.probes = 0  # upstream probes run since start

    def _fresh(self, container: Container) -> dict[str, Any] | None:
        if self._owner is container and self._clock() - self._at < self.ttl_s:
            return self._checks
        return None

    async def checks(self, container: Container) -> dict[str, Any]:
        if (cached := self._fresh(container)) is not None:
            return cached
        async with self._lock:
            if (cached := self._fresh(container)) is not None:  # the probe we waited on answered
                return cached
            self.probes += 1
            eutils, llm = await asyncio.gather(_eutils_check(container), _llm_check(container))
            self._owner, self._checks, self._at = container, {"eutils": eutils, "llm": llm}, self._clock()
            return self._checks


def readiness_of(request: Request, container: Container) -> Readiness:
    """The app's one :class:`Readiness` (created on first use; no await in between, so one per app)."""
    readiness = getattr(request.app.state, "readiness", None)
    if not isinstance(readiness, Readiness):
        readiness = request.app.state.readiness = Readiness(container.api.ready_cache_s)
    return readiness


async def _eutils_check(container: Container) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(container.pipeline.client.einfo(), timeout=container.api.ready_timeout_s)
    except (EutilsError, TimeoutError) as exc:
        return {"ok": False, "reason": type(exc).__name__}
    return {"ok": True, "ms": round((time.perf_counter() - t0) * 1000, 1)}


async def _llm_check(container: Container) -> dict[str, Any]:
    """Without an LLM the service still answers (extractively), so it stays ready. A server's LLM is ready
    when the server lists the configured model (not merely answers: a wrong URL or model name, or a URL
    that is the API itself, answers too); an in-process one is ready once built."""
    llm = container.pipeline.llm
    if llm is None:
        return {"ok": True, "configured": False, "model": None}
    check: dict[str, Any] = {"ok": True, "configured": True, "model": llm.model_name}
    if isinstance(llm, OpenAICompatibleLLM):
        try:
            served = await asyncio.wait_for(llm.served_models(), timeout=container.api.ready_timeout_s)
        except (LLMError, TimeoutError) as exc:
            return {**check, "ok": False, "reason": type(exc).__name__}
        if llm.model_name not in served:
            return {**check, "ok": False, "reason": "the LLM server does not list this model"}
    return check


@ops_router.get("/healthz", response_model=HealthResponse)
async def healthz() -> HealthResponse:
    """Liveness: the process answers."""
    return HealthResponse(status="ok")


@ops_router.get(
    "/readyz",
    response_model=ReadyResponse,
    responses={503: {"model": ReadyResponse, "description": "not ready: the failing checks say why"}},
)
async def readyz(request: Request, container: ContainerDep, response: Response) -> ReadyResponse:
    """Readiness: E-utilities reachable (EInfo, short timeout), dense index and passage stage loaded, the
    gate's calibration resolved (which one: ``checks.calibration``), the configured LLM's model listed by its
    server. The upstream checks are reused for ``ready_cache_s`` seconds."""
    upstream = await readiness_of(request, container).checks(container)
    checks: dict[str, Any] = {"eutils": upstream["eutils"]}
    pipe = container.pipeline
    if pipe.use_dense:
        # Never waits on the model or a first index build: says what is under way instead.
        container.start_warming()  # the lifespan's warm-up (started already: then a no-op)
        checks["dense"] = pipe.models.dense_status()
        # The first answer needs the passage stage too (reranker, SEOS): ready means it answers now.
        passages = pipe.models.passages_status() if pipe.use_passages else {"ok": True, "disabled": True}
        checks["passages"] = passages
    else:
        checks["dense"] = {"ok": True, "disabled": True}
    checks["calibration"] = pipe.calibration_status()  # which dense thresholds the gate decides with
    checks["llm"] = upstream["llm"]
    required = [c for name, c in checks.items() if name != "llm" or container.api.ready_requires_llm]
    ready = all(c["ok"] for c in required)
    response.status_code = 200 if ready else 503
    return ReadyResponse(ready=ready, checks=checks)


@ops_router.get("/metrics", response_class=Response)
async def metrics(request: Request, container: ContainerDep) -> Response:
    """Prometheus exposition of the default registry (retrieval, LLM and API instruments); with API keys
    configured, for a key holder only (X-API-Key, or Authorization: Bearer as Prometheus sends it)."""
    if container.api.api_keys and not container.api.metrics_public:
        await check_key(request, container, key_of(request), "X-API-Key (or Authorization: Bearer)")
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

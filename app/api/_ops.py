"""The ops router: ``GET /healthz`` (liveness), ``GET /readyz`` (readiness of NCBI, the dense index and
the LLM) and ``GET /metrics`` (Prometheus)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from app.schemas import HealthResponse, ReadyResponse
from retrieval.ncbi import EutilsError

from ._deps import ContainerDep

ops_router = APIRouter(tags=["ops"])


@ops_router.get("/healthz", response_model=HealthResponse)
async def healthz() -> HealthResponse:
    """Liveness: the process answers."""
    return HealthResponse(status="ok")


@ops_router.get(
    "/readyz",
    response_model=ReadyResponse,
    responses={503: {"model": ReadyResponse, "description": "not ready: the failing checks say why"}},
)
async def readyz(container: ContainerDep, response: Response) -> ReadyResponse:
    """Readiness: E-utilities reachable (EInfo, short timeout), dense index loaded, LLM configured."""
    pipe = container.pipeline
    checks: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(pipe.client.einfo(), timeout=container.api.ready_timeout_s)
        checks["eutils"] = {"ok": True, "ms": round((time.perf_counter() - t0) * 1000, 1)}
    except (EutilsError, TimeoutError) as exc:
        checks["eutils"] = {"ok": False, "reason": type(exc).__name__}
    if pipe.use_dense:
        # Never waits on the model or a first index build: says what is under way instead.
        container.start_warming()  # the lifespan's warm-up (started already: then a no-op)
        checks["dense"] = pipe.models.dense_status()
    else:
        checks["dense"] = {"ok": True, "disabled": True}
    llm = pipe.llm
    # Informational: without an LLM the service still answers (extractively), so it stays ready.
    checks["llm"] = {"ok": True, "configured": llm is not None, "model": llm.model_name if llm else None}
    ready = all(c["ok"] for c in checks.values())
    response.status_code = 200 if ready else 503
    return ReadyResponse(ready=ready, checks=checks)


@ops_router.get("/metrics", response_class=Response)
async def metrics() -> Response:
    """Prometheus exposition of the default registry (retrieval, LLM and API instruments)."""
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

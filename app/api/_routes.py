"""The routes: ``/ask``, ``/ask/stream``, ``/search``, ``/judge`` and the ops endpoints, each a thin call
into the :class:`~app.asker.Asker` or the container."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from app.asker import Done, SourceDenied
from app.frontends import ask_response, event_json, judge_report_out, search_out
from app.schemas import AskRequest, AskResponse, JudgeRequest, JudgeResponse, SearchRequest, SearchResponse
from app.settings import Settings
from app.sources import InvalidToken, UnknownSource
from retrieval.ncbi import EutilsError

from ._deps import (
    _UNAUTHORIZED,
    ApiError,
    AskerDep,
    AuthDep,
    ContainerDep,
    JudgeDep,
    PipelineDep,
    _error_payload,
    _log_failure,
    _question_log,
    _request_id,
    service_of,
)

log = logging.getLogger("cometa.api")


# /ask response fields sent before ``done`` (the answer, evidence and judge events) or left out (query).
_SENT_BEFORE_DONE = {"answer", "citations", "evidence", "passages", "judge", "query"}


def _sse(event: str, data: Mapping[str, Any], seq: int) -> bytes:
    return f"id: {seq}\nevent: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _install_routes(app: FastAPI, settings: Settings) -> None:
    def log_question(route: str, request_id: str, question: str) -> None:
        log.info(json.dumps({"event": route, "request_id": request_id, **_question_log(settings, question)}))

    @app.post("/ask", response_model=AskResponse, tags=["answer"])
    async def ask(req: AskRequest, request: Request, _auth: AuthDep, asker: AskerDep) -> JSONResponse:
        """Answer a patient question with citations from PubMed (or from the supplied documents)."""
        request_id = _request_id(request)
        log_question("ask", request_id, req.question)
        # Collections and remote nodes beside PubMed: this node's sources service answers each.
        sources = service_of(request) if req.across_sources else None
        try:
            response = await asker.ask(
                req, request_id, sources=sources, authorization=request.headers.get("authorization")
            )
        except UnknownSource as exc:
            raise ApiError(422, "invalid request", str(exc)) from exc
        except InvalidToken as exc:
            raise ApiError(401, "unauthorized", str(exc), headers=_UNAUTHORIZED) from exc
        except SourceDenied as exc:
            raise ApiError(403, "forbidden", str(exc)) from exc
        return JSONResponse(ask_response(response).model_dump(mode="json"))

    @app.post(
        "/ask/stream",
        tags=["answer"],
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}, "description": "server-sent events"}},
    )
    async def ask_stream(
        req: AskRequest, request: Request, _auth: AuthDep, asker: AskerDep
    ) -> StreamingResponse:
        """``/ask`` as server-sent events: stage, evidence, token, answer, judge, done (or error).

        ``token`` events (``{"delta", "index"}``) are the model's raw text as it writes, provisional;
        the ``answer`` event is authoritative (invalid citations removed, fallbacks applied)."""
        request_id = _request_id(request)
        log_question("ask_stream", request_id, req.question)
        if req.across_sources:  # several sources are answered by POST /ask, not streamed
            raise ApiError(422, "invalid request", "sources beyond pubmed: use POST /ask (not streamed)")

        async def events() -> AsyncIterator[bytes]:
            seq = 0
            started = time.perf_counter()
            try:
                source = asker.events(req, request_id, stream_tokens=True)
                async with aclosing(source):  # closed even if the server drops this response unfinished
                    async for event in source:
                        seq += 1
                        if isinstance(event, Done):
                            # Every field of the /ask response (mode, verdict, ...), minus the bulk that
                            # earlier events already carried, so a new field reaches stream clients.
                            data = ask_response(event.result).model_dump(
                                mode="json", exclude=_SENT_BEFORE_DONE
                            )
                            done = {
                                **data,
                                "request_id": request_id,
                                "timings_ms": data["timings_ms"],
                                "warnings": data["warnings"],
                                "model": data["model"],
                                "prompt_id": data["prompt_id"],
                                "total_ms": round((time.perf_counter() - started) * 1000, 2),
                            }
                            yield _sse("done", done, seq)
                        else:
                            yield _sse(*event_json(event), seq)
            except asyncio.CancelledError:
                raise  # the client went away: nothing to tell it
            except Exception as exc:
                # Headers are gone already: the failure becomes an event, not a torn connection.
                _log_failure(exc, request_id, settings)
                _, payload = _error_payload(exc, request_id)
                yield _sse("error", payload, seq + 1)

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    @app.post("/search", tags=["evidence"], responses={200: {"model": SearchResponse}})
    async def search(
        req: SearchRequest, request: Request, _auth: AuthDep, pipeline: PipelineDep
    ) -> JSONResponse:
        """Evidence only: query plan, Adapt-E tiers, dense hits, fused and filtered documents, passages."""
        request_id = _request_id(request)
        log_question("search", request_id, req.question)
        api_key = req.ncbi_api_key.get_secret_value() if req.ncbi_api_key else None
        outcome = await pipeline.search(
            req.question, mindate=req.mindate, maxdate=req.maxdate, api_key=api_key
        )
        return JSONResponse({"request_id": request_id, **search_out(outcome).model_dump(mode="json")})

    @app.post("/judge", tags=["judge"], responses={200: {"model": JudgeResponse}})
    async def judge_answers(
        req: JudgeRequest, request: Request, _auth: AuthDep, asker: AskerDep, judge: JudgeDep
    ) -> JSONResponse:
        """Cross-source agreement of given answers (503 when no LLM is configured)."""
        request_id = _request_id(request)
        log_question("judge", request_id, req.question)
        if judge is None:
            raise ApiError(503, "LLM not configured", "the judge needs a language model (COMETA_LLM__*)")
        report = await asker.judge_answers(req.question, req.answers, judge)
        return JSONResponse({"request_id": request_id, **judge_report_out(report).model_dump(mode="json")})

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    async def readyz(container: ContainerDep) -> JSONResponse:
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
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)

    @app.get("/metrics", tags=["ops"], response_class=Response)
    async def metrics() -> Response:
        """Prometheus exposition of the default registry (retrieval, LLM and API instruments)."""
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

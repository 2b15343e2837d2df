"""The question routers: ``ask`` (``/ask``, ``/ask/stream``), ``search`` (``/search``) and ``judge``
(``/judge``), each route a thin call into the :class:`~app.asker.Asker` or the pipeline."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from app.asker import Done, SourceDenied
from app.frontends import ask_response, event_json, judge_report_out, safety_out, search_out
from app.schemas import (
    AskRequest,
    AskResponse,
    JudgeRequest,
    JudgeResponse,
    SearchRequest,
    SearchResponse,
    UrgentResponse,
)
from app.settings import Settings
from app.sources import InvalidToken, UnknownSource
from retrieval.ncbi import EutilsError
from retrieval.search import count_zero_hit, error_cause

from ._deps import (
    _UNAUTHORIZED,
    ApiError,
    AskerDep,
    AuthDep,
    JudgeDep,
    PipelineDep,
    SettingsDep,
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


def log_question(settings: Settings, route: str, request_id: str, question: str) -> None:
    log.info(json.dumps({"event": route, "request_id": request_id, **_question_log(settings, question)}))


def _bounded_documents(req: AskRequest, settings: Settings) -> None:
    """Every document a caller sends is segmented and encoded: their total length bounds one request's CPU."""
    limit = settings.api.max_document_chars
    total = sum(len(d.text) + len(d.title or "") for d in req.documents or ())
    if limit and total > limit:
        raise ApiError(
            422,
            "invalid request",
            f"documents: {total} characters in all, more than this service encodes for one request ({limit})",
        )


ask_router = APIRouter(tags=["answer"])
search_router = APIRouter(tags=["evidence"])
judge_router = APIRouter(tags=["judge"])


@ask_router.post("/ask", response_model=AskResponse)
async def ask(
    req: AskRequest, request: Request, _auth: AuthDep, asker: AskerDep, settings: SettingsDep
) -> AskResponse:
    """Answer a patient question with citations from PubMed (or from the supplied documents)."""
    request_id = _request_id(request)
    log_question(settings, "ask", request_id, req.question)
    _bounded_documents(req, settings)
    # Collections and remote nodes beside PubMed: this node's sources service answers each.
    sources = service_of(request) if req.across_sources else None
    authorization = request.headers.get("authorization")
    try:
        response = await asker.ask(req, request_id, sources=sources, authorization=authorization)
    except UnknownSource as exc:
        raise ApiError(422, "invalid request", str(exc)) from exc
    except InvalidToken as exc:
        raise ApiError(401, "unauthorized", str(exc), headers=_UNAUTHORIZED) from exc
    except SourceDenied as exc:
        raise ApiError(403, "forbidden", str(exc)) from exc
    return ask_response(response)


@ask_router.post(
    "/ask/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "server-sent events"}},
)
async def ask_stream(
    req: AskRequest, request: Request, _auth: AuthDep, asker: AskerDep, settings: SettingsDep
) -> StreamingResponse:
    """``/ask`` as server-sent events: stage, evidence, token, answer, judge, done (or error).

    ``token`` events (``{"delta", "index"}``) are the model's raw text as it writes, provisional;
    the ``answer`` event is authoritative (invalid citations removed, fallbacks applied)."""
    request_id = _request_id(request)
    log_question(settings, "ask_stream", request_id, req.question)
    _bounded_documents(req, settings)
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
                        # Every field of the /ask response (mode, verdict, ...), minus the bulk that earlier
                        # events already carried, so a new field reaches stream clients.
                        data = ask_response(event.result).model_dump(mode="json", exclude=_SENT_BEFORE_DONE)
                        done = {
                            **data,
                            "request_id": request_id,
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


@search_router.post("/search", response_model=SearchResponse | UrgentResponse)
async def search(
    req: SearchRequest,
    request: Request,
    _auth: AuthDep,
    pipeline: PipelineDep,
    asker: AskerDep,
    settings: SettingsDep,
) -> SearchResponse | UrgentResponse:
    """Evidence only: query plan, Adapt-E tiers, dense hits, fused and filtered documents, passages. An
    urgent question (an emergency, self-harm, a request for means) gets the safety guidance instead, and
    nothing is searched."""
    request_id = _request_id(request)
    log_question(settings, "search", request_id, req.question)
    decision = await asker.safety_check(req.question, request_id)
    if decision.urgent:
        count_zero_hit("refused")
        return UrgentResponse(
            request_id=request_id, answer=decision.message or "", safety=safety_out(decision)
        )
    api_key = req.ncbi_api_key.get_secret_value() if req.ncbi_api_key else None
    try:
        outcome = await pipeline.search(
            req.question, mindate=req.mindate, maxdate=req.maxdate, api_key=api_key
        )
    except EutilsError as exc:
        count_zero_hit(error_cause(exc))  # answered 503 with the same cause
        raise
    if outcome.zero_hit_cause is not None:
        count_zero_hit(outcome.zero_hit_cause)
    return SearchResponse(request_id=request_id, **dict(search_out(outcome)))


@judge_router.post("/judge", response_model=JudgeResponse)
async def judge_answers(
    req: JudgeRequest,
    request: Request,
    _auth: AuthDep,
    asker: AskerDep,
    judge: JudgeDep,
    settings: SettingsDep,
) -> JudgeResponse:
    """Cross-source agreement of given answers (503 when no LLM is configured)."""
    request_id = _request_id(request)
    log_question(settings, "judge", request_id, req.question)
    if judge is None:
        raise ApiError(503, "LLM not configured", "the judge needs a language model (COMETA_LLM__*)")
    report = await asker.judge_answers(req.question, req.answers, judge)
    return JudgeResponse(request_id=request_id, **dict(judge_report_out(report)))

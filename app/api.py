"""The HTTP service: FastAPI over the one shared :class:`~app.pipeline.Pipeline`.

Endpoints: ``POST /ask`` (cited answer), ``POST /ask/stream`` (the same as server-sent events),
``POST /search`` (evidence only), ``POST /judge`` (cross-source agreement), ``GET /healthz``,
``GET /readyz``, ``GET /metrics``; OpenAPI docs at ``/docs``.

Streaming: ``/ask/stream`` emits ``stage`` (understand/retrieve/answer/judge started|finished),
``evidence``, ``token`` (the model's raw text deltas while it writes: provisional), ``answer`` (the checked
final answer: authoritative), ``judge`` (when asked) and ``done``; a failure mid-stream becomes one
``error`` event and the stream ends cleanly. A client that disconnects cancels the generation.

Privacy: question text is PHI. Logs carry its hash (``hash_text``) unless ``debug_log_questions`` is set;
per-request NCBI keys and ``X-API-Key`` values are never logged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import logging
import math
import re
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, cast

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core import CometaError
from llm import LLMClient, LLMError
from retrieval.evidence import EvidenceDoc, TextUnit, pubmed_url
from retrieval.ncbi import EutilsError
from retrieval.passages import PassageContext
from retrieval.search import Provenance
from retrieval.understand import hash_text

from . import __version__
from ._api_models import (
    ApiSettings,
    AskRequest,
    AskResponse,
    CitationOut,
    ErrorResponse,
    JudgeAnswerIn,
    JudgeRequest,
    SearchRequest,
    UserDocument,
)
from ._limits import RateLimiterUnavailable, RequestLimiter, SlidingWindowLimiter, build_request_limiter
from .answer import Answer, Answerer
from .judge import CrossSourceJudge, SourceAnswer
from .pipeline import Pipeline
from .schemas import EvidenceDocOut, JudgeReportOut, PassageOut, QueryOut
from .settings import Settings
from .sources import SourcesService, ask_sources, collections_router

__all__ = [
    "API_LATENCY",
    "API_REJECTED",
    "API_REQUESTS",
    "ApiError",
    "Services",
    "SlidingWindowLimiter",
    "create_app",
    "get_answerer",
    "get_judge",
    "get_pipeline",
    "get_services",
    "user_evidence",
]

log = logging.getLogger("cometa.api")

API_REQUESTS = Counter(
    "cometa_api_requests_total",
    "HTTP requests served, by route, method and status",
    ["route", "method", "status"],
)
API_LATENCY = Histogram(
    "cometa_api_request_seconds",
    "Latency of HTTP requests, by route",
    ["route"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
ANSWERS = Counter("cometa_answers_total", "Answers given, by mode", ["mode"])
CITATIONS_REMOVED = Counter(
    "cometa_citations_removed_total", "Cited PMIDs removed because they were not in the evidence context"
)
STAGE_LATENCY = Histogram(
    "cometa_stage_seconds",
    "Latency of each /ask stage (understand, esearch, dense, fuse, metadata, passages, answer, judge)",
    ["stage"],
    buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
API_REJECTED = Counter(
    "cometa_api_rejected_total", "Requests refused before the handler ran, by reason", ["reason"]
)

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


# --- settings, services, dependencies ---------------------------------------------------------------


# SlidingWindowLimiter (memory) and the Redis-shared window live in app._limits; re-exported here.


@dataclass
class Services:
    settings: Settings
    api: ApiSettings
    pipeline: Pipeline
    answerer: Answerer
    judge: CrossSourceJudge | None
    limiter: RequestLimiter


class ApiError(Exception):
    """An honest, expected failure: rendered as ``{"error", "reason"}`` with ``status``."""

    def __init__(
        self, status: int, error: str, reason: str | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.reason = reason
        self.headers = dict(headers or {})


def get_services(request: Request) -> Services:
    services = getattr(request.app.state, "services", None)
    if services is None:  # only when the lifespan did not run (a test forgot it)
        raise ApiError(503, "service starting", "dependencies are not initialised")
    return cast(Services, services)


ServicesDep = Annotated[Services, Depends(get_services)]


def get_pipeline(services: ServicesDep) -> Pipeline:
    return services.pipeline


def get_answerer(services: ServicesDep) -> Answerer:
    return services.answerer


def get_judge(services: ServicesDep) -> CrossSourceJudge | None:
    return services.judge


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "") or "")


async def authorize(request: Request, services: ServicesDep) -> str:
    """``X-API-Key`` check (skipped when no keys are configured), then the per-key rate limit."""
    keys = services.api.api_keys
    given = request.headers.get("x-api-key")
    if keys:
        ok = given is not None and any(
            hmac.compare_digest(given.encode(), k.get_secret_value().encode()) for k in keys
        )
        if not ok:
            API_REJECTED.labels("auth").inc()
            raise ApiError(401, "unauthorized", "missing or invalid X-API-Key header")
        ident = "key:" + hash_text(cast(str, given))
    else:
        ident = "ip:" + (request.client.host if request.client else "unknown")
    try:
        retry = await services.limiter.check(ident)
    except RateLimiterUnavailable as exc:  # shared limiter down and rate_limit_on_error=deny
        API_REJECTED.labels("rate_limit_unavailable").inc()
        raise ApiError(503, "rate limiter unavailable", str(exc)[:300]) from exc
    if retry is not None:
        API_REJECTED.labels("rate_limit").inc()
        raise ApiError(
            429,
            "rate limited",
            f"more than {services.limiter.limit} requests per {services.limiter.window_s:.0f} s",
            headers={"Retry-After": str(math.ceil(retry))},
        )
    return ident


PipelineDep = Annotated[Pipeline, Depends(get_pipeline)]
AnswererDep = Annotated[Answerer, Depends(get_answerer)]
JudgeDep = Annotated[CrossSourceJudge | None, Depends(get_judge)]
AuthDep = Annotated[str, Depends(authorize)]


def _build_judge(llm: LLMClient | None, api: ApiSettings) -> CrossSourceJudge | None:
    if llm is None:
        return None  # judging is LLM-only: there is no honest deterministic stand-in
    return CrossSourceJudge(llm, max_sources=api.judge_max_sources, concurrency=api.judge_concurrency)


async def _screened(
    judge: CrossSourceJudge, question: str, answers: Sequence[JudgeAnswerIn]
) -> list[SourceAnswer]:
    """Caller-given answers, absence-screened like per-source answers (blank text is absent outright)."""

    async def one(a: JudgeAnswerIn) -> SourceAnswer:
        label = a.label or a.source_id
        if not a.text.strip():
            return SourceAnswer(a.source_id, label, a.text, True, None)
        return await judge.screen(question, SourceAnswer(a.source_id, label, a.text, False, None))

    return list(await asyncio.gather(*(one(a) for a in answers)))


def user_evidence(documents: Sequence[UserDocument], *, start_rank: int = 1) -> list[EvidenceDoc]:
    """Bring-your-own documents as abstract-depth :class:`EvidenceDoc` (class D1, provenance arm "user").

    Documents without a PMID get ``U<n>`` ids so that citations still point at one of them.
    """
    docs = []
    for i, d in enumerate(documents, start=start_rank):
        pmid = d.pmid or f"U{i}"
        unit = TextUnit("abstract", d.text, "Abstract", ("Abstract",), "pubmed", 0)
        docs.append(
            EvidenceDoc(
                pmid=pmid,
                pmcid=None,
                title=d.title,
                year=d.year,
                journal=None,
                publication_types=(),
                doc_class="D1",
                depth_used="abstract",
                depth_fallback_reason=None,
                license=None,
                url=pubmed_url(pmid) if d.pmid else "",
                fused_rank=i,
                rrf_score=0.0,
                provenance=(Provenance(arm="user", rank=i),),
                text_units=(unit,),
            )
        )
    return docs


def _restrict(context: PassageContext | None, pmids: set[str]) -> PassageContext | None:
    if context is None:
        return None
    return dataclasses.replace(context, passages=tuple(p for p in context.passages if p.pmid in pmids))


def _question_log(settings: Settings, question: str) -> dict[str, str]:
    if settings.debug_log_questions:
        return {"question": question}
    return {"question_hash": hash_text(question)}


# --- /ask core: one async generator of events, shared by /ask and /ask/stream ---------------------------


Event = tuple[str, dict[str, Any]]


async def _ask_events(
    req: AskRequest,
    pipeline: Pipeline,
    answerer: Answerer,
    judge: CrossSourceJudge | None,
    request_id: str,
    *,
    stream_tokens: bool = False,
) -> AsyncGenerator[Event, None]:
    timings: dict[str, float] = {}
    warnings: list[str] = []
    api_key = req.ncbi_api_key.get_secret_value() if req.ncbi_api_key else None
    question = req.question
    query: QueryOut | None = None
    context: PassageContext | None

    def stage(name: str, status: str) -> Event:
        return "stage", {"stage": name, "status": status}

    if req.documents is not None and req.documents_mode == "replace":
        # The caller's evidence only: no Understand, no retrieval (the evaluation suites' path).
        yield stage("retrieve", "started")
        t0 = time.perf_counter()
        docs = user_evidence(req.documents)[: req.max_documents]
        context = None
        passages = await pipeline.passage_retriever() if docs else None
        if passages is not None:
            context = await passages.retrieve(question, docs)
        timings["passages"] = (time.perf_counter() - t0) * 1000
        warnings.append("retrieval skipped: answering from the documents supplied with the request")
        yield stage("retrieve", "finished")
    else:
        yield stage("understand", "started")
        t0 = time.perf_counter()
        understanding = await pipeline.understander.understand(question)
        timings["understand"] = (time.perf_counter() - t0) * 1000
        yield stage("understand", "finished")
        yield stage("retrieve", "started")
        outcome = await pipeline.retrieve(
            understanding, mindate=req.mindate, maxdate=req.maxdate, api_key=api_key
        )
        timings.update(outcome.timings_ms)
        warnings.extend(outcome.warnings)
        failed = outcome.adapte.errors
        if failed:
            # Part of the Boolean ladder failed but something came back: answer, and say so.
            warnings.append(
                f"degraded: {len(failed)} of {len(outcome.adapte.tiers)} PubMed searches failed "
                f"(NCBI partly unavailable); evidence may be incomplete"
            )
        query = QueryOut.of(outcome)
        docs = list(outcome.evidence.docs)
        context = outcome.context
        if req.documents:
            seen = {d.pmid for d in docs}
            extra = [d for d in user_evidence(req.documents, start_rank=len(docs) + 1) if d.pmid not in seen]
            docs.extend(extra)
            passages = await pipeline.passage_retriever()
            if passages is not None and docs:
                context = await passages.retrieve(question, docs)
        if len(docs) > req.max_documents:
            docs = docs[: req.max_documents]
            context = _restrict(context, {d.pmid for d in docs})
        yield stage("retrieve", "finished")

    yield (
        "evidence",
        {
            "documents": [d.model_dump(mode="json") for d in EvidenceDocOut.ranked(docs)],
            "passages": [p.model_dump(mode="json") for p in PassageOut.of_context(context)],
        },
    )
    yield stage("answer", "started")
    t1 = time.perf_counter()
    answer_args: dict[str, Any] = {
        "options": req.options,
        "answer_type": req.resolved_answer_type,
        "allow_insufficient": req.allow_insufficient,
    }
    answer: Answer | None = None
    if stream_tokens:
        # Deltas are provisional; the "answer" event below carries the checked text. Closing this
        # generator (client gone) closes the answer stream and with it the LLM generation.
        async with aclosing(answerer.answer_stream(question, docs, context, **answer_args)) as parts:
            index = 0
            async for part in parts:
                if isinstance(part, str):
                    yield "token", {"delta": part, "index": index}
                    index += 1
                else:
                    answer = part
        if answer is None:  # answer_stream always ends with its Answer; guard a broken contract loudly
            raise RuntimeError("the answer stream ended without an answer")
    else:
        answer = await answerer.answer(question, docs, context, **answer_args)
    timings["answer"] = (time.perf_counter() - t1) * 1000
    ANSWERS.labels(answer.mode).inc()
    CITATIONS_REMOVED.inc(answer.citations_removed)
    warnings.extend(answer.warnings)
    citations = [CitationOut.of(c) for c in answer.citations]
    answer_payload = {
        "answer": answer.text,
        "mode": answer.mode,
        "answer_choice": answer.answer_choice,
        "reasoning": answer.reasoning,
        "citations": [c.model_dump() for c in citations],
        "citations_removed": answer.citations_removed,  # the token events may still show the removed ids
    }
    yield stage("answer", "finished")
    yield "answer", answer_payload

    judge_out: JudgeReportOut | None = None
    if req.judge:
        if judge is None:
            warnings.append("judge requested but unavailable: no LLM is configured")
        elif not docs:
            warnings.append("judge skipped: no evidence to compare")
        else:
            yield stage("judge", "started")
            t2 = time.perf_counter()
            judge_out = JudgeReportOut.of(await judge.run(question, docs, context))
            timings["judge"] = (time.perf_counter() - t2) * 1000
            yield stage("judge", "finished")
            yield "judge", judge_out.model_dump(mode="json")

    for stage_name, ms in timings.items():
        STAGE_LATENCY.labels(stage_name).observe(ms / 1000)
    response = AskResponse(
        request_id=request_id,
        answer=answer.text,
        mode=answer.mode,
        answer_choice=answer.answer_choice,
        reasoning=answer.reasoning,
        citations=citations,
        citations_removed=answer.citations_removed,
        evidence=EvidenceDocOut.ranked(docs),
        passages=PassageOut.of_context(context),
        query=query,
        judge=judge_out,
        timings_ms={k: round(v, 2) for k, v in timings.items()},
        warnings=list(dict.fromkeys(warnings)),
        model=answer.model,
        prompt_id=answer.prompt_id,
        tokens={"prompt": answer.prompt_tokens, "completion": answer.completion_tokens},
    )
    yield "result", response.model_dump(mode="json")


def _error_payload(exc: BaseException, request_id: str) -> tuple[int, dict[str, Any]]:
    """One mapping from exceptions to honest HTTP failures, for handlers and the SSE stream alike."""
    if isinstance(exc, ApiError):
        return exc.status, {"error": exc.error, "reason": exc.reason, "request_id": request_id}
    if isinstance(exc, EutilsError):
        reason = f"{type(exc).__name__}: {exc}"[:300]  # a summary, not a payload dump
        return 503, {"error": "NCBI unavailable", "reason": reason, "request_id": request_id}
    if isinstance(exc, LLMError):
        return 503, {"error": "LLM unavailable", "reason": type(exc).__name__, "request_id": request_id}
    if isinstance(exc, CometaError):
        return 500, {"error": "retrieval failed", "reason": type(exc).__name__, "request_id": request_id}
    return 500, {"error": "internal error", "reason": None, "request_id": request_id}


def _log_failure(exc: BaseException, request_id: str, settings: Settings | None) -> None:
    # Exception messages can quote the question: only the type, unless question logging is on.
    debug = bool(settings and settings.debug_log_questions)
    log.error(
        json.dumps({"event": "request_failed", "request_id": request_id, "exception": type(exc).__name__}),
        exc_info=exc if debug else None,
    )


# --- middleware: request ids, body limit, metrics, access log, last-resort 500 --------------------------


class _BodyTooLarge(Exception):
    pass


class _Gate:
    """Pure ASGI (so it wraps streaming responses too): runs outside routing and every handler."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, settings: Settings) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get("x-request-id", "")
        request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status = {"code": 500, "sent": False}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                status["sent"] = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            length = headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
                raise _BodyTooLarge  # refused before a byte of the body is read
            if length is None and scope["method"] in {"POST", "PUT", "PATCH"}:
                receive = await self._buffered(receive)  # chunked: count while reading, then replay
            await self.app(scope, receive, send_wrapper)
        except _BodyTooLarge:
            API_REJECTED.labels("body_too_large").inc()
            if not status["sent"]:
                body = {"error": "request too large", "reason": f"body exceeds {self.max_body_bytes} bytes"}
                await self._json(send_wrapper, 413, {**body, "request_id": request_id})
        except Exception as exc:
            _log_failure(exc, request_id, self.settings)
            if not status["sent"]:
                code, payload = _error_payload(exc, request_id)
                await self._json(send_wrapper, code, payload)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            elapsed = time.perf_counter() - started
            API_REQUESTS.labels(template, scope["method"], str(status["code"])).inc()
            API_LATENCY.labels(template).observe(elapsed)
            log.info(
                json.dumps(
                    {
                        "event": "request",
                        "request_id": request_id,
                        "method": scope["method"],
                        "route": template,
                        "status": status["code"],
                        "ms": round(elapsed * 1000, 1),
                    }
                )
            )

    async def _buffered(self, receive: Receive) -> Receive:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                raise _BodyTooLarge
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def receive_replayed() -> Message:
            return replay.pop() if replay else await receive()

        return receive_replayed

    @staticmethod
    async def _json(send: Send, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


# --- the app ------------------------------------------------------------------------------------------


def create_app(
    settings: Settings | None = None,
    *,
    api_settings: ApiSettings | None = None,
    pipeline: Pipeline | None = None,
    answerer: Answerer | None = None,
    judge: CrossSourceJudge | None = None,
) -> FastAPI:
    """The service. ``pipeline``/``answerer``/``judge`` inject prebuilt parts (tests); by default the
    lifespan builds one of each from ``settings`` and closes them on shutdown."""
    from .settings import get_settings

    settings = settings or get_settings()
    api = api_settings or settings.api

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pipe = pipeline or Pipeline(settings)
        owned = pipeline is None  # an injected pipeline belongs to the caller, who closes it
        try:
            # Load the encoder, index and reranker now, so the first request is not the slow one.
            await pipe.dense_retriever()
            await pipe.passage_retriever()
            app.state.services = Services(
                settings=settings,
                api=api,
                pipeline=pipe,
                answerer=answerer or Answerer(pipe.llm),
                judge=judge if judge is not None else _build_judge(pipe.llm, api),
                limiter=build_request_limiter(api, default_url=settings.eutils.redis_limiter_url()),
            )
            app.state.sources = SourcesService(settings, pipe)  # collections, access, federation
            yield
        finally:
            services = getattr(app.state, "services", None)
            if services is not None:
                await services.limiter.aclose()  # the Redis limiter's connections
            if owned:
                await pipe.aclose()

    app = FastAPI(
        title="CoMeta",
        version=__version__,
        description="Patient questions -> PubMed evidence -> cited answers. "
        "Authentication: `X-API-Key` header when keys are configured (disabled when none are).",
        lifespan=lifespan,
        responses={
            401: {"model": ErrorResponse},
            413: {"model": ErrorResponse},
            429: {"model": ErrorResponse},
            503: {"model": ErrorResponse},
        },
    )
    if api.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=api.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type", "X-API-Key", "X-Request-ID"],
            expose_headers=["X-Request-ID", "Retry-After"],
        )
    # Added last = outermost: every response, CORS preflights included, carries a request id.
    app.add_middleware(_Gate, max_body_bytes=api.max_body_bytes, settings=settings)
    _install_handlers(app, settings)
    _install_routes(app, settings)
    app.include_router(collections_router(authorize))  # GET /collections, POST /collections/search
    return app


def _install_handlers(app: FastAPI, settings: Settings) -> None:
    def respond(request: Request, exc: BaseException) -> JSONResponse:
        request_id = _request_id(request)
        code, payload = _error_payload(exc, request_id)
        if code >= 500:
            _log_failure(exc, request_id, settings)
        headers = exc.headers if isinstance(exc, ApiError) else None
        return JSONResponse(payload, status_code=code, headers=headers)

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        return respond(request, exc)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        errors = cast(RequestValidationError, exc).errors()
        detail = [
            {
                "loc": [str(p) for p in e.get("loc", ())],
                "msg": str(e.get("msg", "")),
                "type": str(e.get("type")),
            }
            for e in errors
        ]
        reason = "; ".join(f"{'.'.join(d['loc'][1:]) or 'body'}: {d['msg']}" for d in detail)
        payload = {
            "error": "invalid request",
            "reason": reason,
            "detail": detail,
            "request_id": _request_id(request),
        }
        return JSONResponse(payload, status_code=422)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        http = cast(StarletteHTTPException, exc)
        payload = {"error": str(http.detail), "reason": None, "request_id": _request_id(request)}
        return JSONResponse(payload, status_code=http.status_code, headers=http.headers)

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(CometaError, on_api_error)
    app.add_exception_handler(LLMError, on_api_error)
    app.add_exception_handler(Exception, on_api_error)


def _sse(event: str, data: Mapping[str, Any], seq: int) -> bytes:
    return f"id: {seq}\nevent: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _install_routes(app: FastAPI, settings: Settings) -> None:
    def log_question(route: str, request_id: str, question: str) -> None:
        log.info(json.dumps({"event": route, "request_id": request_id, **_question_log(settings, question)}))

    @app.post("/ask", response_model=AskResponse, tags=["answer"])
    async def ask(
        req: AskRequest,
        request: Request,
        _auth: AuthDep,
        pipeline: PipelineDep,
        answerer: AnswererDep,
        judge: JudgeDep,
    ) -> JSONResponse:
        """Answer a patient question with citations from PubMed (or from the supplied documents)."""
        request_id = _request_id(request)
        log_question("ask", request_id, req.question)
        if req.across_sources:  # collections and remote nodes beside PubMed: app/sources.py
            return await ask_sources(req, request, get_services(request), request_id)
        result: dict[str, Any] = {}
        async for name, data in _ask_events(req, pipeline, answerer, judge, request_id):
            if name == "result":
                result = data
        return JSONResponse(result)

    @app.post(
        "/ask/stream",
        tags=["answer"],
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}, "description": "server-sent events"}},
    )
    async def ask_stream(
        req: AskRequest,
        request: Request,
        _auth: AuthDep,
        pipeline: PipelineDep,
        answerer: AnswererDep,
        judge: JudgeDep,
    ) -> StreamingResponse:
        """``/ask`` as server-sent events: stage, evidence, token, answer, judge, done (or error).

        ``token`` events (``{"delta", "index"}``) are the model's raw text as it writes, provisional;
        the ``answer`` event is authoritative (invalid citations removed, fallbacks applied)."""
        request_id = _request_id(request)
        log_question("ask_stream", request_id, req.question)
        if req.across_sources:  # several sources are answered by POST /ask (app/sources.py), not streamed
            raise ApiError(422, "invalid request", "sources beyond pubmed: use POST /ask (not streamed)")

        async def events() -> AsyncIterator[bytes]:
            seq = 0
            started = time.perf_counter()
            try:
                source = _ask_events(req, pipeline, answerer, judge, request_id, stream_tokens=True)
                async with aclosing(source):  # closed even if the server drops this response unfinished
                    async for name, data in source:
                        seq += 1
                        if name == "result":
                            done = {
                                "request_id": request_id,
                                "timings_ms": data["timings_ms"],
                                "warnings": data["warnings"],
                                "model": data["model"],
                                "prompt_id": data["prompt_id"],
                                "total_ms": round((time.perf_counter() - started) * 1000, 2),
                            }
                            yield _sse("done", done, seq)
                        else:
                            yield _sse(name, data, seq)
            except asyncio.CancelledError:
                raise  # the client went away: nothing to tell it
            except Exception as exc:
                # Headers are gone already: the failure becomes an event, not a torn connection.
                _log_failure(exc, request_id, settings)
                _, payload = _error_payload(exc, request_id)
                yield _sse("error", payload, seq + 1)

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    @app.post("/search", tags=["evidence"])
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
        return JSONResponse({"request_id": request_id, **outcome.to_json()})

    @app.post("/judge", tags=["judge"])
    async def judge_answers(
        req: JudgeRequest, request: Request, _auth: AuthDep, judge: JudgeDep
    ) -> JSONResponse:
        """Cross-source agreement of given answers (503 when no LLM is configured)."""
        request_id = _request_id(request)
        log_question("judge", request_id, req.question)
        if judge is None:
            raise ApiError(503, "LLM not configured", "the judge needs a language model (COMETA_LLM__*)")
        report = await judge.judge(req.question, await _screened(judge, req.question, req.answers))
        return JSONResponse({"request_id": request_id, **JudgeReportOut.of(report).model_dump(mode="json")})

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    async def readyz(services: ServicesDep) -> JSONResponse:
        """Readiness: E-utilities reachable (EInfo, short timeout), dense index loaded, LLM configured."""
        pipe = services.pipeline
        checks: dict[str, Any] = {}
        t0 = time.perf_counter()
        try:
            await asyncio.wait_for(pipe.client.einfo(), timeout=services.api.ready_timeout_s)
            checks["eutils"] = {"ok": True, "ms": round((time.perf_counter() - t0) * 1000, 1)}
        except (EutilsError, TimeoutError) as exc:
            checks["eutils"] = {"ok": False, "reason": type(exc).__name__}
        if pipe.use_dense:
            dense = await pipe.dense_retriever()
            checks["dense"] = {"ok": dense is not None, "vectors": len(dense.index) if dense else 0}
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

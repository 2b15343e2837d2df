"""The HTTP service: FastAPI over the process's one :class:`~app.asker.Asker` and its components.

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
import hmac
import json
import logging
import math
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import RateLimiterUnavailable, SlidingWindowLimiter, __version__
from app.answer import Answerer
from app.asker import Asker, SourceDenied, caller_of
from app.container import Container
from app.judge import CrossSourceJudge
from app.pipeline import Pipeline
from app.schemas import (
    AskRequest,
    AskResponse,
    CollectionSearchRequest,
    ErrorResponse,
    JudgeReportOut,
    JudgeRequest,
    SearchRequest,
)
from app.settings import ApiSettings, Settings
from app.sources import InvalidToken, SourcesService, Subject, UnknownSource, evidence_to_json
from core import CometaError
from llm import LLMError
from retrieval.ncbi import EutilsError
from retrieval.understand import hash_text

__all__ = [
    "API_LATENCY",
    "API_REJECTED",
    "API_REQUESTS",
    "ApiError",
    "SlidingWindowLimiter",
    "create_app",
    "get_asker",
    "get_container",
    "get_judge",
    "get_pipeline",
    "service_of",
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
API_REJECTED = Counter(
    "cometa_api_rejected_total", "Requests refused before the handler ran, by reason", ["reason"]
)

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


# --- dependencies -------------------------------------------------------------------------------------


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


def get_container(request: Request) -> Container:
    container = getattr(request.app.state, "container", None)
    if container is None:  # only when the lifespan did not run (a test forgot it)
        raise ApiError(503, "service starting", "dependencies are not initialised")
    return cast(Container, container)


ContainerDep = Annotated[Container, Depends(get_container)]


def get_pipeline(container: ContainerDep) -> Pipeline:
    return container.pipeline


def get_judge(container: ContainerDep) -> CrossSourceJudge | None:
    return container.judge


def get_asker(container: ContainerDep) -> Asker:
    return container.asker


def service_of(request: Request) -> SourcesService:
    """This node's collections, access decisions and federation (``app.state.sources``)."""
    service = getattr(request.app.state, "sources", None)
    if not isinstance(service, SourcesService):
        raise ApiError(503, "service starting", "collections are not initialised")
    return service


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "") or "")


async def authorize(request: Request, container: ContainerDep) -> str:
    """``X-API-Key`` check (skipped when no keys are configured), then the per-key rate limit."""
    keys = container.api.api_keys
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
        limiter = container.request_limiter
        retry = await limiter.check(ident)
    except RateLimiterUnavailable as exc:  # shared limiter down and rate_limit_on_error=deny
        API_REJECTED.labels("rate_limit_unavailable").inc()
        raise ApiError(503, "rate limiter unavailable", str(exc)[:300]) from exc
    if retry is not None:
        API_REJECTED.labels("rate_limit").inc()
        raise ApiError(
            429,
            "rate limited",
            f"more than {limiter.limit} requests per {limiter.window_s:.0f} s",
            headers={"Retry-After": str(math.ceil(retry))},
        )
    return ident


PipelineDep = Annotated[Pipeline, Depends(get_pipeline)]
JudgeDep = Annotated[CrossSourceJudge | None, Depends(get_judge)]
AskerDep = Annotated[Asker, Depends(get_asker)]
AuthDep = Annotated[str, Depends(authorize)]


def _question_log(settings: Settings, question: str) -> dict[str, str]:
    if settings.debug_log_questions:
        return {"question": question}
    return {"question_hash": hash_text(question)}


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
    """The service. The lifespan builds the process's :class:`~app.container.Container` from ``settings``
    and closes it on shutdown; ``pipeline``/``answerer``/``judge`` inject prebuilt parts (tests)."""
    from app.settings import get_settings

    settings = settings or get_settings()
    api = api_settings or settings.api

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # An injected pipeline belongs to the caller, who closes it; the container closes what it built.
        async with Container(settings, api=api, pipeline=pipeline, answerer=answerer, judge=judge) as c:
            await c.warm()  # the models now, so that the first request is not the slow one
            app.state.sources = c.sources  # collections, access, federation
            app.state.container = c
            yield

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
    _install_collection_routes(app)
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
        return JSONResponse(response.model_dump(mode="json"))

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
        req: JudgeRequest, request: Request, _auth: AuthDep, asker: AskerDep, judge: JudgeDep
    ) -> JSONResponse:
        """Cross-source agreement of given answers (503 when no LLM is configured)."""
        request_id = _request_id(request)
        log_question("judge", request_id, req.question)
        if judge is None:
            raise ApiError(503, "LLM not configured", "the judge needs a language model (COMETA_LLM__*)")
        report = await asker.judge_answers(req.question, req.answers, judge)
        return JSONResponse({"request_id": request_id, **JudgeReportOut.of(report).model_dump(mode="json")})

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


# --- collections: what federated nodes call --------------------------------------------------------------


_UNAUTHORIZED = {"WWW-Authenticate": 'Bearer error="invalid_token"'}


def _subject(service: SourcesService, request: Request) -> tuple[Subject, str | None]:
    try:
        return caller_of(service, request.headers.get("authorization"), needed=True)
    except InvalidToken as exc:
        raise ApiError(401, "unauthorized", str(exc), headers=_UNAUTHORIZED) from exc


def _install_collection_routes(app: FastAPI) -> None:
    """``GET /collections`` and ``POST /collections/search``, behind the same ``X-API-Key`` + rate-limit
    dependency as every other route, so node-to-node calls keep that protection too."""
    router = APIRouter(tags=["collections"], dependencies=[Depends(authorize)])

    @router.get("/collections")
    async def list_collections(request: Request, remote: bool = False) -> JSONResponse:
        """Metadata of the collections the caller (bearer token, or anonymous) may search on this node;
        with ``remote=true`` also on every federated node (as ``node/name``, each node's status in
        ``nodes``), asked with the caller's token."""
        request_id = _request_id(request)
        service = service_of(request)
        subject, token = _subject(service, request)
        listed = [m.model_dump(mode="json") for m in service.searchable(subject)]
        body: dict[str, Any] = {"request_id": request_id, "collections": listed}
        if remote:
            fed = service.federation
            answers = await asyncio.gather(*(fed.list_collections(n, token) for n in fed.nodes))
            body["nodes"] = {}
            for name, (status, items) in zip(fed.nodes, answers, strict=True):
                body["nodes"][name] = status.to_json()
                listed.extend({**i, "name": f"{name}/{i.get('name', '')}", "node": name} for i in items)
        return JSONResponse(body)

    @router.post("/collections/search")
    async def search_collections(req: CollectionSearchRequest, request: Request) -> JSONResponse:
        """Evidence per collection, decided here by this node's policies; per-collection status."""
        request_id = _request_id(request)
        service = service_of(request)
        subject = _subject(service, request)[0]
        names: list[str] = []
        for name in req.collections:
            extra = [m.name for m in service.searchable(subject)] if name == "*" else [name]
            names.extend(n for n in extra if n not in names)
        results = await asyncio.gather(
            *(service.search_collection(n, req.question, subject, req.top_docs) for n in names)
        )
        log.info(
            json.dumps(
                {
                    "event": "collections_search",
                    "request_id": request_id,
                    "question_hash": hash_text(req.question),
                    "status": {n: r[0].status for n, r in zip(names, results, strict=True)},
                }
            )
        )
        items = [
            {
                "collection": name,
                "status": status.status,
                "reason": status.reason,
                "meta": None if meta is None or status.status == "denied" else meta.model_dump(mode="json"),
                "evidence": [evidence_to_json(e) for e in evidence],
            }
            for name, (status, evidence, meta) in zip(names, results, strict=True)
        ]
        return JSONResponse({"request_id": request_id, "results": items})

    app.include_router(router)

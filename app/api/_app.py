"""The HTTP service: FastAPI over the process's one :class:`~app.asker.Asker` and its components.

Endpoints: ``POST /ask`` (cited answer), ``POST /ask/stream`` (the same as server-sent events),
``POST /search`` (evidence only), ``POST /judge`` (cross-source agreement), ``GET /healthz``,
``GET /readyz``, ``GET /metrics``; OpenAPI docs at ``/docs`` (Swagger UI served from here, no CDN). For
chat frontends (:mod:`app.frontends`): ``POST /v1/chat/completions`` and ``GET /v1/models``
(OpenAI-compatible), ``/mcp`` (MCP tools over streamable HTTP) and the reference chat page at ``/``.

Streaming: ``/ask/stream`` emits ``stage`` (understand/retrieve/answer/judge started|finished),
``evidence``, ``token`` (the model's raw text deltas while it writes: provisional), ``answer`` (the checked
final answer: authoritative), ``judge`` (when asked) and ``done``; a failure mid-stream becomes one
``error`` event and the stream ends cleanly. A client that disconnects cancels the generation.

Privacy: question text is PHI. Logs carry its hash (``hash_text``) unless ``debug_log_questions`` is set;
per-request NCBI keys and ``X-API-Key`` values are never logged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import __version__
from app.answer import Answerer
from app.container import Container
from app.judge import CrossSourceJudge
from app.pipeline import Pipeline
from app.schemas import (
    ErrorResponse,
)
from app.settings import ApiSettings, Settings
from core import CometaError
from llm import LLMError

from ._admission import AdmissionGate, admission_slots
from ._collections import collections_router
from ._deps import (
    ApiError,
    _error_payload,
    _log_failure,
    _request_id,
)
from ._gate import _Gate
from ._mcp import mcp_router
from ._openai import openai_router
from ._ops import ops_router
from ._page import docs_router, page_router
from ._routes import ask_router, judge_router, search_router

__all__ = ["create_app"]

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
        async with (
            Container(settings, api=api, pipeline=pipeline, answerer=answerer, judge=judge) as c,
            mcp_running(),  # the MCP session manager's task group (/mcp)
        ):
            # The models now, so that the first request is not the slow one, but in the background: a
            # world's first index build takes minutes, and /healthz must answer meanwhile.
            c.start_warming()
            app.state.sources = c.sources  # collections, access, federation
            app.state.container = c
            yield

    app = FastAPI(
        title="CoMeta",
        version=__version__,
        description="Patient questions -> PubMed evidence -> cited answers. "
        "Authentication: `X-API-Key` header when keys are configured (disabled when none are).",
        lifespan=lifespan,
        # /docs is ours (docs_router): FastAPI's loads Swagger UI from a CDN, blank offline.
        docs_url=None,
        redoc_url=None,
        responses={
            401: {"model": ErrorResponse},
            413: {"model": ErrorResponse},
            429: {"model": ErrorResponse},
            503: {"model": ErrorResponse},
        },
    )
    # Inside the gate (so refusals carry a request id and are counted): the caller checked, the body read,
    # then the bounded queue before every route that runs the question flow.
    slots = admission_slots(settings.model_copy(update={"api": api}))  # api_settings, when given, bound it
    app.add_middleware(AdmissionGate, settings=api, max_in_flight=slots)
    if api.cors_origins:  # outside admission: its refusals (401, 408, 503) carry the CORS headers too
        app.add_middleware(
            CORSMiddleware,
            allow_origins=api.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type", "X-API-Key", "X-Request-ID", "Authorization"],
            expose_headers=["X-Request-ID", "Retry-After"],
        )
    # Added last = outermost: every response, CORS preflights included, carries a request id.
    app.add_middleware(
        _Gate, max_body_bytes=api.max_body_bytes, body_timeout_s=api.body_timeout_s, settings=settings
    )
    app.state.settings = settings  # for the routes (``settings_of``), lifespan or not
    _install_handlers(app, settings)
    mcp, mcp_running = mcp_router(api, lambda: cast(Container, app.state.container))
    routers = [ask_router, search_router, judge_router, ops_router, collections_router]
    routers += [openai_router, mcp]  # /v1/chat/completions, /v1/models; /mcp (streamable HTTP)
    routers.append(docs_router)  # /docs, /docs/assets/*
    if api.chat_page:
        routers.append(page_router)  # / and /ui/*
    for router in routers:
        app.include_router(router)
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

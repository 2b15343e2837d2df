"""Dependencies of the routes: the container and what it holds, API-key and rate-limit checks, the
one mapping from exceptions to honest HTTP failures."""

from __future__ import annotations

import hmac
import json
import logging
import math
from collections.abc import Mapping
from typing import Annotated, Any, cast

from fastapi import Depends, Request
from prometheus_client import Counter, Histogram
from starlette.types import Send

from app import RateLimiterUnavailable
from app.asker import Asker
from app.container import Container
from app.judge import CrossSourceJudge
from app.pipeline import Pipeline
from app.settings import Settings
from app.sources import SourcesService
from core import CometaError
from llm import LLMError
from retrieval.ncbi import EutilsError
from retrieval.search import error_cause
from retrieval.understand import hash_text

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

_UNAUTHORIZED = {"WWW-Authenticate": 'Bearer error="invalid_token"'}


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


def settings_of(request: Request) -> Settings:
    """The settings the app was created with (``app.state.settings``, set by ``create_app``)."""
    return cast(Settings, request.app.state.settings)


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
    return await check_key(request, container, request.headers.get("x-api-key"), "X-API-Key header")


async def api_key_caller(request: Request) -> str:
    """:func:`authorize` outside FastAPI's dependencies (the admission gate runs before routing)."""
    return await authorize(request, get_container(request))


async def bearer_caller(request: Request) -> str:
    """The key check of the OpenAI and MCP routes: :func:`key_of`, then the per-client rate limit."""
    return await check_key(
        request, get_container(request), key_of(request), "API key (Authorization: Bearer)"
    )


def key_of(request: Request) -> str | None:
    """The API key as OpenAI and MCP clients send it: ``X-API-Key``, else ``Authorization: Bearer``."""
    given = request.headers.get("x-api-key")
    if given is None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        given = token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return given


async def check_key(request: Request, container: Container, given: str | None, where: str) -> str:
    """The API-key check on ``given`` (skipped when no keys are configured), then the per-client rate
    limit; the client's identity (a key hash or the address) or :class:`ApiError` 401/429/503.

    Once per request: the admission gate checks a question's caller before admitting it, and the route's
    own check then finds the identity in the request's state instead of counting the request twice."""
    checked = getattr(request.state, "caller", None)
    if isinstance(checked, str):
        return checked
    keys = container.api.api_keys
    if keys:
        ok = given is not None and any(
            hmac.compare_digest(given.encode(), k.get_secret_value().encode()) for k in keys
        )
        if not ok:
            API_REJECTED.labels("auth").inc()
            raise ApiError(401, "unauthorized", f"missing or invalid {where}")
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
    request.state.caller = ident
    return ident


PipelineDep = Annotated[Pipeline, Depends(get_pipeline)]
JudgeDep = Annotated[CrossSourceJudge | None, Depends(get_judge)]
AskerDep = Annotated[Asker, Depends(get_asker)]
AuthDep = Annotated[str, Depends(authorize)]
SettingsDep = Annotated[Settings, Depends(settings_of)]


def _question_log(settings: Settings, question: str) -> dict[str, str]:
    if settings.debug_log_questions:
        return {"question": question}
    return {"question_hash": hash_text(question)}


def _error_payload(exc: BaseException, request_id: str | None) -> tuple[int, dict[str, Any]]:
    """One mapping from exceptions to honest HTTP failures, for handlers and the SSE stream alike."""
    if isinstance(exc, ApiError):
        return exc.status, {"error": exc.error, "reason": exc.reason, "request_id": request_id}
    if isinstance(exc, EutilsError):
        reason = f"{type(exc).__name__}: {exc}"[:300]  # a summary, not a payload dump
        # The question ends without documents: the zero-hit cause the flow counted, on the error too.
        body = {"error": "NCBI unavailable", "reason": reason, "request_id": request_id}
        return 503, {**body, "zero_hit_cause": error_cause(exc)}
    if isinstance(exc, LLMError):
        return 503, {"error": "LLM unavailable", "reason": type(exc).__name__, "request_id": request_id}
    if isinstance(exc, CometaError):
        return 500, {"error": "retrieval failed", "reason": type(exc).__name__, "request_id": request_id}
    return 500, {"error": "internal error", "reason": None, "request_id": request_id}


Refusal = tuple[int, dict[str, Any], Mapping[str, str]]  # status, JSON body, headers


def api_refusal(exc: BaseException, request_id: str | None) -> Refusal:
    """:func:`_error_payload` with an :class:`ApiError`'s headers: the API's own error shape."""
    code, payload = _error_payload(exc, request_id)
    return code, payload, exc.headers if isinstance(exc, ApiError) else {}


async def send_error(send: Send, exc: BaseException, request_id: str | None) -> None:
    """:func:`api_refusal` sent over raw ASGI: for the layers that answer outside FastAPI's exception
    handlers (the ASGI gate, admission control, ``/mcp``)."""
    await send_json(send, *api_refusal(exc, request_id))


async def send_json(send: Send, code: int, payload: Mapping[str, Any], extra: Mapping[str, str]) -> None:
    """One JSON response over raw ASGI."""
    body = json.dumps(payload).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.lower().encode(), v.encode()) for k, v in extra.items()),
    ]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _log_failure(exc: BaseException, request_id: str, settings: Settings | None) -> None:
    # Exception messages can quote the question: only the type, unless question logging is on.
    debug = bool(settings and settings.debug_log_questions)
    log.error(
        json.dumps({"event": "request_failed", "request_id": request_id, "exception": type(exc).__name__}),
        exc_info=exc if debug else None,
    )

"""The OpenAI router: ``POST /v1/chat/completions`` and ``GET /v1/models``, OpenAI-compatible, thin over
:mod:`app.frontends`, every failure in OpenAI's error shape (``{"error": {message, type, param, code}}``).

The routes parse and authorise themselves (``X-API-Key`` or ``Authorization: Bearer``) rather than through
FastAPI's dependencies, so that a refused key or a bad body is answered the way OpenAI clients expect, not
in the shape of the rest of the API."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from app.frontends import (
    ChatRequest,
    ChatRequestError,
    chat_completion,
    chat_question,
    list_models,
    stream_chat,
)
from app.schemas import ModelListOut, ModelOut
from app.settings import Settings

from ._deps import (
    Refusal,
    _log_failure,
    _question_log,
    _request_id,
    api_refusal,
    bearer_caller,
    get_container,
    settings_of,
)

log = logging.getLogger("cometa.api")

_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}
_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded", 503: "service_unavailable"}


def openai_error(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """OpenAI's error body."""
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code or _CODES.get(status)}}


def _failure(
    exc: BaseException, request_id: str, settings: Settings
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The one exception mapping of the API (``_error_payload``), in OpenAI's shape."""
    if isinstance(exc, ChatRequestError):
        return exc.status, openai_error(exc.status, str(exc), param=exc.param, code=exc.code), {}
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]  # a ValidationError carries at least one error
        where = ".".join(str(p) for p in first["loc"])
        message = f"{where}: {first['msg']}" if where else first["msg"]
        return 400, openai_error(400, message, param=where or None), {}
    code, body, headers = openai_refusal(exc, request_id)
    if code >= 500:
        _log_failure(exc, request_id, settings)
    return code, body, dict(headers)


def openai_refusal(exc: BaseException, request_id: str | None) -> Refusal:
    """The API's exception mapping (:func:`api_refusal`) in OpenAI's shape: also what the admission gate
    answers on this route (401, 429, 408, 503 saturated)."""
    code, payload, headers = api_refusal(exc, request_id)
    message = payload["error"] + (f": {payload['reason']}" if payload.get("reason") else "")
    body = openai_error(code, message)
    body["error"]["request_id"] = request_id
    return code, body, headers


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON schema with its ``$defs`` inlined, for the OpenAPI document (its refs would point
    into the document root otherwise). The chat request has no recursive models."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return cast(dict[str, Any], walk(schema))


def _sse(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


def _refuse(exc: BaseException, request: Request, request_id: str) -> JSONResponse:
    code, body, headers = _failure(exc, request_id, settings_of(request))
    return JSONResponse(body, status_code=code, headers=headers)


openai_router = APIRouter(tags=["openai"])


@openai_router.get("/v1/models", response_model=ModelListOut)
async def models(request: Request) -> ModelListOut | JSONResponse:
    """The models this endpoint serves (one: ``cometa``)."""
    try:
        await bearer_caller(request)
    except Exception as exc:
        return _refuse(exc, request, _request_id(request))
    return ModelListOut.model_validate(list_models())


@openai_router.get("/v1/models/{model_id}", response_model=ModelOut)
async def model(model_id: str, request: Request) -> ModelOut | JSONResponse:
    """One model (404 ``model_not_found`` for any but ``cometa``)."""
    try:
        await bearer_caller(request)
        found = [m for m in list_models()["data"] if m["id"] == model_id]
        if not found:
            raise ChatRequestError(
                f"the model {model_id!r} does not exist", code="model_not_found", status=404
            )
    except Exception as exc:
        return _refuse(exc, request, _request_id(request))
    return ModelOut.model_validate(found[0])


@openai_router.post(
    "/v1/chat/completions",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _inlined(ChatRequest.model_json_schema())}},
        }
    },
)
async def chat_completions(request: Request) -> Any:
    """OpenAI Chat Completions (streamed with ``"stream": true``): the ``/ask`` answer to the last user
    message, citations as markdown links; the whole ``/ask`` response in the extra field ``cometa``."""
    request_id = _request_id(request)
    try:
        await bearer_caller(request)
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            # RecursionError: JSON nested deeper than the parser goes ("[" * 1000) is a bad body, not a 500.
            raise ChatRequestError("the body is not valid JSON") from exc
        req = ChatRequest.model_validate(body)
        question = chat_question(req.messages)
        log.info(
            json.dumps(
                {"event": "chat", "request_id": request_id, **_question_log(settings_of(request), question)}
            )
        )
        asker = get_container(request).asker
        if not req.stream:
            return JSONResponse(await chat_completion(asker, req, request_id))
        chunks = stream_chat(asker, req, request_id)
        first = await anext(chunks)  # a bad request still fails here, as a status code
    except Exception as exc:
        return _refuse(exc, request, request_id)

    async def events() -> AsyncIterator[bytes]:
        yield _sse(first)
        try:
            async for chunk in chunks:
                yield _sse(chunk)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Headers are gone: the failure becomes an error chunk, which the openai client raises.
            yield _sse(_failure(exc, request_id, settings_of(request))[1])
        finally:
            await chunks.aclose()
        yield _sse("[DONE]")

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

"""The OpenAI-compatible HTTP backend: chat completions (vLLM, TGI, OpenAI, ``llama_cpp.server``).

Its job is the wire: one request in the shape the JSON rung asks for, and every openai/httpx failure mapped
to the engine's signals or to an :class:`LLMError`. llama-cpp-python's server (0.3.x) answers
``json_schema`` with HTTP 500 carrying FastAPI's validation error, so a 5xx whose body names the response
format is a refusal (step down the ladder), not a crash.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from ._base import _BaseLLM, _finish
from ._config import LLMSettings
from ._errors import LLMRequestRejected, LLMUnavailable
from ._types import Message, _Completion, _Delta, _FormatRejected, _Rung, _Transient

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAICompatibleLLM"]

log = logging.getLogger("cometa.llm")

_FORMAT_RE = re.compile(r"response_format|json_schema|json_object|guided|grammar", re.IGNORECASE)
_STREAM_OPTIONS_RE = re.compile(r"stream_options|include_usage", re.IGNORECASE)


class OpenAICompatibleLLM(_BaseLLM):
    """Chat completions over HTTP with the official ``openai`` client (its own retries switched off).

    ``http_client`` lets tests (or a caller with special TLS/proxy needs) supply the httpx client.
    """

    backend = "openai"

    def __init__(self, settings: LLMSettings, *, http_client: Any = None) -> None:
        super().__init__(settings, concurrency=settings.max_concurrency)
        try:
            from openai import AsyncOpenAI
        except ImportError as exc:  # pragma: no cover - openai is a runtime dependency
            raise LLMUnavailable("the 'openai' package is not installed", backend=self.backend) from exc
        if settings.base_url is None:
            # The openai package would fall back to api.openai.com: never send a question nobody chose to.
            raise LLMUnavailable("no LLM server configured (COMETA_LLM__BASE_URL)", backend=self.backend)
        api_key = settings.api_key.get_secret_value() if settings.api_key else "EMPTY"
        self._client: AsyncOpenAI = AsyncOpenAI(
            base_url=settings.base_url,
            api_key=api_key,
            timeout=settings.timeout_s,
            max_retries=0,  # our loop retries, inside one overall budget
            http_client=http_client,
        )
        self._stream_usage = True  # send stream_options until the server refuses it once

    async def aclose(self) -> None:
        await self._client.close()

    async def served_models(self) -> list[str]:
        """The model ids the server lists (``GET {base_url}/models``): readiness checks that ours is one."""
        try:
            page = await self._client.models.list()
        except Exception as exc:
            raise LLMUnavailable(
                f"listing the server's models failed ({type(exc).__name__})",
                backend=self.backend,
                model=self.model_name,
            ) from None
        return [str(model.id) for model in getattr(page, "data", None) or []]

    async def _complete(
        self,
        messages: list[Message],
        *,
        rung: _Rung,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
    ) -> _Completion:
        response_format: dict[str, Any] | None = None
        if rung == "json_schema":
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        elif rung == "json_object_schema":
            response_format = {"type": "json_object", "schema": schema}
        elif rung == "json_object":
            response_format = {"type": "json_object"}
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if stop:
            kwargs["stop"] = list(stop)
        if response_format is not None:
            kwargs["response_format"] = response_format
        response = await self._create(kwargs, rung)

        # Servers that are only mostly OpenAI-compatible may omit choices/usage: treat as an empty reply.
        choices = getattr(response, "choices", None) or []
        text = ""
        finish = None
        if choices:
            text = choices[0].message.content or ""
            finish = choices[0].finish_reason
        usage = getattr(response, "usage", None)
        return _Completion(
            text=text,
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
            model=getattr(response, "model", None) or None,
            finish_reason=finish,
        )

    async def _create(self, kwargs: dict[str, Any], rung: _Rung) -> Any:
        """``chat.completions.create``, its failures mapped to our signals (shared by both call shapes)."""
        # Untyped call on purpose: the sentinel for "not given" (NOT_GIVEN vs omit) and the typed-dict
        # shape of response_format differ across openai majors, and llama.cpp's "schema" key is not in them.
        create = cast(Any, self._client.chat.completions.create)
        try:
            return await create(**kwargs)
        except Exception as exc:
            raise self._failure(exc, rung) from None

    def _failure(self, exc: Exception, rung: _Rung) -> Exception:
        """The signal (``_Transient``/``_FormatRejected``) or :class:`LLMError` for an openai/httpx error."""
        import openai

        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = f"HTTP {status}: {_error_detail(exc)}"
            if rung != "none" and (status in (400, 422) or (status >= 500 and _FORMAT_RE.search(detail))):
                # llama-cpp-python's server answers an unknown response_format with a 500 carrying
                # FastAPI's validation error; a 500 that names response_format is a refusal, not a crash.
                return _FormatRejected(detail, status)
            if status in (408, 409, 429) or status >= 500:
                return _Transient(detail, status)
            if status in (401, 403):
                return LLMUnavailable(
                    f"LLM server refused our credentials ({detail})",
                    backend=self.backend,
                    model=self.model_name,
                    status=status,
                )
            if status in (400, 422):
                return _FormatRejected(detail, status)  # plain-text request: rejected by the caller
            return LLMRequestRejected(
                f"LLM request rejected ({detail})", backend=self.backend, model=self.model_name, status=status
            )
        if isinstance(exc, openai.APIConnectionError):  # APITimeoutError included
            return _Transient(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, openai.APIResponseValidationError):
            return _Transient(f"malformed response envelope: {exc}")
        if isinstance(exc, openai.APIError):
            # An error event inside a stream ("data: {"error": ...}"): the server gave up mid-reply.
            return _Transient(f"{type(exc).__name__}: {_error_detail(exc)}")
        if isinstance(exc, (*_HTTP_ERRORS, openai.OpenAIError)):
            return LLMUnavailable(
                f"LLM call failed: {type(exc).__name__}: {exc}", backend=self.backend, model=self.model_name
            )
        if isinstance(exc, json.JSONDecodeError):
            # HTTP 200 whose body is not JSON (a proxy's HTML page, a half-written reply): the server's
            # fault, not ours, so it is retried and then reported like any other unavailable backend.
            return _Transient(f"unparseable response body: {exc}")
        raise exc  # not a transport/API failure: a bug, keep its traceback

    async def _stream(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
    ) -> AsyncIterator[_Delta]:
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
        }
        if stop:
            kwargs["stop"] = list(stop)
        if self._stream_usage:
            # Token counts arrive in one last chunk only when asked for (OpenAI, vLLM, llama.cpp).
            kwargs["stream_options"] = {"include_usage": True}
        try:
            stream = await self._create(kwargs, "none")
        except _FormatRejected as exc:
            if not (self._stream_usage and _STREAM_OPTIONS_RE.search(str(exc))):
                raise
            # A server that does not know stream_options: ask without it, and remember (no usage then).
            log.info("llm server refused stream_options (%s); streaming without usage", exc)
            self._stream_usage = False
            kwargs.pop("stream_options")
            stream = await self._create(kwargs, "none")
        try:
            async for chunk in stream:
                choices = getattr(chunk, "choices", None) or []
                text = ""
                finish = None
                if choices:
                    delta = getattr(choices[0], "delta", None)
                    text = (getattr(delta, "content", None) or "") if delta is not None else ""
                    finish = choices[0].finish_reason
                usage = getattr(chunk, "usage", None)
                yield _Delta(
                    text,
                    usage=((usage.prompt_tokens or 0), (usage.completion_tokens or 0)) if usage else None,
                    model=getattr(chunk, "model", None) or None,
                    finish_reason=finish,
                )
        except Exception as exc:
            raise self._failure(exc, "none") from None
        finally:
            # Closing the response is what tells the server to stop generating (client gone, timeout).
            await _finish(stream.close())


def _http_errors() -> tuple[type[Exception], ...]:
    # openai wraps transport errors, but a custom http_client may still raise its own; openai 1.x/2.x use
    # httpx, 3.x uses httpx2.
    found: list[type[Exception]] = []
    for module in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(module).HTTPError)
        except (ImportError, AttributeError):
            pass
    return tuple(found)


_HTTP_ERRORS = _http_errors()


def _error_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])[:300]
        return json.dumps(body)[:300]
    return str(getattr(exc, "message", exc))[:300]

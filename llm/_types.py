"""The LLM layer's vocabulary: the client protocol, its result and stream types, and the wire helpers.

* :class:`LLMClient` is what every stage depends on; :class:`LLMResult` is what each call returns and
  :class:`TextStream` what ``stream_text`` returns.
* A backend (see ``_base``) turns one request into one :class:`_Completion` (or a stream of :class:`_Delta`)
  or raises one of the private failure signals :class:`_Transient` / :class:`_FormatRejected`.
* The JSON helpers pull an object out of a reply and shape the pydantic schema sent to the server.

``LLMResult.attempts`` counts requests sent (negotiation, transport retries and invalid replies included).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, Self, TypeVar, runtime_checkable

from prometheus_client import Counter, Histogram
from pydantic import BaseModel, ValidationError

__all__ = [
    "LLM_CALLS",
    "LLM_INVALID_OUTPUT",
    "LLM_LATENCY",
    "LLM_TOKENS",
    "JsonModeUsed",
    "LLMClient",
    "LLMResult",
    "Message",
    "TextStream",
    "extract_json_object",
]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
Message = dict[str, str]
JsonModeUsed = Literal["json_schema", "json_object", "none"]
# Internal rungs; "json_object_schema" is json_object plus a "schema" key (llama.cpp's grammar extension).
_Rung = Literal["json_schema", "json_object_schema", "json_object", "none"]
_LADDERS: dict[str, tuple[_Rung, ...]] = {
    "auto": ("json_schema", "json_object_schema", "json_object", "none"),
    "json_schema": ("json_schema",),
    "json_object": ("json_object_schema", "json_object"),
    "none": ("none",),
}
_USED: dict[_Rung, JsonModeUsed] = {
    "json_schema": "json_schema",
    "json_object_schema": "json_object",
    "json_object": "json_object",
    "none": "none",
}

LLM_CALLS = Counter("cometa_llm_calls_total", "LLM calls, by backend and outcome", ["backend", "outcome"])
LLM_TOKENS = Counter("cometa_llm_tokens_total", "LLM tokens reported by the backend", ["kind"])
LLM_LATENCY = Histogram(
    "cometa_llm_latency_seconds",
    "Latency of one LLM call (queueing, retries and backoff included)",
    ["backend"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0),
)
LLM_INVALID_OUTPUT = Counter(
    "cometa_llm_invalid_output_total", "LLM replies that failed JSON/schema validation", ["backend"]
)


_MAX_WIRE_LENGTH = 500
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class LLMResult(Generic[T]):
    value: T
    raw_text: str
    model: str
    prompt_version: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int
    json_mode_used: JsonModeUsed


@runtime_checkable
class LLMClient(Protocol):
    """What the pipeline stages depend on (fakes in tests implement the same five members).

    ``stream_text`` is the newest member: callers that accept any client fall back to ``complete_text``
    when an object lacks it (see ``app.answer.Answerer.answer_stream``).
    """

    @property
    def model_name(self) -> str: ...

    async def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[M],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> LLMResult[M]: ...

    async def complete_text(
        self,
        messages: Sequence[Message],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> LLMResult[str]: ...

    def stream_text(
        self,
        messages: Sequence[Message],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> TextStream: ...

    async def aclose(self) -> None: ...


class TextStream:
    """One streamed text completion: ``async for delta in stream``, then ``stream.result``.

    ``source`` is an async generator that yields ``str`` deltas and, last, the call's :class:`LLMResult`
    (the complete text, tokens, latency). Leaving the loop early, or ``aclose()`` / ``async with`` exit,
    closes the source, which stops the generation behind it. Errors are :class:`LLMError` errors, raised from
    the ``async for`` (possibly after some deltas).
    """

    def __init__(self, source: AsyncGenerator[str | LLMResult[str], None]) -> None:
        self._source = source
        self._result: LLMResult[str] | None = None

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> str:
        if self._result is not None:
            raise StopAsyncIteration
        item = await self._source.__anext__()
        if isinstance(item, str):
            return item
        self._result = item
        await self._source.aclose()
        raise StopAsyncIteration

    @property
    def done(self) -> bool:
        return self._result is not None

    @property
    def result(self) -> LLMResult[str]:
        """The whole call's result; only once every delta has been read."""
        if self._result is None:
            raise RuntimeError("the stream has not finished yet")
        return self._result

    async def aclose(self) -> None:
        await self._source.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# --- what a backend hands back ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str | None = None
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class _Delta:
    """One piece of a streamed completion; ``usage`` (prompt, completion) when the backend reports it."""

    text: str
    usage: tuple[int, int] | None = None
    model: str | None = None
    finish_reason: str | None = None


class _Transient(Exception):
    """Retryable: connection trouble, 408/409/429/5xx, a garbled response envelope."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class _FormatRejected(Exception):
    """The server refused the request shape (400/422): the JSON rung is presumably unsupported."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# --- JSON extraction ----------------------------------------------------------------------------------


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``: tolerates ```json fences, prose around it and trailing junk.

    Raises ``ValueError`` when there is none.
    """
    candidates = [m.group(1) for m in _FENCE_RE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                obj, _end = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                pass
            else:
                if isinstance(obj, dict):
                    return obj
            start = candidate.find("{", start + 1)
    raise ValueError("no JSON object in the reply")


def _schema_name(schema: type[BaseModel]) -> str:
    # OpenAI's json_schema.name allows [a-zA-Z0-9_-]{1,64}.
    return re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64] or "output"


def _compact_schema(schema: dict[str, Any]) -> Any:
    """The schema without ``title`` keys: they cost prompt tokens and tell the model nothing."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(schema)


def _wire_schema(schema: dict[str, Any]) -> Any:
    """The schema sent to the server: pydantic's, minus string length bounds above ``_MAX_WIRE_LENGTH``.

    llama.cpp compiles ``maxLength: 4000`` into 4000 nested optional grammar rules and refuses the grammar
    ("exceeds sane defaults"). Small bounds are kept: they stop a weak model from rambling inside a string
    until ``max_tokens`` cuts the JSON. Every bound is still enforced by the pydantic validation.
    """

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if not (k in ("minLength", "maxLength") and isinstance(v, int) and v > _MAX_WIRE_LENGTH)
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(schema)


def _short(error: Exception, limit: int = 300) -> str:
    if isinstance(error, ValidationError):
        parts = [f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in error.errors()[:5]]
        text = "; ".join(parts)
    else:
        text = str(error)
    return text if len(text) <= limit else text[: limit - 3] + "..."

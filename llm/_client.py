"""One async LLM interface for every stage (rewriting, answering, judging), two backends behind it.

* :class:`OpenAICompatibleLLM` speaks OpenAI chat completions (vLLM, TGI, OpenAI, ``llama_cpp.server``).
* :class:`EmbeddedLLM` runs a GGUF model in-process through llama-cpp-python (see ``_embedded``).

Both share :class:`_BaseLLM`, which owns the call budget (one ``asyncio.timeout`` around queueing, every
attempt and backoff), the concurrency limit, bounded retries, structured-output negotiation, validation
against a pydantic model, token/latency accounting and Prometheus metrics. A backend only turns one request
into one :class:`_Completion` or one of the private failure signals below.

Streaming (:meth:`_BaseLLM.stream_text`) returns a :class:`TextStream`: text deltas as the model produces
them, then ``stream.result`` (the same :class:`LLMResult` ``complete_text`` returns). Same budget, slot,
metrics and error tree as the other calls; a transport failure is retried only while no token has been
handed out (a retry after that would repeat text the caller already has), later it is ``LLMUnavailable``.
A backend that cannot stream yields its whole completion as one delta.

Structured output, ``json_mode="auto"``: the request asks for ``json_schema`` (vLLM, OpenAI, llama-server);
a refusal steps down to ``json_object`` carrying the schema (llama-cpp-python and llama-server turn it into
a grammar), then to bare ``json_object`` (OpenAI), then to plain text with the schema spelled out in the
prompt. A refusal is a 400/422 that is not about prompt length, or a 5xx whose body names the response
format: llama-cpp-python's server (0.3.x) answers ``json_schema`` with HTTP 500 carrying FastAPI's
validation error. A rung that works is remembered for the client's lifetime, so the negotiation is paid
once. Whatever the rung, the reply is always validated with the pydantic model.

``LLMResult.attempts`` counts requests sent (negotiation, transport retries and invalid replies included).
"""

from __future__ import annotations

import abc
import asyncio
import importlib
import json
import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, Self, TypeVar, cast, runtime_checkable

from prometheus_client import Counter, Histogram
from pydantic import BaseModel, ValidationError

from ._config import LLMSettings
from ._errors import LLMOutputInvalid, LLMRequestRejected, LLMTimeout, LLMUnavailable

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "LLM_CALLS",
    "LLM_INVALID_OUTPUT",
    "LLM_LATENCY",
    "LLM_TOKENS",
    "JsonModeUsed",
    "LLMClient",
    "LLMResult",
    "Message",
    "OpenAICompatibleLLM",
    "TextStream",
    "build_llm",
    "extract_json_object",
]

log = logging.getLogger("cometa.llm")

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
R = TypeVar("R")
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

# Errors whose 400 body says the prompt is too long: never a reason to step down the JSON ladder.
_LENGTH_RE = re.compile(r"context|too long|maximum.{0,40}tokens|max_tokens|exceed", re.IGNORECASE)
_MAX_WIRE_LENGTH = 500
_FORMAT_RE = re.compile(r"response_format|json_schema|json_object|guided|grammar", re.IGNORECASE)
_STREAM_OPTIONS_RE = re.compile(r"stream_options|include_usage", re.IGNORECASE)
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


# Cleanup tasks that must outlive a cancelled caller (see _finish); referenced so they are not collected.
_CLEANUPS: set[asyncio.Future[Any]] = set()


async def _finish(cleanup: Awaitable[object]) -> None:
    """Run ``cleanup`` to completion even while the caller is being cancelled.

    Starlette cancels a disconnected client's response through an anyio cancel scope, which cancels
    every later ``await`` of the task too; a shielded task still closes the upstream connection (the
    signal that makes vLLM/llama.cpp abort the generation).
    """
    task = asyncio.ensure_future(cleanup)
    _CLEANUPS.add(task)
    task.add_done_callback(_cleanup_done)
    try:
        await asyncio.shield(task)
    except Exception as exc:  # a failed close must not mask why the stream ended
        log.debug("llm stream cleanup failed: %s", type(exc).__name__)


def _cleanup_done(task: asyncio.Future[Any]) -> None:
    _CLEANUPS.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: no "exception was never retrieved" noise when nobody awaited it


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


@dataclass(slots=True)
class _Tally:
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, completion: _Completion) -> None:
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        LLM_TOKENS.labels("prompt").inc(completion.prompt_tokens)
        LLM_TOKENS.labels("completion").inc(completion.completion_tokens)


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


# --- the shared engine --------------------------------------------------------------------------------


class _BaseLLM(abc.ABC):
    backend: str = "base"

    def __init__(self, settings: LLMSettings, *, concurrency: int) -> None:
        self.settings = settings
        self._slots = asyncio.Semaphore(concurrency)
        self._ladder = self._json_ladder(settings)
        # Index into the ladder of the first rung still worth trying; only grows, once a lower rung worked.
        self._rung = 0

    @property
    def model_name(self) -> str:
        return self.settings.model

    @property
    def json_mode(self) -> JsonModeUsed:
        """The structured-output mode this client currently starts with."""
        return _USED[self._ladder[self._rung]]

    def _json_ladder(self, settings: LLMSettings) -> tuple[_Rung, ...]:
        return _LADDERS[settings.json_mode]

    @abc.abstractmethod
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
        """Send one request. Raise ``_Transient``/``_FormatRejected`` or an :class:`LLMError`."""

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # public API

    async def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[M],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> LLMResult[M]:
        tally = _Tally()
        started = time.monotonic()
        return await self._run(
            self._json_loop(
                list(messages),
                schema,
                prompt_version=prompt_version,
                max_tokens=max_tokens or self.settings.max_tokens,
                temperature=self.settings.temperature if temperature is None else temperature,
                tally=tally,
                started=started,
            ),
            tally,
            started,
        )

    async def complete_text(
        self,
        messages: Sequence[Message],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> LLMResult[str]:
        tally = _Tally()
        started = time.monotonic()
        return await self._run(
            self._text_loop(
                list(messages),
                prompt_version=prompt_version,
                max_tokens=max_tokens or self.settings.max_tokens,
                temperature=self.settings.temperature if temperature is None else temperature,
                stop=stop,
                tally=tally,
                started=started,
            ),
            tally,
            started,
        )

    def stream_text(
        self,
        messages: Sequence[Message],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> TextStream:
        """``complete_text``, streamed: text deltas as they are generated, then ``stream.result``.

        ``timeout_s`` bounds the whole call (slot wait, first token, every retry before it, and the
        stream); ``stream_idle_timeout_s`` bounds each silence between tokens after the first.
        """
        return TextStream(
            self._stream_body(
                list(messages),
                prompt_version=prompt_version,
                max_tokens=max_tokens or self.settings.max_tokens,
                temperature=self.settings.temperature if temperature is None else temperature,
                stop=stop,
            )
        )

    async def _stream(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
    ) -> AsyncIterator[_Delta]:
        """One streamed request. The fallback for a backend that cannot stream: the whole reply at once."""
        completion = await self._complete(
            messages,
            rung="none",
            schema=None,
            schema_name="",
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
        )
        yield _Delta(
            completion.text,
            usage=(completion.prompt_tokens, completion.completion_tokens),
            model=completion.model,
            finish_reason=completion.finish_reason,
        )

    async def _stream_body(
        self,
        messages: list[Message],
        *,
        prompt_version: str,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
    ) -> AsyncGenerator[str | LLMResult[str], None]:
        # No asyncio.timeout() around the body: it would span our yields and could fire while the
        # *consumer* runs. Every wait is bounded by its own deadline instead.
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        deadline = loop.time() + self.settings.timeout_s
        idle = self.settings.stream_idle_timeout_s
        tally = _Tally()
        outcome = "error"
        holding = False

        def timed_out(what: str) -> LLMTimeout:
            return LLMTimeout(
                f"LLM stream {what} after {tally.attempts} attempt(s)",
                backend=self.backend,
                model=self.model_name,
            )

        try:
            try:
                async with asyncio.timeout_at(deadline):
                    await self._slots.acquire()
                holding = True
            except TimeoutError:
                raise timed_out(f"waited {self.settings.timeout_s:g}s for a slot") from None
            parts: list[str] = []
            failures = 0
            while True:
                tally.attempts += 1
                usage: tuple[int, int] | None = None
                model: str | None = None
                finish: str | None = None
                deltas = aiter(
                    self._stream(messages, max_tokens=max_tokens, temperature=temperature, stop=stop)
                )
                try:
                    while True:
                        wait_until = min(deadline, loop.time() + idle) if parts else deadline
                        try:
                            async with asyncio.timeout_at(wait_until):
                                delta = await anext(deltas)
                        except StopAsyncIteration:
                            break
                        except TimeoutError:
                            if loop.time() >= deadline:
                                raise timed_out(f"exceeded {self.settings.timeout_s:g}s") from None
                            raise timed_out(f"stalled: no token for {idle:g}s") from None
                        usage = delta.usage or usage
                        model = delta.model or model
                        finish = delta.finish_reason or finish
                        if delta.text:
                            parts.append(delta.text)
                            yield delta.text
                except _Transient as exc:
                    if parts:  # text already went out: a retry would repeat it
                        raise self._unavailable(
                            f"LLM stream broke after {len(parts)} chunk(s)", exc
                        ) from None
                    failures += 1
                    delay = self._backoff(exc, failures)
                    try:
                        async with asyncio.timeout_at(deadline):
                            await asyncio.sleep(delay)
                    except TimeoutError:
                        raise timed_out(f"exceeded {self.settings.timeout_s:g}s") from None
                    continue
                except _FormatRejected as exc:
                    raise self._request_rejected(exc) from None
                finally:
                    aclose = getattr(deltas, "aclose", None)
                    if aclose is not None:
                        await _finish(aclose())
                break
            text = "".join(parts)
            prompt_tokens, completion_tokens = usage or (0, 0)
            completion = _Completion(text, prompt_tokens, completion_tokens, model, finish)
            tally.add(completion)
            outcome = "ok"
            yield self._result(text, completion, prompt_version, tally, started, "none")
        except LLMTimeout:
            outcome = "timeout"
            raise
        except LLMUnavailable:
            outcome = "unavailable"
            raise
        except LLMRequestRejected:
            outcome = "rejected"
            raise
        except (GeneratorExit, asyncio.CancelledError):
            # The consumer left (client disconnect, early break): closing the source stopped generation.
            if outcome != "ok":
                outcome = "cancelled"
            raise
        finally:
            if holding:
                self._slots.release()
            LLM_CALLS.labels(self.backend, outcome).inc()
            LLM_LATENCY.labels(self.backend).observe(time.monotonic() - started)

    # the call envelope: budget, slot, metrics, error mapping

    async def _run(self, body: Coroutine[Any, Any, R], tally: _Tally, started: float) -> R:
        outcome = "error"
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                async with self._slots:
                    result = await body
            outcome = "ok"
            return result
        except TimeoutError:
            outcome = "timeout"
            raise LLMTimeout(
                f"LLM call exceeded {self.settings.timeout_s:g}s after {tally.attempts} attempt(s)",
                backend=self.backend,
                model=self.model_name,
            ) from None
        except LLMOutputInvalid:
            outcome = "invalid"
            raise
        except LLMUnavailable:
            outcome = "unavailable"
            raise
        except LLMRequestRejected:
            outcome = "rejected"
            raise
        finally:
            body.close()  # no "never awaited" warning when the slot wait itself timed out
            LLM_CALLS.labels(self.backend, outcome).inc()
            LLM_LATENCY.labels(self.backend).observe(time.monotonic() - started)

    async def _send(
        self,
        messages: list[Message],
        *,
        rung: _Rung,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
        tally: _Tally,
    ) -> _Completion:
        """One request with transport retries; ``_FormatRejected`` passes through to the caller."""
        failures = 0
        while True:
            tally.attempts += 1
            try:
                completion = await self._complete(
                    messages,
                    rung=rung,
                    schema=schema,
                    schema_name=schema_name,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    stop=stop,
                )
            except _Transient as exc:
                failures += 1
                await asyncio.sleep(self._backoff(exc, failures))
                continue
            tally.add(completion)
            return completion

    async def _text_loop(
        self,
        messages: list[Message],
        *,
        prompt_version: str,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
        tally: _Tally,
        started: float,
    ) -> LLMResult[str]:
        try:
            completion = await self._send(
                messages,
                rung="none",
                schema=None,
                schema_name="",
                max_tokens=max_tokens,
                temperature=temperature,
                stop=stop,
                tally=tally,
            )
        except _FormatRejected as exc:
            raise self._request_rejected(exc) from None
        return self._result(completion.text, completion, prompt_version, tally, started, "none")

    async def _json_loop(
        self,
        messages: list[Message],
        schema: type[M],
        *,
        prompt_version: str,
        max_tokens: int,
        temperature: float,
        tally: _Tally,
        started: float,
    ) -> LLMResult[M]:
        json_schema = _wire_schema(schema.model_json_schema())
        name = _schema_name(schema)
        rung_index = self._rung
        correction: list[Message] = []
        invalid = 0
        while True:
            rung = self._ladder[rung_index]
            try:
                completion = await self._send(
                    self._with_format_instructions(messages, json_schema, rung) + correction,
                    rung=rung,
                    schema=json_schema,
                    schema_name=name,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    stop=None,
                    tally=tally,
                )
            except _FormatRejected as exc:
                if rung_index + 1 >= len(self._ladder) or _LENGTH_RE.search(str(exc)):
                    raise self._request_rejected(exc, rung) from None
                rung_index += 1
                log.info("llm server refused %s output (%s); trying %s", rung, exc, self._ladder[rung_index])
                continue
            if rung_index > self._rung:
                # The server answered at this rung: remember it so later calls skip the refused ones.
                self._rung = rung_index
            try:
                value = schema.model_validate(extract_json_object(completion.text))
            except (ValueError, ValidationError) as exc:
                invalid += 1
                LLM_INVALID_OUTPUT.labels(self.backend).inc()
                if invalid > self.settings.max_retries:
                    raise LLMOutputInvalid(
                        f"no valid {schema.__name__} after {invalid} repl(ies): {_short(exc)}",
                        backend=self.backend,
                        model=self.model_name,
                        raw_text=completion.text,
                        attempts=tally.attempts,
                    ) from None
                # Replace (not accumulate) the correction, so small contexts do not overflow.
                correction = [
                    {
                        "role": "user",
                        "content": (
                            f"Your previous reply was not valid: {_short(exc, 200)}. Reply again with "
                            "ONLY one JSON object matching the required schema, no prose, no code fences."
                        ),
                    }
                ]
                continue
            return self._result(value, completion, prompt_version, tally, started, _USED[rung])

    # the failure handling shared by the plain and the streamed call

    def _backoff(self, exc: _Transient, failures: int) -> float:
        """The wait before retry number ``failures``; :class:`LLMUnavailable` once the retries are spent."""
        if failures > self.settings.max_retries:
            raise self._unavailable(f"LLM unavailable after {failures} attempt(s)", exc) from None
        delay: float = self.settings.retry_backoff_s * 2 ** (failures - 1)
        log.warning("llm transient failure (%s); retry %d in %.2fs", exc, failures, delay)
        return delay

    def _unavailable(self, what: str, exc: _Transient) -> LLMUnavailable:
        return LLMUnavailable(
            f"{what}: {exc}", backend=self.backend, model=self.model_name, status=exc.status
        )

    def _request_rejected(self, exc: _FormatRejected, rung: _Rung | None = None) -> LLMRequestRejected:
        where = f" ({rung})" if rung else ""
        return LLMRequestRejected(
            f"LLM request rejected{where}: {exc}",
            backend=self.backend,
            model=self.model_name,
            status=exc.status,
        )

    def _with_format_instructions(
        self, messages: list[Message], schema: dict[str, Any], rung: _Rung
    ) -> list[Message]:
        """Spell the schema out when the server will not enforce it (bare json_object, plain text)."""
        if rung in ("json_schema", "json_object_schema"):
            return list(messages)
        note = (
            "Reply with ONLY one JSON object (no prose, no code fences) that conforms to this JSON schema:\n"
            + json.dumps(_compact_schema(schema), separators=(",", ":"))
        )
        out = [dict(m) for m in messages]
        if out and out[0].get("role") == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{note}"
        else:
            out.insert(0, {"role": "system", "content": note})
        return out

    def _result(
        self,
        value: T,
        completion: _Completion,
        prompt_version: str,
        tally: _Tally,
        started: float,
        mode: JsonModeUsed,
    ) -> LLMResult[T]:
        return LLMResult(
            value=value,
            raw_text=completion.text,
            model=completion.model or self.model_name,
            prompt_version=prompt_version,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            latency_s=time.monotonic() - started,
            attempts=tally.attempts,
            json_mode_used=mode,
        )


# --- OpenAI-compatible HTTP backend -------------------------------------------------------------------


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


def build_llm(settings: LLMSettings) -> LLMClient | None:
    """The client ``settings`` ask for, or ``None`` when LLM stages are switched off."""
    if settings.backend == "none":
        return None
    if settings.backend == "embedded":
        from ._embedded import EmbeddedLLM

        return EmbeddedLLM(settings)
    return OpenAICompatibleLLM(settings)

"""The engine both backends share: :class:`_BaseLLM`.

It owns the call budget (one ``asyncio.timeout`` around queueing, every attempt and backoff), the
concurrency limit, bounded retries, structured-output negotiation, validation against a pydantic model,
token/latency accounting and Prometheus metrics. A backend (``_openai``, ``_embedded``) only turns one
request into one :class:`_Completion` or one of the private failure signals of ``_types``.

Streaming (:meth:`_BaseLLM.stream_text`) returns a :class:`TextStream`: text deltas as the model produces
them, then ``stream.result`` (the same :class:`LLMResult` ``complete_text`` returns). Same budget, slot,
metrics and error tree as the other calls; a transport failure is retried only while no token has been
handed out (a retry after that would repeat text the caller already has), later it is ``LLMUnavailable``.
A backend that cannot stream yields its whole completion as one delta.

Structured output, ``json_mode="auto"``: the request asks for ``json_schema`` (vLLM, OpenAI, llama-server);
a refusal steps down to ``json_object`` carrying the schema (llama-cpp-python and llama-server turn it into
a grammar), then to bare ``json_object`` (OpenAI), then to plain text with the schema spelled out in the
prompt. A refusal is a 400/422 that is not about prompt length, or a 5xx whose body names the response
format (see ``_openai``). A rung that works is remembered for the client's lifetime, so the negotiation is
paid once. Whatever the rung, the reply is always validated with the pydantic model.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ValidationError

from ._config import LLMSettings
from ._errors import LLMOutputInvalid, LLMRequestRejected, LLMTimeout, LLMUnavailable
from ._types import (
    _LADDERS,
    _USED,
    LLM_CALLS,
    LLM_INVALID_OUTPUT,
    LLM_LATENCY,
    LLM_TOKENS,
    JsonModeUsed,
    LLMResult,
    Message,
    TextStream,
    _compact_schema,
    _Completion,
    _Delta,
    _FormatRejected,
    _Rung,
    _schema_name,
    _short,
    _Transient,
    _wire_schema,
    extract_json_object,
)

log = logging.getLogger("cometa.llm")

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
R = TypeVar("R")

# Errors whose 400 body says the prompt is too long: never a reason to step down the JSON ladder.
_LENGTH_RE = re.compile(r"context|too long|maximum.{0,40}tokens|max_tokens|exceed", re.IGNORECASE)


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

"""A scripted LLMClient shared by the tests: real prompts in, scripted replies out, every call recorded."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ValidationError

from app.settings import Settings
from core import OnProgress
from llm import LLMOutputInvalid, LLMResult, Message, TextStream

__all__ = [
    "BrokenStream",
    "Counting",
    "Reply",
    "ScriptedLLM",
    "VectorEncoder",
    "completion_body",
    "pieces",
    "sequenced",
]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class BrokenStream:
    """A text reply that fails part-way: streaming yields ``text`` and then raises ``error``;
    ``complete_text`` raises ``error`` (a non-streaming call never sees the partial text)."""

    text: str
    error: Exception


Reply = str | dict[str, Any] | Exception | BrokenStream

_PIECE_RE = re.compile(r"\S+\s*|\s+")


def pieces(text: str) -> list[str]:
    """How the fake streams ``text``: word by word, whitespace kept, so the pieces join back exactly."""
    return _PIECE_RE.findall(text)


class ScriptedLLM:
    """``script(prompt_text) -> reply``: a str for text, a dict for JSON, or an exception to raise.

    ``seen`` keeps every call's messages and ``versions`` its prompt version, in call order. Streams yield
    the reply word by word (``token_delay`` seconds apart); ``streamed`` counts the deltas each stream
    handed out and ``stream_outcomes`` how each ended: ``"done"``, ``"error"`` or ``"closed"`` (the
    consumer stopped reading before the end).
    """

    model_name = "scripted"

    def __init__(self, script: Callable[[str], Reply], *, token_delay: float = 0.0) -> None:
        self.script = script
        self.token_delay = token_delay
        self.seen: list[Sequence[Message]] = []
        self.versions: list[str] = []
        self.streamed: list[int] = []
        self.stream_outcomes: list[str] = []

    def _reply(self, messages: Sequence[Message], prompt_version: str) -> Reply:
        self.seen.append(messages)
        self.versions.append(prompt_version)
        reply = self.script("\n".join(m["content"] for m in messages))
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[M],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> LLMResult[M]:
        reply = self._reply(messages, prompt_version)
        assert not isinstance(reply, BrokenStream)
        raw = reply if isinstance(reply, str) else json.dumps(reply)
        try:
            value = schema.model_validate(reply if isinstance(reply, dict) else json.loads(raw))
        except (ValidationError, ValueError) as exc:
            raise LLMOutputInvalid("invalid", raw_text=raw, attempts=2) from exc
        return LLMResult(value, raw, self.model_name, prompt_version, 100, 50, 0.01, 1, "json_schema")

    async def complete_text(
        self,
        messages: Sequence[Message],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> LLMResult[str]:
        reply = self._reply(messages, prompt_version)
        if isinstance(reply, BrokenStream):
            raise reply.error
        assert isinstance(reply, str)
        return LLMResult(reply, reply, self.model_name, prompt_version, 100, 50, 0.01, 1, "none")

    def stream_text(
        self,
        messages: Sequence[Message],
        *,
        prompt_version: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> TextStream:
        async def source() -> AsyncGenerator[str | LLMResult[str], None]:
            index = len(self.streamed)
            self.streamed.append(0)
            self.stream_outcomes.append("running")
            try:
                reply = self._reply(messages, prompt_version)
                text = reply.text if isinstance(reply, BrokenStream) else reply
                assert isinstance(text, str)
                for piece in pieces(text):
                    if self.token_delay:
                        await asyncio.sleep(self.token_delay)
                    self.streamed[index] += 1
                    yield piece
                if isinstance(reply, BrokenStream):
                    raise reply.error
                self.stream_outcomes[index] = "done"
                yield LLMResult(text, text, self.model_name, prompt_version, 100, 50, 0.01, 1, "none")
            except Exception:
                self.stream_outcomes[index] = "error"
                raise
            finally:
                if self.stream_outcomes[index] == "running":
                    self.stream_outcomes[index] = "closed"

        return TextStream(source())

    async def aclose(self) -> None:
        return None


def sequenced(*replies: Reply) -> ScriptedLLM:
    """A ScriptedLLM answering each call with the next reply, whatever the prompt."""
    queue = list(replies)
    return ScriptedLLM(lambda _prompt: queue.pop(0))


class VectorEncoder:
    """A dense-encoder stand-in: subclasses say how a text becomes a vector (``_vec``), nothing else.

    Documents are encoded as ``"title text"``; ``doc_calls``/``doc_texts`` count document encodes so tests
    can assert what was (not) recomputed.
    """

    name = "fake"
    dim = 16
    query_max_length = 64
    doc_max_length = 512

    def __init__(self) -> None:
        self.doc_calls = 0
        self.doc_texts = 0

    def _vec(self, text: str) -> npt.NDArray[np.float32]:
        raise NotImplementedError

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vec(t) for t in texts]).astype(np.float32)

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> npt.NDArray[np.float32]:
        self.doc_calls += 1
        self.doc_texts += len(docs)
        return self.encode_queries([f"{t} {a}" for t, a in docs])


def completion_body(
    content: str,
    *,
    model: str = "m-1",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    completion_id: str = "cmpl-1",
) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` response with one assistant message: what the scripted
    OpenAI-compatible servers of the tests answer."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def boolean_only_settings(*, gate: bool = True) -> Settings:
    """The offline settings with the dense arm off (no index build, no model): retrieval is the Boolean arm
    alone. ``gate=False`` also turns the evidence gate off, for tests about what happens after it."""
    settings = Settings(_env_file=None).offline()
    update: dict[str, object] = {"dense": settings.dense.model_copy(update={"enabled": False})}
    if not gate:
        update["gate"] = settings.gate.model_copy(update={"enabled": False})
    return settings.model_copy(update=update)


class Counting(httpx.AsyncBaseTransport):
    """A transport that counts what passes through it to ``inner`` (E-utilities, another node)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        return await self.inner.handle_async_request(request)

"""A scripted LLMClient shared by the tests: real prompts in, scripted replies out, every call recorded."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from llm import LLMOutputInvalid, LLMResult, Message

__all__ = ["Reply", "ScriptedLLM", "sequenced"]

M = TypeVar("M", bound=BaseModel)
Reply = str | dict[str, Any] | Exception


class ScriptedLLM:
    """``script(prompt_text) -> reply``: a str for text, a dict for JSON, or an exception to raise.

    ``seen`` keeps every call's messages and ``versions`` its prompt version, in call order.
    """

    model_name = "scripted"

    def __init__(self, script: Callable[[str], Reply]) -> None:
        self.script = script
        self.seen: list[Sequence[Message]] = []
        self.versions: list[str] = []

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
        assert isinstance(reply, str)
        return LLMResult(reply, reply, self.model_name, prompt_version, 100, 50, 0.01, 1, "none")

    async def aclose(self) -> None:
        return None


def sequenced(*replies: Reply) -> ScriptedLLM:
    """A ScriptedLLM answering each call with the next reply, whatever the prompt."""
    queue = list(replies)
    return ScriptedLLM(lambda _prompt: queue.pop(0))

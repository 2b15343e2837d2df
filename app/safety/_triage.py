"""The optional second opinion: with an LLM configured and ``COMETA_SAFETY__LLM_CHECK`` on, a structured
triage call (``prompts/safety_triage``) on a question the offline table did not find urgent. It may add an
urgent decision, never remove one; any failure (timeout, invalid JSON, the server down) leaves the offline
decision as it was."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pydantic import BaseModel

from prompts import load_prompt

from ._patterns import Kind

if TYPE_CHECKING:
    from llm import LLMClient

__all__ = ["SafetyTriage", "TriageOutput"]

log = logging.getLogger("cometa.safety")


class TriageOutput(BaseModel):
    urgent: bool
    kind: Kind | None = None


class SafetyTriage:
    """One bounded LLM call per question; ``kind`` when the model says urgent, else None."""

    def __init__(self, llm: LLMClient, *, timeout_s: float) -> None:
        self.llm = llm
        self.timeout_s = timeout_s
        self.prompt = load_prompt("safety_triage")

    async def kind(self, question: str) -> Kind | None:
        """The urgent kind the model sees in ``question`` (as the PHI policy lets it see it), or None."""
        messages = self.prompt.render(question=question)
        try:
            async with asyncio.timeout(self.timeout_s):
                result = await self.llm.complete_json(
                    messages, TriageOutput, prompt_version=self.prompt.id, temperature=0.0, max_tokens=40
                )
        except Exception as exc:
            # The offline decision stands; the reason, never the question.
            log.warning("safety triage unavailable: %s", type(exc).__name__)
            return None
        out = result.value
        if not out.urgent:
            return None
        return out.kind or "emergency"  # urgent without a kind: the emergency guidance

"""The stronger relevance judge: with an LLM configured, one batched structured call decides, per candidate
study, whether it addresses the question (``prompts/study_relevance``), as Clinfo.AI and PaperQA2 screen.

It decides where it answers; a study it skips, and every study when the call fails (timeout, invalid JSON,
the server down), keeps the offline decision (:func:`~app.trust._relevance.judge_relevance`). The model
sees each study's title and the start of its abstract, and the question as the PHI policy lets it see it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from prompts import load_prompt

from ._relevance import StudyRelevance

if TYPE_CHECKING:
    from llm import LLMClient

__all__ = ["LLMRelevance", "RelevanceOutput"]

log = logging.getLogger("cometa.trust")

_STUDY_CHARS = 700  # of each abstract: enough for what a study is about, bounded per call


class _Decision(BaseModel):
    id: str = Field(max_length=40)
    addresses: bool
    reason: str = Field(default="", max_length=300)


class RelevanceOutput(BaseModel):
    studies: list[_Decision] = Field(default_factory=list, max_length=60)


class LLMRelevance:
    """One bounded call per question over all its candidates."""

    def __init__(self, llm: LLMClient, *, timeout_s: float) -> None:
        self.llm = llm
        self.timeout_s = timeout_s
        self.prompt = load_prompt("study_relevance")

    async def judge(
        self, question: str, studies: Sequence[tuple[str, str, str]], offline: Sequence[StudyRelevance]
    ) -> tuple[StudyRelevance, ...]:
        """The model's decision on each ``(id, title, text)`` of ``studies``; ``offline`` (same order) where
        it gives none."""
        if not studies:
            return tuple(offline)
        listed = "\n\n".join(
            f"[{key}] {title}\n{' '.join(text.split())[:_STUDY_CHARS]}" for key, title, text in studies
        )
        messages = self.prompt.render(question=question, studies=listed)
        try:
            async with asyncio.timeout(self.timeout_s):
                result = await self.llm.complete_json(
                    messages,
                    RelevanceOutput,
                    prompt_version=self.prompt.id,
                    temperature=0.0,
                    max_tokens=40 * len(studies) + 40,
                )
        except Exception as exc:
            # The offline decisions stand; the reason, never the question or a title.
            log.warning("relevance judge unavailable: %s", type(exc).__name__)
            return tuple(offline)
        said = {d.id.strip("[] "): d for d in result.value.studies}
        out = []
        for (key, _title, _text), fallback in zip(studies, offline, strict=True):
            d = said.get(key)
            if d is None:
                out.append(fallback)
                continue
            why = " ".join(d.reason.split())[:200]
            missing = () if d.addresses else (fallback.missing or ("the question's topic",))
            out.append(StudyRelevance(key, d.addresses, fallback.named, missing, judge="llm", why=why))
        return tuple(out)

"""The one place that picks a backend from the settings (it imports both; neither imports it)."""

from __future__ import annotations

from ._config import LLMSettings
from ._embedded import EmbeddedLLM
from ._openai import OpenAICompatibleLLM
from ._types import LLMClient

__all__ = ["build_llm"]


def build_llm(settings: LLMSettings) -> LLMClient | None:
    """The client ``settings`` ask for, or ``None`` when LLM stages are switched off or no server is
    configured (``backend="openai"`` without a ``base_url``)."""
    if not settings.configured:
        return None
    if settings.backend == "embedded":
        return EmbeddedLLM(settings)
    return OpenAICompatibleLLM(settings)

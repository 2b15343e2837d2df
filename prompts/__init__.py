"""Versioned LLM prompt templates shipped as package data (``<name>.v<version>.md``).

``load_prompt("rewrite_query").render(question=..., current_year=2025)`` gives chat messages; the
template's ``id`` (``rewrite_query@1``) travels with every LLM result so outputs stay attributable.
"""

from ._loader import PromptError, PromptTemplate, available_prompts, load_prompt

__all__ = ["PromptError", "PromptTemplate", "available_prompts", "load_prompt"]

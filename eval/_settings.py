"""The evaluation suites' own settings (``COMETA_EVALUATION__*``, ``COMETA_JUDGE_LLM__*``), not the service's.

The service's :class:`app.settings.Settings` has no evaluation section: the judge model and the CCRS budgets
are read here, by the suites that use them, from the same environment (and ``.env``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from llm import LLMSettings

__all__ = [
    "EvalSettings",
    "EvaluationSettings",
]


class EvaluationSettings(BaseModel):
    """Budgets of the evaluation suites (``COMETA_EVALUATION__*``), defaulting to the papers' setups.

    CCRS (Muhamed 2025, §3.2): the reader saw the top-20 retrieved chunks of 300 tokens (about 6,000 tokens,
    ~24,000 characters) and wrote up to 2,048 tokens; the judge (Llama-3-70B) saw the same context. A small
    local model (the embedded Gemma-3-270M has a 2,048-token window) needs these lowered, e.g.
    ``COMETA_EVALUATION__CCRS_CONTEXT_CHARS=4000``; the report states the values used.
    """

    model_config = ConfigDict(extra="forbid")

    ccrs_context_chars: int = Field(
        default=24_000,
        ge=200,
        le=2_000_000,
        description="CCRS: characters of retrieved context the reader gets (paper: 20 chunks x 300 tokens).",
    )
    ccrs_judge_context_chars: int = Field(
        default=24_000,
        ge=200,
        le=2_000_000,
        description="CCRS: characters of that context the judge sees (paper: the reader's context).",
    )
    ccrs_max_answer_tokens: int = Field(
        default=2048, ge=16, le=32_000, description="CCRS: completion tokens of an answer (paper: 2,048)."
    )
    ccrs_tukey_b: int = Field(
        default=10_000, ge=100, le=1_000_000, description="Randomised Tukey HSD trials B (CCRS: 10,000)."
    )


class EvalSettings(BaseSettings):
    """The evaluation suites' settings, read from ``COMETA_*`` like the service's (nested: ``__``)."""

    model_config = SettingsConfigDict(
        env_prefix="COMETA_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
    )

    judge_llm: LLMSettings | None = Field(
        default=None,
        description="The evaluation suites' judge (COMETA_JUDGE_LLM__*: BACKEND, MODEL, BASE_URL, ...): "
        "CCRS scoring, MedRGB relevance checks, generation and grading, the audit's cross-source "
        "judge. None: no separate judge, so judged suites refuse to run unless --allow-self-judge lets "
        "the reader grade itself.",
    )
    evaluation: EvaluationSettings = Field(
        default_factory=EvaluationSettings,
        description="Context and answer budgets of the evaluation suites (COMETA_EVALUATION__*).",
    )

"""Errors of the LLM layer; a branch of the one CoMeta exception tree::

CometaError
└── LLMError                    any failure of an LLM call (never an openai/httpx/llama_cpp exception)
    ├── LLMUnavailable          unreachable, 5xx/429 after retries, auth refused, package missing
    ├── LLMTimeout              the whole call exceeded ``timeout_s``
    ├── LLMRequestRejected      the server refused the request (4xx: context too long, bad model...)
    └── LLMOutputInvalid        no schema-valid JSON after every retry
"""

from __future__ import annotations

__all__ = ["LLMError", "LLMOutputInvalid", "LLMRequestRejected", "LLMTimeout", "LLMUnavailable"]

from core import CometaError


class LLMError(CometaError):
    """An LLM call failed. ``backend`` is ``openai`` or ``embedded``; ``model`` the model asked."""

    def __init__(self, message: str, *, backend: str | None = None, model: str | None = None) -> None:
        super().__init__(message)
        self.backend = backend
        self.model = model


class LLMUnavailable(LLMError):
    """No answer could be had: connection failure, 5xx or 429 until retries ran out, or no backend."""

    def __init__(
        self, message: str, *, backend: str | None = None, model: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(message, backend=backend, model=model)
        self.status = status


class LLMTimeout(LLMError):
    """The call (queueing, attempts and backoff together) ran past its ``timeout_s``."""


class LLMRequestRejected(LLMError):
    """A 4xx the request cannot recover from by retrying (context too long, unknown model...)."""

    def __init__(
        self, message: str, *, backend: str | None = None, model: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(message, backend=backend, model=model)
        self.status = status


class LLMOutputInvalid(LLMError):
    """The model never produced JSON that validates against the schema. ``raw_text`` is its last reply."""

    def __init__(
        self,
        message: str,
        *,
        backend: str | None = None,
        model: str | None = None,
        raw_text: str = "",
        attempts: int = 0,
    ) -> None:
        super().__init__(message, backend=backend, model=model)
        self.raw_text = raw_text
        self.attempts = attempts

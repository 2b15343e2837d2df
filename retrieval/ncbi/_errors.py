"""The one exception tree of the retrieval stage.

Everything that can go wrong while talking to E-utilities (live NCBI or our local server) is raised as a
subclass of :class:`EutilsError`, so callers can catch the whole family or pick one branch::

    CometaError
    ├── EutilsError                 any failure of an E-utilities call
    │   ├── TransportError          connection failed / timed out, after retries
    │   ├── RateLimited             HTTP 429 or NCBI's rate-limit JSON body, after retries
    │   ├── ServerError             HTTP 5xx, after retries
    │   ├── BadRequest              HTTP 4xx or an ``<ERROR>`` payload (invalid db, missing id, ...)
    │   ├── MalformedResponse       HTML instead of XML, truncated XML, invalid JSON, wrong root element
    │   └── LimiterUnavailable      the shared (Redis) E-utilities rate limiter cannot be reached and
    │                               ``limiter_on_error=error`` (``retrieval.eutils._ratelimit``)
    ├── CacheStoreError             the configured E-utilities cache store cannot be opened (bad URL or
    │                               path); raised at start-up, not per request (``retrieval.eutils._store``)
    └── QuerySyntaxError            a PubMed query our parser cannot accept (also a ValueError)

Other stages add their own branches under :class:`CometaError` beside these (``LLMError`` in ``llm``,
``PromptError`` in ``prompts``, ``RateLimiterUnavailable`` in ``app._limits``).
"""

from __future__ import annotations

from core import CometaError

__all__ = [
    "BadRequest",
    "EutilsError",
    "MalformedResponse",
    "RateLimited",
    "ServerError",
    "TransportError",
]


class EutilsError(CometaError):
    """An E-utilities call failed. ``endpoint`` names the utility (``esearch``, ``efetch``...)."""

    def __init__(self, message: str, *, endpoint: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status


class TransportError(EutilsError):
    """The server could not be reached, or did not answer within the timeout."""


class RateLimited(EutilsError):
    """NCBI (or the local server) kept refusing with its rate-limit answer until the retry budget ran out."""


class ServerError(EutilsError):
    """HTTP 5xx until the retry budget ran out."""


class BadRequest(EutilsError):
    """The request was refused: HTTP 4xx or an ``<ERROR>``/``"ERROR"`` payload. Never retried."""


class MalformedResponse(EutilsError):
    """The body is not what the protocol promises: HTML, truncated/corrupt XML, bad JSON, wrong root."""

"""Errors of the NCBI protocol: every failed E-utilities call (live NCBI or the local server) is an
:class:`EutilsError`, so callers catch the whole family or one branch (the tree: :mod:`core._errors`)."""

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

"""Errors of the PubMed query language."""

from __future__ import annotations

from core import CometaError

__all__ = ["QuerySyntaxError"]


class QuerySyntaxError(CometaError, ValueError):
    """A Boolean query that is not valid PubMed syntax. ``position`` is a 0-based character offset."""

    def __init__(self, message: str, *, query: str = "", position: int | None = None) -> None:
        super().__init__(message)
        self.query = query
        self.position = position

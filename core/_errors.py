"""The root of the one error tree: every error CoMeta raises on purpose derives from it."""

from __future__ import annotations

__all__ = ["CometaError"]


class CometaError(Exception):
    """Root of every error CoMeta raises on purpose."""

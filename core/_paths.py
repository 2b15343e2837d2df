"""Where CoMeta keeps what it can rebuild: the user's cache folder, as the XDG base directory spec says."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_cache_dir"]


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/cometa``, else ``~/.cache/cometa``; read on every call, so the environment of the
    moment decides (a deployment or a test that moves the cache sees it moved)."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    # The spec: a relative path is invalid and ignored.
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "cometa"

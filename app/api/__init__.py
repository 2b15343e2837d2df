"""The HTTP API (FastAPI): thin routes over the :class:`~app.asker.Asker` and the sources service, the
request gate (body limit, request ids, PHI-free logs) and honest error bodies."""

from ._app import create_app, get_judge

__all__ = [
    "create_app",
    "get_judge",
]

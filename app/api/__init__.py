"""The HTTP API (FastAPI): thin routes over the :class:`~app.asker.Asker` and the sources service, the
request gate (body limit, request ids, PHI-free logs) and honest error bodies."""

from ._admission import admission_slots
from ._app import create_app
from ._deps import ApiError, get_asker, get_container, get_judge, get_pipeline

__all__ = [
    "ApiError",
    "admission_slots",
    "create_app",
    "get_asker",
    "get_container",
    "get_judge",
    "get_pipeline",
]

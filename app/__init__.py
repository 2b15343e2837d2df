"""The service layer: settings, the composition root, the Asker (one question flow), answering and judging,
sources and federation, the HTTP API and the CLI (docs/architecture.md has the map)."""

from app.schemas import AskRequest, UserDocument

from ._limits import (
    RateLimiterUnavailable,
    RedisWindowLimiter,
    RequestLimiter,
    SlidingWindowLimiter,
    build_request_limiter,
)
from ._progress import progress_bar
from .settings import ApiSettings, SourcesSettings

__version__ = "0.1.0"

__all__ = [
    "ApiSettings",
    "AskRequest",
    "RateLimiterUnavailable",
    "RedisWindowLimiter",
    "RequestLimiter",
    "SlidingWindowLimiter",
    "SourcesSettings",
    "UserDocument",
    "build_request_limiter",
    "progress_bar",
]

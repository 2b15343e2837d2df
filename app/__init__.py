"""CoMeta service layer: settings, CLI, orchestration and (later) the FastAPI app."""

from ._api_models import ApiSettings, AskRequest, SourcesSettings, UserDocument
from ._limits import (
    RateLimiterUnavailable,
    RedisWindowLimiter,
    RequestLimiter,
    SlidingWindowLimiter,
    build_request_limiter,
)
from ._progress import progress_bar

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

"""The service layer: settings, the composition root, the Asker (one question flow), answering and judging,
sources and federation, the HTTP API and the CLI (docs/architecture.md has the map).

The public API is this package's ``__all__``: :class:`Settings`, :class:`Container` (the composition root),
:class:`Asker` (one question flow), :func:`create_app` (the HTTP service) and the parts that the packages
above the app (``eval``, ``bench``) drive directly. The names of heavier modules (the container, the API,
the pipeline, answering and judging) load on first access (:func:`__getattr__`): ``app.api`` imports this
package (a direct import here would be a cycle), and ``import app`` (every ``app.schemas`` import) stays
free of FastAPI and the retrieval stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from app.schemas import AskRequest, UserDocument

from ._limits import (
    RateLimiterUnavailable,
    RedisWindowLimiter,
    RequestLimiter,
    SlidingWindowLimiter,
    build_request_limiter,
)
from ._progress import progress_bar
from .settings import AnswerSettings, ApiSettings, GateSettings, Settings, SourcesSettings

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastapi import FastAPI

    # Typed by shape, not imported: the frontends import this package, and the API sits above them.
    create_app: Callable[..., FastAPI]
    from .answer import (
        WARN_UNPARSEABLE,
        Answerer,
        ChoiceOutput,
        build_evidence_context,
        content_terms,
    )
    from .asker import Asker, user_evidence
    from .container import Container, build_pipeline
    from .factories import build_dense_retriever
    from .frontends import across_response, ask_response
    from .judge import CrossSourceJudge, SourceAnswer, parse_yes_no
    from .pipeline import Pipeline
    from .privacy import PhiPolicy
    from .safety import SafetySettings, assess_safety
    from .trust import EvidenceSignals, assess_evidence, gate_checks

__version__ = "0.1.0"

# Loaded on first access: name -> the module that defines it.
_LAZY = {
    "Answerer": "app.answer",
    "ChoiceOutput": "app.answer",
    "WARN_UNPARSEABLE": "app.answer",
    "build_evidence_context": "app.answer",
    "content_terms": "app.answer",
    "create_app": "app.api",
    "Asker": "app.asker",
    "user_evidence": "app.asker",
    "Container": "app.container",
    "build_pipeline": "app.container",
    "build_dense_retriever": "app.factories",
    "across_response": "app.frontends",
    "ask_response": "app.frontends",
    "EvidenceSignals": "app.trust",
    "assess_evidence": "app.trust",
    "gate_checks": "app.trust",
    "CrossSourceJudge": "app.judge",
    "SourceAnswer": "app.judge",
    "parse_yes_no": "app.judge",
    "Pipeline": "app.pipeline",
    "SafetySettings": "app.safety",
    "assess_safety": "app.safety",
    "PhiPolicy": "app.privacy",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'app' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "WARN_UNPARSEABLE",
    "AnswerSettings",
    "Answerer",
    "ApiSettings",
    "AskRequest",
    "Asker",
    "ChoiceOutput",
    "Container",
    "CrossSourceJudge",
    "EvidenceSignals",
    "GateSettings",
    "PhiPolicy",
    "Pipeline",
    "RateLimiterUnavailable",
    "RedisWindowLimiter",
    "RequestLimiter",
    "SafetySettings",
    "Settings",
    "SlidingWindowLimiter",
    "SourceAnswer",
    "SourcesSettings",
    "UserDocument",
    "across_response",
    "ask_response",
    "assess_evidence",
    "assess_safety",
    "build_dense_retriever",
    "build_evidence_context",
    "build_pipeline",
    "build_request_limiter",
    "content_terms",
    "create_app",
    "gate_checks",
    "parse_yes_no",
    "progress_bar",
    "user_evidence",
]

"""A scripted OpenAI-compatible chat server for end-to-end suite runs: replies by model and prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests._fakes import completion_body

__all__ = ["FakeOpenAI"]


class FakeOpenAI:
    """``reply(model, prompt) -> content``; every request is kept as ``(model, prompt)``."""

    def __init__(self, reply: Callable[[str, str], str]) -> None:
        self.calls: list[tuple[str, str]] = []

        async def chat(request: Request) -> Response:
            body: dict[str, Any] = await request.json()
            prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            model = str(body.get("model"))
            self.calls.append((model, prompt))
            content = reply(model, prompt)
            return JSONResponse(completion_body(content, model=model))

        self.app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])

    def models(self) -> list[str]:
        return [m for m, _ in self.calls]

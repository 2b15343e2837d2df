"""``/mcp``: the MCP tools (:mod:`app.frontends`) over streamable HTTP, behind the API's key check and
rate limit (``X-API-Key`` or ``Authorization: Bearer``).

Stateless: every request is its own MCP session (the tools keep no state), so any replica can answer any
request. The SDK's session manager needs a running task group: :func:`mcp_router` returns, beside the
router, the context the lifespan enters."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import APIRouter
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.container import Container
from app.frontends import build_mcp_server
from app.settings import ApiSettings

from ._deps import ApiError, _request_id, bearer_caller, send_error


class _McpEndpoint:
    """Raw ASGI (the SDK writes the response itself): the key check, then the session manager."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            await bearer_caller(request)
        except ApiError as exc:
            await send_error(send, exc, _request_id(request))
            return
        await self.manager.handle_request(scope, receive, send)


# Tools that run no retrieval, answered without an admission slot; every other tool call takes one, so a
# new tool is guarded until it is named here.
_FREE_TOOLS = frozenset({"list_collections"})


def asks_question(body: bytes) -> bool:
    """Whether an ``/mcp`` request body calls a tool that runs retrieval (``ask``, ``search_literature``,
    ``get_article``); ``initialize``, ``tools/list`` and the like do not. A body this cannot read counts
    as a question: the SDK's parser is not this one, so doubt takes a slot rather than skipping it."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return True
    messages = parsed if isinstance(parsed, list) else [parsed]
    for message in messages:
        if not isinstance(message, dict):
            return True
        if message.get("method") == "tools/call":
            params = message.get("params")
            if not isinstance(params, dict) or params.get("name") not in _FREE_TOOLS:
                return True
    return False


def mcp_router(
    api: ApiSettings, container: Callable[[], Container]
) -> tuple[APIRouter, Callable[[], AbstractAsyncContextManager[None]]]:
    """The MCP router (``/mcp``, raw ASGI: no OpenAPI entry) over the tools on ``container`` (the app's,
    once its lifespan started), and the session manager's ``run`` for the lifespan."""
    server = build_mcp_server(container)
    hosts = api.mcp_allowed_hosts
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=bool(hosts),
        allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")],
    )
    server.streamable_http_app(  # builds the server's session manager; its Starlette app is not used
        json_response=True,
        stateless_http=True,
        transport_security=security,
        max_request_body_size=api.max_body_bytes,
    )
    manager = server.session_manager
    router = APIRouter(tags=["mcp"])
    router.routes.append(Route("/mcp", endpoint=_McpEndpoint(manager), methods=["GET", "POST", "DELETE"]))

    @asynccontextmanager
    async def running() -> AsyncIterator[None]:
        # The manager's task group must be entered and left by one task; a lifespan may be entered and
        # left by two (test fixtures do), so a task of its own holds it for the app's lifetime.
        started, stop = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            async with manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(hold())
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():  # it failed to start: say why
            waiter.cancel()
            task.result()
        try:
            yield
        finally:
            stop.set()
            await task

    return router, running

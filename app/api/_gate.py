"""The ASGI gate in front of every route: request ids, the body limit, metrics, the PHI-free access log
and the last-resort 500."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.settings import Settings

from ._deps import (
    API_LATENCY,
    API_REJECTED,
    API_REQUESTS,
    ApiError,
    _log_failure,
    send_error,
)

log = logging.getLogger("cometa.api")


_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


# --- middleware: request ids, body limit, metrics, access log, last-resort 500 --------------------------


class _BodyTooLarge(Exception):
    pass


class _BodyTimeout(Exception):
    """The body did not arrive within ``ApiSettings.body_timeout_s``: 408 (:func:`late_body`)."""


def late_body(timeout_s: float) -> ApiError:
    API_REJECTED.labels("body_timeout").inc()
    return ApiError(408, "request timeout", f"the body did not arrive within {timeout_s:g} s")


async def read_body(receive: Receive, *, max_bytes: int, timeout_s: float) -> bytes | None:
    """The whole request body, within ``timeout_s`` in all (a client dripping one byte at a time gets no
    more), at most ``max_bytes``; None when the client went away first."""
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return None
                chunks.append(message.get("body", b""))
                size += len(chunks[-1])
                if size > max_bytes:
                    raise _BodyTooLarge
                if not message.get("more_body", False):
                    return b"".join(chunks)
    except TimeoutError:
        raise _BodyTimeout from None


def replayed(body: bytes, receive: Receive) -> Receive:
    """``receive`` for a body already read: the body once, then the connection's own messages (a
    disconnect), which streaming responses watch for."""
    replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive_replayed() -> Message:
        return replay.pop() if replay else await receive()

    return receive_replayed


class _Gate:
    """Pure ASGI (so it wraps streaming responses too): runs outside routing and every handler."""

    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, body_timeout_s: float, settings: Settings
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get("x-request-id", "")
        request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status = {"code": 500, "sent": False}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                status["sent"] = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            length = headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
                raise _BodyTooLarge  # refused before a byte of the body is read
            if length is None and scope["method"] in {"POST", "PUT", "PATCH"}:
                # Chunked: counted while read, then replayed.
                body = await read_body(receive, max_bytes=self.max_body_bytes, timeout_s=self.body_timeout_s)
                if body is None:
                    status["code"] = 499  # the client went away: nothing to answer
                    return
                receive = replayed(body, receive)
            await self.app(scope, receive, send_wrapper)
        except _BodyTooLarge:
            API_REJECTED.labels("body_too_large").inc()
            if not status["sent"]:
                too_large = ApiError(413, "request too large", f"body exceeds {self.max_body_bytes} bytes")
                await send_error(send_wrapper, too_large, request_id)
        except _BodyTimeout:
            if not status["sent"]:
                await send_error(send_wrapper, late_body(self.body_timeout_s), request_id)
        except Exception as exc:
            _log_failure(exc, request_id, self.settings)
            if not status["sent"]:
                await send_error(send_wrapper, exc, request_id)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            elapsed = time.perf_counter() - started
            API_REQUESTS.labels(template, scope["method"], str(status["code"])).inc()
            API_LATENCY.labels(template).observe(elapsed)
            log.info(
                json.dumps(
                    {
                        "event": "request",
                        "request_id": request_id,
                        "method": scope["method"],
                        "route": template,
                        "status": status["code"],
                        "ms": round(elapsed * 1000, 1),
                    }
                )
            )

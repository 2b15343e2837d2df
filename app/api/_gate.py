"""The ASGI gate in front of every route: request ids, the body limit, metrics, the PHI-free access log
and the last-resort 500."""

from __future__ import annotations

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


class _Gate:
    """Pure ASGI (so it wraps streaming responses too): runs outside routing and every handler."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, settings: Settings) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
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
                receive = await self._buffered(receive)  # chunked: count while reading, then replay
            await self.app(scope, receive, send_wrapper)
        except _BodyTooLarge:
            API_REJECTED.labels("body_too_large").inc()
            if not status["sent"]:
                too_large = ApiError(413, "request too large", f"body exceeds {self.max_body_bytes} bytes")
                await send_error(send_wrapper, too_large, request_id)
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

    async def _buffered(self, receive: Receive) -> Receive:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                raise _BodyTooLarge
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def receive_replayed() -> Message:
            return replay.pop() if replay else await receive()

        return receive_replayed

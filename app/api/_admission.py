"""Bounded admission in front of every route that runs the question flow: a fast 503 with ``Retry-After``
when saturated, and one deadline per admitted question.

Every question costs seconds of CPU (encoders, rerank) on a handful of cores; admitting all of them only makes
every one of them slow (50 clients on 2 cores: 10.8 s p50, 18 s p95). So at most ``max_in_flight`` questions
run at once, at most ``max_queue`` more wait (each at most ``queue_timeout_s``), and anything beyond is
refused at once with ``503`` and a ``Retry-After`` estimated from recent service times: the client learns in
milliseconds that it should come back, instead of waiting in a queue that only grows.

One gate, one set of slots for ``/ask``, ``/ask/stream``, ``/search``, ``/collections/search``,
``/v1/chat/completions`` and the ``/mcp`` tool calls that retrieve (issue 27, finding 6). Only a request
that could run is admitted: its caller is checked (key, rate limit) and its whole body read (within
``body_timeout_s``, else 408) before it may take a slot, so a client without a key, or one that never
finishes its body, holds none (finding 2). An admitted question's E-utilities calls all end within
``question_deadline_s`` (finding 13).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from prometheus_client import Gauge
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from app.settings import ApiSettings, Settings
from retrieval.eutils import effective_rate, question_deadline

from ._deps import API_REJECTED, ApiError, Refusal, api_key_caller, api_refusal, bearer_caller, send_json
from ._gate import _BodyTimeout, late_body, read_body, replayed
from ._mcp import asks_question
from ._openai import openai_refusal

__all__ = ["QUESTION_ROUTES", "Admission", "AdmissionGate", "Guard", "admission_slots"]

ADMISSION_IN_FLIGHT = Gauge("cometa_api_admission_in_flight", "Questions being answered now")
ADMISSION_WAITING = Gauge("cometa_api_admission_waiting", "Questions waiting for a free slot")


def _always(body: bytes) -> bool:
    return True


@dataclass(frozen=True)
class Guard:
    """A ``POST`` route that runs the question flow: its own caller check (key, rate limit; it raises
    :class:`ApiError`), the shape its refusals take, and whether a body asks a question at all (an MCP
    ``tools/list`` does not)."""

    check_caller: Callable[[Request], Awaitable[object]]
    refusal: Callable[[BaseException, str | None], Refusal] = api_refusal
    asks: Callable[[bytes], bool] = _always


_API = Guard(api_key_caller)
QUESTION_ROUTES: Mapping[str, Guard] = {
    "/ask": _API,
    "/ask/stream": _API,
    "/search": _API,
    "/collections/search": _API,
    "/v1/chat/completions": Guard(bearer_caller, refusal=openai_refusal),
    "/mcp": Guard(bearer_caller, asks=asks_question),
}


def admission_slots(settings: Settings) -> int:
    """Questions answered at once: ``api.admission_max_in_flight`` (the CPU bound), raised with live
    E-utilities to ``ceil(NCBI rate x api.admission_in_flight_per_rate_s)``, at most
    ``api.admission_rate_raise_max`` times the CPU bound.

    A question makes ~3 E-utilities calls one after the other, each ~0.3 s of NCBI latency in which it uses no
    CPU; to keep NCBI's rate busy, rate x latency calls must be in flight (Little's law), and a question has
    at most one in flight most of the time. With 4 at 10 req/s the budget idled while every admitted
    question waited on an answer (docs/history/performance-notes.md, the throughput timeline). 0 stays "no
    bound"."""
    api = settings.api
    if api.admission_max_in_flight <= 0 or settings.eutils.backend != "http":
        return api.admission_max_in_flight
    eutils = settings.eutils
    key = eutils.api_key.get_secret_value() if eutils.api_key else None
    rate = effective_rate(key, eutils.requests_per_second, 1.0)
    raised = math.ceil(rate * api.admission_in_flight_per_rate_s)
    # Capped: CPU work per question does not shrink with a larger configured rate.
    cap = math.floor(api.admission_max_in_flight * api.admission_rate_raise_max)
    return max(api.admission_max_in_flight, min(raised, cap))


class Admission:
    """The bounded queue: ``max_in_flight`` slots, ``max_queue`` waiting places, a wait bound per request.

    Single event loop, so the counters need no lock; a slot freed by one request is handed to the longest
    waiting one (asyncio's semaphore is FIFO).
    """

    def __init__(self, max_in_flight: int, max_queue: int, queue_timeout_s: float) -> None:
        self.max_in_flight = max_in_flight
        self.max_queue = max_queue
        self.queue_timeout_s = queue_timeout_s
        self._slots = asyncio.Semaphore(max_in_flight) if max_in_flight > 0 else None
        self.in_flight = 0
        self.waiting = 0
        self._service_s = 1.0  # moving average of one admitted request's time, for Retry-After

    @property
    def enabled(self) -> bool:
        return self._slots is not None

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the queue ahead, served ``max_in_flight`` at a time."""
        ahead = self.waiting + 1
        rounds = ahead / max(1, self.max_in_flight)
        return max(1, min(120, math.ceil(rounds * self._service_s)))

    async def acquire(self) -> str | None:
        """None when admitted (call :meth:`release` after), else why not (``saturated``/``queue_timeout``)."""
        assert self._slots is not None
        if self.in_flight < self.max_in_flight and not self.waiting:
            await self._slots.acquire()  # a free slot: does not block
        else:
            if self.waiting >= self.max_queue:
                return "saturated"
            self.waiting += 1
            ADMISSION_WAITING.set(self.waiting)
            try:
                await asyncio.wait_for(self._slots.acquire(), timeout=self.queue_timeout_s)
            except TimeoutError:
                return "queue_timeout"
            finally:
                self.waiting -= 1
                ADMISSION_WAITING.set(self.waiting)
        self.in_flight += 1
        ADMISSION_IN_FLIGHT.set(self.in_flight)
        return None

    def release(self, seconds: float) -> None:
        assert self._slots is not None
        self.in_flight -= 1
        ADMISSION_IN_FLIGHT.set(self.in_flight)
        self._service_s = 0.8 * self._service_s + 0.2 * max(0.0, seconds)
        self._slots.release()


class AdmissionGate:
    """Pure ASGI middleware (it must span a streamed body too) in front of :data:`QUESTION_ROUTES`: the
    caller checked, the body read, then a slot, held until the response (its stream too) is complete."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: ApiSettings,
        routes: Mapping[str, Guard] = QUESTION_ROUTES,
        max_in_flight: int | None = None,
    ) -> None:
        self.app = app
        in_flight = settings.admission_max_in_flight if max_in_flight is None else max_in_flight
        self.admission = Admission(
            in_flight, settings.admission_max_queue, settings.admission_queue_timeout_s
        )
        self.routes = dict(routes)
        self.max_body_bytes = settings.max_body_bytes
        self.body_timeout_s = settings.body_timeout_s
        self.deadline_s = settings.question_deadline_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = None
        if scope["type"] == "http" and scope["method"] == "POST":
            guard = self.routes.get(scope["path"].rstrip("/"))
        if guard is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            await guard.check_caller(request)  # headers only: a refused caller never sends its body here
            body = await read_body(receive, max_bytes=self.max_body_bytes, timeout_s=self.body_timeout_s)
        except ApiError as exc:  # the check counted its refusal
            await self._send(send, guard, exc, scope)
            return
        except _BodyTimeout:
            await self._send(send, guard, late_body(self.body_timeout_s), scope)
            return
        if body is None:
            return  # the client went away before its body was in
        receive = replayed(body, receive)
        if not guard.asks(body):
            await self.app(scope, receive, send)
            return
        bounded = self.admission.enabled
        refused = await self.admission.acquire() if bounded else None
        if refused is not None:
            API_REJECTED.labels(refused).inc()
            await self._send(send, guard, self._saturated(refused), scope)
            return
        started = time.perf_counter()
        try:
            with question_deadline(self.deadline_s):  # from admission: the queue wait is not NCBI's
                await self.app(scope, receive, send)
        finally:
            if bounded:
                self.admission.release(time.perf_counter() - started)

    async def _send(self, send: Send, guard: Guard, exc: ApiError, scope: Scope) -> None:
        await send_json(send, *guard.refusal(exc, scope.get("state", {}).get("request_id")))

    def _saturated(self, why: str) -> ApiError:
        a = self.admission
        retry = a.retry_after()
        reason = (
            f"{a.in_flight} questions in progress and {a.waiting} waiting (the bounds are "
            f"{a.max_in_flight} and {a.max_queue}); retry in {retry} s"
            if why == "saturated"
            else f"no free slot within {a.queue_timeout_s:g} s; retry in {retry} s"
        )
        return ApiError(503, "service saturated", reason, headers={"retry-after": str(retry)})

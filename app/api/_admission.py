"""Bounded admission in front of ``/ask`` and ``/ask/stream``: a fast 503 with ``Retry-After`` when saturated.

Every question costs seconds of CPU (encoders, rerank) on a handful of cores; admitting all of them only makes
every one of them slow (50 clients on 2 cores: 10.8 s p50, 18 s p95). So at most ``max_in_flight`` questions
run at once, at most ``max_queue`` more wait (each at most ``queue_timeout_s``), and anything beyond is
refused at once with ``503`` and a ``Retry-After`` estimated from recent service times: the client learns in
milliseconds that it should come back, instead of waiting in a queue that only grows.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterable

from prometheus_client import Gauge
from starlette.types import ASGIApp, Receive, Scope, Send

from app.settings import ApiSettings, Settings
from retrieval.eutils import effective_rate

from ._deps import API_REJECTED, ApiError, send_error

__all__ = ["Admission", "AdmissionGate", "admission_slots"]

ADMISSION_IN_FLIGHT = Gauge("cometa_api_admission_in_flight", "Questions being answered now")
ADMISSION_WAITING = Gauge("cometa_api_admission_waiting", "Questions waiting for a free slot")

_GUARDED = frozenset({"/ask", "/ask/stream"})


def admission_slots(settings: Settings) -> int:
    """Questions answered at once: ``api.admission_max_in_flight`` (the CPU bound), raised with live
    E-utilities to ``ceil(NCBI rate x api.admission_in_flight_per_rate_s)``, at most
    ``api.admission_rate_raise_max`` times the CPU bound.

    A question makes ~3 E-utilities calls one after the other, each ~0.3 s of NCBI latency in which it uses no
    CPU; to keep NCBI's rate busy, rate x latency calls must be in flight (Little's law), and a question has
    at most one in flight most of the time. With 4 at 10 req/s the budget idled while every admitted
    question waited on an answer (docs/performance.md, the throughput timeline). 0 stays "no bound"."""
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
    """Pure ASGI middleware (it must span a streamed body too) guarding ``POST /ask`` and ``/ask/stream``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: ApiSettings,
        paths: Iterable[str] = _GUARDED,
        max_in_flight: int | None = None,
    ) -> None:
        self.app = app
        in_flight = settings.admission_max_in_flight if max_in_flight is None else max_in_flight
        self.admission = Admission(
            in_flight, settings.admission_max_queue, settings.admission_queue_timeout_s
        )
        self.paths = frozenset(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        guarded = (
            self.admission.enabled
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"].rstrip("/") in self.paths
        )
        if not guarded:
            await self.app(scope, receive, send)
            return
        refused = await self.admission.acquire()
        if refused is not None:
            API_REJECTED.labels(refused).inc()
            await self._refuse(scope, send, refused)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.admission.release(time.perf_counter() - started)

    async def _refuse(self, scope: Scope, send: Send, why: str) -> None:
        a = self.admission
        retry = a.retry_after()
        reason = (
            f"{a.in_flight} questions in progress and {a.waiting} waiting (the bounds are "
            f"{a.max_in_flight} and {a.max_queue}); retry in {retry} s"
            if why == "saturated"
            else f"no free slot within {a.queue_timeout_s:g} s; retry in {retry} s"
        )
        refusal = ApiError(503, "service saturated", reason, headers={"retry-after": str(retry)})
        await send_error(send, refusal, scope.get("state", {}).get("request_id"))

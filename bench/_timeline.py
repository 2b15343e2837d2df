"""A timeline of E-utilities calls for ``bench/throughput.py --timeline``: where the rate budget goes.

Observers only (they call the real objects unchanged): a limiter wrapper records each wait for a send slot, an
httpx transport wrapper records each HTTP exchange (start, end, status), the client's retry sleep is recorded,
and the pipeline's CPU stages (Understand, dense arm, local tier check, passages) are wrapped per question.

:meth:`Timeline.analyse` then splits the run's wall time against the rate bound ``calls / rate``: the head
(first question in to first call out), the tail (last call out to last answer), and, between consecutive
sends, every gap longer than ``1 / rate`` (budget left idle). Each idle millisecond is attributed to what
the questions in flight were doing then: waiting in the client limiter for a slot (the limiter held back a
ready call), in a retry backoff, waiting on an HTTP response, in a CPU stage, or no question at all (the
slots the sample has run out of at the end).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["Span", "Timeline"]

_QUESTION: ContextVar[int | None] = ContextVar("bench_timeline_question", default=None)

# A question's state at an instant, most specific first: a question waiting on a call is "in a call" even
# while an enclosing stage span (e.g. passages) is open.
_PRIORITY = ("call", "limiter", "retry_sleep", "understand", "dense", "tier_check", "passages")


@dataclass
class Span:
    kind: str  # question, call, limiter, retry_sleep, understand, dense, tier_check, passages
    start: float
    end: float
    question: int | None
    detail: str = ""  # call: "endpoint status"


@dataclass
class Timeline:
    spans: list[Span] = field(default_factory=list)
    slots: int = 0  # questions in flight at most (the bench's semaphore)

    def record(self, kind: str, start: float, detail: str = "") -> None:
        self.spans.append(Span(kind, start, time.perf_counter(), _QUESTION.get(), detail))

    @contextmanager
    def question(self, n: int) -> Iterator[None]:
        token = _QUESTION.set(n)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record("question", start)
            _QUESTION.reset(token)

    # ---- hooks -----------------------------------------------------------------------------------------

    def limiter(self, inner: Any) -> Any:
        timeline = self

        class RecordingLimiter:
            async def acquire(self, api_key: str | None, rate: float, burst: int = 1) -> None:
                start = time.perf_counter()
                try:
                    await inner.acquire(api_key, rate, burst)
                finally:
                    timeline.record("limiter", start)

            async def pause(self, api_key: str | None, rate: float, burst: int, seconds: float) -> None:
                await inner.pause(api_key, rate, burst, seconds)

            async def aclose(self) -> None:
                await inner.aclose()

        return RecordingLimiter()

    def transport(self, inner: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
        timeline = self

        class RecordingTransport(httpx.AsyncBaseTransport):
            async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
                start = time.perf_counter()
                endpoint = request.url.path.rsplit("/", 1)[-1].removesuffix(".fcgi")
                status = "error"
                try:
                    response = await inner.handle_async_request(request)
                    await response.aread()  # the exchange ends when the body is in, as the client sees it
                    status = str(response.status_code)
                    return response
                finally:
                    timeline.record("call", start, f"{endpoint} {status}")

            async def aclose(self) -> None:
                await inner.aclose()

        return RecordingTransport()

    def sleep(self, real: Callable[[float], Awaitable[None]]) -> Callable[[float], Awaitable[None]]:
        async def recording_sleep(seconds: float) -> None:
            start = time.perf_counter()
            try:
                await real(seconds)
            finally:
                self.record("retry_sleep", start)

        return recording_sleep

    def wrap_async(self, obj: Any, name: str, kind: str) -> None:
        method = getattr(obj, name)

        async def wrapped(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                self.record(kind, start)

        setattr(obj, name, wrapped)

    def wrap_sync(self, obj: Any, name: str, kind: str) -> None:
        method = getattr(obj, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.record(kind, start)

        setattr(obj, name, wrapped)

    # ---- analysis --------------------------------------------------------------------------------------

    def analyse(self, rate: float, step_s: float = 0.001) -> dict[str, Any]:
        """Wall time against the bound, what the question slots did while no call waited for the limiter,
        429s and the busiest 1-second window."""
        slots = self.slots
        questions = [s for s in self.spans if s.kind == "question"]
        calls = sorted((s for s in self.spans if s.kind == "call"), key=lambda s: s.start)
        if not questions or not calls:
            return {}
        t0 = min(s.start for s in questions)
        t1 = max(s.end for s in questions)
        statuses = Counter(c.detail.split()[-1] for c in calls)
        ok = sum(1 for c in calls if c.detail.endswith(" 200"))
        sends = [c.start for c in calls]
        interval = 1.0 / rate
        idle = sum(max(0.0, b - a - interval) for a, b in itertools.pairwise(sends))
        waiting = 0.0
        no_wait: dict[str, float] = {}
        t = t0
        while t < t1:
            states = self._states(t, slots)
            if states.pop("limiter", 0.0) > 0:  # some call waits for a slot: the budget is what binds
                waiting += step_s
            else:
                total = sum(states.values())
                for state, share in states.items():
                    no_wait[state] = no_wait.get(state, 0.0) + (share / total * step_s if total else 0.0)
            t += step_s
        busiest = max(sum(1 for s in sends if a <= s < a + 1.0) for a in sends)
        return {
            "wall_s": t1 - t0,
            "bound_s": ok / rate,
            "head_s": sends[0] - t0,
            "tail_s": t1 - sends[-1],
            "sends": len(calls),
            "ok": ok,
            "statuses": dict(statuses),
            "limiter_bound_s": waiting,
            "no_wait": dict(sorted(no_wait.items(), key=lambda kv: -kv[1])),
            "idle_s": idle,
            "limiter_wait_s": sum(s.end - s.start for s in self.spans if s.kind == "limiter"),
            "retry_sleep_s": sum(s.end - s.start for s in self.spans if s.kind == "retry_sleep"),
            "busiest_1s_sends": busiest,
            "call_latency_ms_mean": 1000 * sum(c.end - c.start for c in calls) / len(calls),
        }

    def _states(self, t: float, slots: int) -> dict[str, float]:
        """Each question slot's state at ``t`` (shares summing to 1): the questions open then, plus empty
        slots as "no question"; "limiter" is present (share > 0) whenever any call waits for a slot."""
        by_question: dict[int, set[str]] = {}
        for s in self.spans:
            if s.question is not None and s.start <= t < s.end:
                by_question.setdefault(s.question, set()).add(s.kind)
        states: Counter[str] = Counter()
        for kinds in by_question.values():
            if "question" not in kinds:
                continue
            if "limiter" in kinds:
                states["limiter"] += 1
                continue
            state = next((k for k in _PRIORITY if k in kinds), "other (parse, fuse, evidence, loop)")
            states[state] += 1
        states["no question (end of the sample)"] += max(0, slots - sum(states.values()))
        total = sum(states.values())
        return {k: v / total for k, v in states.items()}

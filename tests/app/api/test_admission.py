"""Bounded admission: slots, a bounded wait, fast 503 + Retry-After beyond, other routes untouched."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from app.api._admission import AdmissionGate, Guard
from app.settings import ApiSettings


async def anyone(request: Request) -> None:
    """A caller check that admits everyone: these tests are about the queue, not the keys."""


OPEN_ROUTES = {"/ask": Guard(anyone), "/ask/stream": Guard(anyone)}


def guarded_app(
    release: asyncio.Event, running: list[int], **bounds: float
) -> tuple[AdmissionGate, Starlette]:
    async def ask(request: Request) -> JSONResponse:
        running.append(1)
        await release.wait()
        return JSONResponse({"ok": True})

    async def stream(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b"event: stage\n\n"
            await release.wait()  # the slot is held while the body streams
            yield b"event: done\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    inner = Starlette(
        routes=[
            Route("/ask", ask, methods=["POST"]),
            Route("/ask/stream", stream, methods=["POST"]),
            Route("/healthz", health),
        ]
    )
    settings = ApiSettings(
        admission_max_in_flight=int(bounds.get("in_flight", 2)),
        admission_max_queue=int(bounds.get("queue", 2)),
        admission_queue_timeout_s=bounds.get("timeout", 5.0),
    )
    gate = AdmissionGate(inner, settings=settings, routes=OPEN_ROUTES)
    return gate, inner


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(500):  # polls the gate's counters: nothing to wait on but time
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


async def test_saturation_is_refused_fast_with_retry_after_and_queued_requests_are_served() -> None:
    release = asyncio.Event()
    running: list[int] = []
    gate, _ = guarded_app(release, running, in_flight=2, queue=2)
    transport = httpx.ASGITransport(app=gate)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        first = [asyncio.create_task(http.post("/ask", json={})) for _ in range(4)]  # 2 run, 2 wait
        await until(lambda: len(running) == 2 and gate.admission.waiting == 2)
        t0 = time.perf_counter()
        refused = await http.post("/ask", json={})
        assert time.perf_counter() - t0 < 1.0  # refused at once, not after the queue
        assert refused.status_code == 503
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.json()["error"] == "service saturated"
        assert (await http.get("/healthz")).status_code == 200  # other routes are never queued
        release.set()
        done = await asyncio.gather(*first)
    assert [r.status_code for r in done] == [200] * 4
    assert len(running) == 4 and gate.admission.in_flight == 0 and gate.admission.waiting == 0


async def test_a_wait_longer_than_the_bound_is_refused_and_a_stream_holds_its_slot() -> None:
    release = asyncio.Event()
    gate, _ = guarded_app(release, [], in_flight=1, queue=4, timeout=0.2)
    transport = httpx.ASGITransport(app=gate)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        stream = asyncio.create_task(http.post("/ask/stream", json={}))
        await until(lambda: gate.admission.in_flight == 1)
        waited = await http.post("/ask", json={})
        assert waited.status_code == 503 and "within 0.2 s" in waited.json()["reason"]
        assert waited.headers["retry-after"].isdigit()
        release.set()
        assert (await stream).status_code == 200
        assert (await http.post("/ask", json={})).status_code == 200  # the slot came back
    assert gate.admission.in_flight == 0


async def test_zero_in_flight_turns_admission_off() -> None:
    release = asyncio.Event()
    release.set()
    gate, _ = guarded_app(release, [], in_flight=0, queue=0)
    assert not gate.admission.enabled
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://t") as http:
        results = await asyncio.gather(*(http.post("/ask", json={}) for _ in range(10)))
    assert {r.status_code for r in results} == {200}


async def test_raw_asgi_refusals_use_the_api_error_body() -> None:
    # The gate, admission control and /mcp answer outside FastAPI's handlers through one builder.
    from starlette.types import Message

    from app.api._deps import ApiError, send_error

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    refusal = ApiError(503, "service saturated", "busy", headers={"Retry-After": "3"})
    await send_error(send, refusal, "rid-1")
    start, body = sent
    headers = dict(start["headers"])
    assert start["status"] == 503 and headers[b"retry-after"] == b"3"
    assert json.loads(body["body"]) == {"error": "service saturated", "reason": "busy", "request_id": "rid-1"}
    assert headers[b"content-length"] == str(len(body["body"])).encode()


def test_admission_slots_are_sized_for_the_ncbi_rate_with_live_eutils() -> None:
    from pydantic import SecretStr

    from app.api import admission_slots
    from app.settings import Settings

    base = Settings()
    live = base.model_copy(update={"eutils": base.eutils.model_copy(update={"backend": "http"})})
    keyed = live.model_copy(
        update={
            "eutils": live.eutils.model_copy(update={"api_key": SecretStr("K"), "requests_per_second": None})
        }
    )
    assert (
        admission_slots(live.model_copy(update={"eutils": live.eutils.model_copy(update={"api_key": None})}))
        == 4
    )
    assert admission_slots(keyed) == 6  # ceil(10 req/s x 0.6 s): enough questions to keep NCBI's rate busy
    fast = keyed.model_copy(update={"eutils": keyed.eutils.model_copy(update={"requests_per_second": 20.0})})
    assert admission_slots(fast) == 12
    # A huge configured rate does not remove the CPU bound: at most 4 x admission_max_in_flight (16).
    huge = keyed.model_copy(update={"eutils": keyed.eutils.model_copy(update={"requests_per_second": 1e6})})
    assert admission_slots(huge) == 16
    tight = huge.model_copy(update={"api": huge.api.model_copy(update={"admission_rate_raise_max": 1.5})})
    assert admission_slots(tight) == 6
    off = keyed.model_copy(
        update={"api": keyed.api.model_copy(update={"admission_in_flight_per_rate_s": 0.0})}
    )
    assert admission_slots(off) == 4
    unbounded = keyed.model_copy(update={"api": keyed.api.model_copy(update={"admission_max_in_flight": 0})})
    assert admission_slots(unbounded) == 0  # "no bound" stays no bound
    # Offline (the in-process corpus) nothing waits on NCBI: the CPU bound alone.
    assert admission_slots(base.offline()) == base.api.admission_max_in_flight


async def test_gate_takes_the_sized_bound() -> None:
    gate = AdmissionGate(Starlette(), settings=ApiSettings(admission_max_in_flight=4), max_in_flight=6)
    assert gate.admission.max_in_flight == 6

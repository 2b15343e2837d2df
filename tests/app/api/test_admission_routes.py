"""Admission over the whole app (issue 27): every route that runs the question flow shares one set of
slots (finding 6); a caller without a valid key, or one that never finishes its body, holds none
(finding 2); an admitted question waits on a hung NCBI no longer than its deadline (finding 13)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from pydantic import SecretStr
from starlette.types import Message

from app.api import create_app
from app.api._admission import AdmissionGate
from app.container import build_pipeline
from app.pipeline import Pipeline
from app.settings import ApiSettings, Settings
from retrieval.eutils import EutilsClient, EutilsSettings
from tests._fakes import boolean_only_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "Does the Whipple procedure help patients with pancreatic cancer?"
KEY = "k-admission-test"
BASE = "http://localhost:8000"  # a host /mcp answers (DNS-rebinding protection)


def rpc(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


CHAT = {"model": "cometa", "messages": [{"role": "user", "content": QUESTION}]}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
# Every route that runs the question flow, with a body that asks QUESTION.
QUESTION_ROUTES: dict[str, tuple[str, dict[str, Any]]] = {
    "ask": ("/ask", {"question": QUESTION}),
    "ask_stream": ("/ask/stream", {"question": QUESTION}),
    "search": ("/search", {"question": QUESTION}),
    "collections_search": ("/collections/search", {"question": QUESTION, "collections": ["handbook"]}),
    "chat": ("/v1/chat/completions", CHAT),
    "chat_stream": ("/v1/chat/completions", {**CHAT, "stream": True}),
    "mcp_ask": ("/mcp", rpc("ask", {"question": QUESTION})),
    "mcp_search": ("/mcp", rpc("search_literature", {"question": QUESTION})),
}


@pytest.fixture(scope="module")
def settings() -> Settings:
    return boolean_only_settings()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pipeline(settings: Settings) -> AsyncIterator[Pipeline]:
    async with build_pipeline(settings, use_llm=False, use_dense=False, use_passages=False) as p:
        yield p


@asynccontextmanager
async def serve(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
            yield client


def gate_of(app: FastAPI) -> AdmissionGate:
    if app.middleware_stack is None:  # built on the first request otherwise, as Starlette does
        app.middleware_stack = app.build_middleware_stack()
    layer: Any = app.middleware_stack
    while not isinstance(layer, AdmissionGate):
        layer = layer.app
    return layer


class Hold:
    """Wraps a coroutine function so that every call waits for :attr:`release`, counting how many wait."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.inside = 0
        self.peak = 0

    def wrap(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def held(*args: Any, **kwargs: Any) -> Any:
            self.inside += 1
            self.peak = max(self.peak, self.inside)
            try:
                await self.release.wait()
            finally:
                self.inside -= 1
            return await fn(*args, **kwargs)

        return held


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):  # polls counters: nothing to wait on but time
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


# --- finding 6: one gate for every route that runs the question flow ----------------------------------


@pytest.mark.parametrize("route", sorted(QUESTION_ROUTES))
async def test_every_question_route_shares_the_bounded_slots(
    route: str, settings: Settings, pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, body = QUESTION_ROUTES[route]
    api = ApiSettings(rate_limit_per_minute=0, admission_max_in_flight=2, admission_max_queue=0)
    app = create_app(settings, api_settings=api, pipeline=pipeline)
    hold = Hold()
    # Where each route's work starts: understanding (the Asker's flow and /search) or a collection.
    monkeypatch.setattr(pipeline.understander, "understand", hold.wrap(pipeline.understander.understand))
    async with serve(app) as http:
        service = app.state.sources
        monkeypatch.setattr(service, "search_collection", hold.wrap(service.search_collection))
        headers = MCP_HEADERS if path == "/mcp" else {}
        calls = [asyncio.create_task(http.post(path, json=body, headers=headers)) for _ in range(4)]
        await until(lambda: hold.inside == 2 and sum(c.done() for c in calls) == 2)
        refused = [c.result() for c in calls if c.done()]
        waiting = [c for c in calls if not c.done()]
        hold.release.set()
        answered = [await c for c in waiting]
        gate = gate_of(app)
    assert [r.status_code for r in refused] == [503, 503], [r.text for r in refused]
    for r in refused:
        assert int(r.headers["retry-after"]) >= 1
        error = r.json()["error"]
        # Each route's own error shape: OpenAI's on the chat route, the API's elsewhere.
        assert (
            error["code"] == "service_unavailable"
            if path.startswith("/v1/")
            else error == "service saturated"
        )
    assert [r.status_code for r in answered] == [200, 200], [r.text for r in answered]
    assert hold.peak == 2 and gate.admission.in_flight == 0


async def test_mcp_calls_that_ask_nothing_take_no_slot(settings: Settings, pipeline: Pipeline) -> None:
    api = ApiSettings(rate_limit_per_minute=0, admission_max_in_flight=1, admission_max_queue=0)
    app = create_app(settings, api_settings=api, pipeline=pipeline)
    async with serve(app) as http:
        gate = gate_of(app)
        await gate.admission.acquire()  # the one slot is busy
        listed = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=MCP_HEADERS
        )
        collections = await http.post("/mcp", json=rpc("list_collections", {}), headers=MCP_HEADERS)
        asked = await http.post("/mcp", json=rpc("get_article", {"pmid": "1"}), headers=MCP_HEADERS)
        unreadable = await http.post("/mcp", content=b"[" * 5000, headers=MCP_HEADERS)
        gate.admission.release(0.0)
    assert listed.status_code == 200 and "search_literature" in listed.text
    assert collections.status_code == 200
    assert asked.status_code == 503 and unreadable.status_code == 503  # retrieval, or doubt: a slot


async def test_the_free_mcp_tools_exist() -> None:
    from app.api._mcp import _FREE_TOOLS
    from app.frontends import build_mcp_server

    server = build_mcp_server(lambda: None)  # type: ignore[arg-type,return-value]
    names = {t.name for t in await server.list_tools()}
    assert _FREE_TOOLS < names and {"ask", "search_literature"} <= names - _FREE_TOOLS


# --- finding 2: who may not ask holds no slot --------------------------------------------------------


async def stalled_post(app: FastAPI, path: str, headers: dict[str, str]) -> list[Message]:
    """A raw ASGI POST that declares a 100-byte body, sends one byte and then nothing (a slow socket)."""
    sent: list[Message] = []
    stall = asyncio.Event()
    first = [True]

    async def receive() -> Message:
        if first.pop() if first else False:
            return {"type": "http.request", "body": b"{", "more_body": True}
        await stall.wait()  # never set
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    raw = [(k.lower().encode(), v.encode()) for k, v in {**headers, "content-length": "100"}.items()]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost:8000"), (b"content-type", b"application/json"), *raw],
        "client": ("127.0.0.1", 40000),
        "server": ("localhost", 8000),
    }
    await app(scope, receive, send)
    return sent


def status_of(sent: list[Message]) -> int:
    return int(next(m["status"] for m in sent if m["type"] == "http.response.start"))


async def test_keyless_slow_bodies_hold_no_slot_and_keyed_questions_are_answered(
    settings: Settings, pipeline: Pipeline
) -> None:
    api = ApiSettings(
        api_keys=[SecretStr(KEY)],
        rate_limit_per_minute=0,
        admission_max_in_flight=1,
        admission_max_queue=0,
        body_timeout_s=0.3,
    )
    app = create_app(settings, api_settings=api, pipeline=pipeline)
    async with serve(app) as http:
        # The attacker: 6 sockets, no key, 1 byte of 100, on the routes that ask (issue 27, finding 2).
        keyless = [
            asyncio.create_task(stalled_post(app, path, {}))
            for path in ("/ask", "/ask/stream", "/v1/chat/completions", "/mcp", "/search", "/ask")
        ]
        # A keyed client that never finishes its body: refused with 408, holding no slot meanwhile.
        slow = asyncio.create_task(stalled_post(app, "/ask", {"x-api-key": KEY}))
        await until(lambda: sum(t.done() for t in keyless) == len(keyless))
        answered = await http.post("/ask", json={"question": QUESTION}, headers={"X-API-Key": KEY})
        chat = await http.post("/v1/chat/completions", json=CHAT, headers={"Authorization": f"Bearer {KEY}"})
        late = await slow
    assert [status_of(t.result()) for t in keyless] == [401] * len(keyless)
    assert answered.status_code == 200, answered.text
    assert chat.status_code == 200, chat.text
    assert status_of(late) == 408
    assert json.loads(late[-1]["body"])["error"] == "request timeout"


async def test_the_key_is_counted_once_per_request(settings: Settings, pipeline: Pipeline) -> None:
    # The gate checks the caller before admission and the route checks again: one rate-limit count.
    api = ApiSettings(api_keys=[SecretStr(KEY)], rate_limit_per_minute=2)
    app = create_app(settings, api_settings=api, pipeline=pipeline)
    async with serve(app) as http:
        codes = [
            (await http.post("/search", json={"question": QUESTION}, headers={"X-API-Key": KEY})).status_code
            for _ in range(3)
        ]
    assert codes == [200, 200, 429]


# --- finding 13: one deadline per question ------------------------------------------------------------


@pytest.mark.parametrize("route", ["ask", "search", "chat", "mcp_ask"])
async def test_a_hung_ncbi_ends_the_question_at_its_deadline_and_frees_the_slot(
    route: str, settings: Settings
) -> None:
    async def hung(request: httpx.Request) -> httpx.Response:
        await asyncio.Event().wait()  # NCBI never answers
        raise AssertionError("unreachable")

    # Per call: 2 s per attempt, 10 attempts within 5 s; the question: 1 s from admission.
    eutils = EutilsSettings(
        base_url="http://ncbi.test/",
        requests_per_second=1000.0,
        timeout_s=2.0,
        retry_budget_s=5.0,
        max_attempts=10,
        backoff_base_s=0.0,
    )
    client = EutilsClient(eutils, transport=httpx.MockTransport(hung))
    api = ApiSettings(rate_limit_per_minute=0, admission_max_in_flight=1, question_deadline_s=1.0)
    path, body = QUESTION_ROUTES[route]
    async with build_pipeline(
        settings, client=client, use_llm=False, use_dense=False, use_passages=False
    ) as p:
        app = create_app(settings, api_settings=api, pipeline=p)
        async with serve(app) as http:
            r = await http.post(path, json=body, headers=MCP_HEADERS if path == "/mcp" else {})
            gate = gate_of(app)
    # A clear failure, never a 500: 503 NCBI unavailable (OpenAI's shape on chat), a tool error on MCP.
    if route == "mcp_ask":
        assert r.status_code == 200 and r.json()["result"]["isError"], r.text
        assert "NCBI unavailable" in r.json()["result"]["content"][0]["text"]
    else:
        assert r.status_code == 503, r.text
        assert "NCBI unavailable" in r.text and "question deadline" in r.text
    # No call outlived the deadline: none was retried, whatever its own budget allowed.
    assert sum(client.stats.retries.values()) == 0
    assert gate.admission.in_flight == 0

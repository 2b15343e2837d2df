"""Token streaming, bottom to top: the LLM layer over real HTTP, the answerer, and ``/ask/stream``.

The OpenAI-compatible endpoint is a real uvicorn server on loopback (``httpx.ASGITransport`` buffers a
whole response, so it cannot show a stall or a disconnect mid-stream): chunks go out as real SSE
``data: {...}`` lines ending in ``data: [DONE]``, read by the official ``openai`` client.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.answer import INSUFFICIENT_TEXT, WARN_LLM_INTERRUPTED, Answer, Answerer
from app.api import create_app
from app.container import build_pipeline
from app.settings import AnswerSettings
from llm import (
    LLMRequestRejected,
    LLMResult,
    LLMSettings,
    LLMTimeout,
    LLMUnavailable,
    Message,
    OpenAICompatibleLLM,
)
from llm._base import _BaseLLM
from llm._types import _Completion, _Rung
from tests._evidence import DOCS, TODAY
from tests._fakes import BrokenStream, ScriptedLLM, boolean_only_settings, pieces
from tests._procs import serve_in_thread

MESSAGES = [{"role": "user", "content": "Does exercise help?"}]


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# --- a scripted OpenAI-compatible server that really streams ------------------------------------------

Step = Callable[[dict[str, Any], "StreamServer"], Awaitable[Response]]


def _chunk(delta: dict[str, Any], *, finish: str | None = None, model: str = "m-stream") -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def streamed(
    parts: Sequence[str],
    *,
    usage: tuple[int, int] = (17, 9),
    first_delay: float = 0.0,
    delay: float = 0.0,
    stall_after: int | None = None,
    fail_after: int | None = None,
    error_event_after: int | None = None,
) -> Step:
    """A ``stream: true`` reply: role chunk, one chunk per part, finish chunk, usage chunk, ``[DONE]``.

    ``stall_after=n`` goes silent (for a minute) after n parts; ``fail_after=n`` kills the connection
    after n parts (the chunked body never terminates); ``error_event_after=n`` sends an SSE error object.
    """

    async def step(body: dict[str, Any], server: StreamServer) -> Response:
        index = len(server.requests) - 1

        async def events() -> AsyncIterator[str]:
            try:
                yield _chunk({"role": "assistant", "content": ""})
                await asyncio.sleep(first_delay)
                for n, part in enumerate(parts):
                    if n == stall_after:
                        await asyncio.sleep(60)
                    if n == fail_after:
                        raise RuntimeError("scripted crash mid-stream")
                    if n == error_event_after:
                        yield f"data: {json.dumps({'error': {'message': 'overloaded', 'code': 503}})}\n\n"
                        return
                    if n and delay:
                        await asyncio.sleep(delay)
                    yield _chunk({"content": part})
                    server.sent[index] += 1
                yield _chunk({}, finish="stop")
                if (body.get("stream_options") or {}).get("include_usage"):
                    u = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
                    final = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0}
                    yield f"data: {json.dumps({**final, 'model': 'm-stream', 'choices': [], 'usage': u})}\n\n"
                yield "data: [DONE]\n\n"
                server.outcomes[index] = "complete"
            except asyncio.CancelledError:
                server.outcomes[index] = "disconnected"  # our client closed the connection
                raise

        return StreamingResponse(events(), media_type="text/event-stream")

    return step


def failing(status: int, message: str = "boom") -> Step:
    async def step(body: dict[str, Any], server: StreamServer) -> Response:
        return JSONResponse({"error": {"message": message, "code": status}}, status_code=status)

    return step


class StreamServer:
    """Replies with ``steps`` in order (the last one forever) and records each request and its fate."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.requests: list[dict[str, Any]] = []
        self.sent: list[int] = []
        self.outcomes: list[str] = []
        self.url = ""

        async def chat(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            self.sent.append(0)
            self.outcomes.append("open")
            step = self.steps[min(len(self.requests), len(self.steps)) - 1]
            return await step(body, self)

        self.app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])

    def script(self, *steps: Step) -> StreamServer:
        self.steps = list(steps)
        self.requests.clear()
        self.sent.clear()
        self.outcomes.clear()
        return self

    def client(self, **overrides: Any) -> OpenAICompatibleLLM:
        settings = LLMSettings(
            base_url=self.url,
            model="test-model",
            timeout_s=overrides.pop("timeout_s", 10.0),
            retry_backoff_s=overrides.pop("retry_backoff_s", 0.0),
            **overrides,
        )
        return OpenAICompatibleLLM(settings)

    def wait_for(self, predicate: Callable[[], bool], limit_s: float = 15.0) -> bool:
        """Poll (from the test thread) until the server-side state satisfies ``predicate``."""
        deadline = time.monotonic() + limit_s
        while not predicate():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True


@pytest.fixture(scope="module")
def stream_server() -> Iterator[StreamServer]:
    server = StreamServer()
    with serve_in_thread(server.app) as url:
        server.url = url + "/v1"
        yield server


async def collect(stream: Any) -> list[str]:
    return [delta async for delta in stream]


# --- the LLM layer --------------------------------------------------------------------------------------


async def test_deltas_arrive_in_order_and_join_to_the_result(stream_server: StreamServer) -> None:
    parts = ["Exercise ", "reduces fatigue ", "[PMID:111]", "."]
    server = stream_server.script(streamed(parts, usage=(40, 4)))
    before = {
        "prompt": metric("cometa_llm_tokens_total", kind="prompt"),
        "completion": metric("cometa_llm_tokens_total", kind="completion"),
        "ok": metric("cometa_llm_calls_total", backend="openai", outcome="ok"),
        "latency": metric("cometa_llm_latency_seconds_count", backend="openai"),
    }
    async with server.client() as llm:
        stream = llm.stream_text(MESSAGES, prompt_version="answer@1", max_tokens=33, stop=["\n\n"])
        assert not stream.done
        with pytest.raises(RuntimeError):
            _ = stream.result  # not before the end
        deltas = await collect(stream)
    assert deltas == parts  # the empty role chunk and the finish/usage chunks carry no text
    result = stream.result
    assert result.value == result.raw_text == "".join(parts)
    assert (result.prompt_tokens, result.completion_tokens, result.attempts) == (40, 4, 1)
    assert result.model == "m-stream" and result.prompt_version == "answer@1"
    assert result.json_mode_used == "none"
    body = server.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 33 and body["stop"] == ["\n\n"] and body["messages"] == MESSAGES
    assert server.outcomes == ["complete"]
    assert metric("cometa_llm_tokens_total", kind="prompt") == before["prompt"] + 40
    assert metric("cometa_llm_tokens_total", kind="completion") == before["completion"] + 4
    assert metric("cometa_llm_calls_total", backend="openai", outcome="ok") == before["ok"] + 1
    assert metric("cometa_llm_latency_seconds_count", backend="openai") == before["latency"] + 1


async def test_server_refusing_stream_options_is_asked_again_without_and_remembered(
    stream_server: StreamServer,
) -> None:
    ok = streamed(["Fine."])

    async def picky(body: dict[str, Any], server: StreamServer) -> Response:
        if "stream_options" in body:
            return await failing(400, "Unrecognized request argument supplied: stream_options")(body, server)
        return await ok(body, server)

    server = stream_server.script(picky)
    async with server.client() as llm:
        first = llm.stream_text(MESSAGES, prompt_version="p@1")
        assert await collect(first) == ["Fine."]
        second = llm.stream_text(MESSAGES, prompt_version="p@1")
        assert await collect(second) == ["Fine."]
    # Refused once, then never sent again by this client; without usage the counts are honest zeros.
    assert ["stream_options" in body for body in server.requests] == [True, False, False]
    assert (first.result.prompt_tokens, first.result.completion_tokens) == (0, 0)
    assert first.result.attempts == second.result.attempts == 1


async def test_other_400_is_rejected_not_retried(stream_server: StreamServer) -> None:
    server = stream_server.script(failing(400, "This model's maximum context length is 2048 tokens"))
    async with server.client() as llm:
        with pytest.raises(LLMRequestRejected, match="context length"):
            await collect(llm.stream_text(MESSAGES, prompt_version="p@1"))
    assert len(server.requests) == 1


async def test_transient_failure_before_the_first_token_is_retried(stream_server: StreamServer) -> None:
    server = stream_server.script(failing(503), failing(429), streamed(["Recovered ", "answer."]))
    async with server.client(max_retries=2) as llm:
        stream = llm.stream_text(MESSAGES, prompt_version="p@1")
        assert await collect(stream) == ["Recovered ", "answer."]
    assert stream.result.attempts == 3 and len(server.requests) == 3


async def test_transient_failures_forever_are_unavailable(stream_server: StreamServer) -> None:
    server = stream_server.script(failing(502))
    before = metric("cometa_llm_calls_total", backend="openai", outcome="unavailable")
    async with server.client(max_retries=1) as llm:
        with pytest.raises(LLMUnavailable) as info:
            await collect(llm.stream_text(MESSAGES, prompt_version="p@1"))
    assert info.value.status == 502 and len(server.requests) == 2
    assert metric("cometa_llm_calls_total", backend="openai", outcome="unavailable") == before + 1


@pytest.mark.parametrize("how", ["connection dropped", "error event"])
async def test_failure_after_the_first_token_is_unavailable_and_never_retried(
    stream_server: StreamServer, how: str
) -> None:
    parts = ["One ", "two ", "three ", "four."]
    step = (
        streamed(parts, fail_after=2) if how == "connection dropped" else streamed(parts, error_event_after=2)
    )
    server = stream_server.script(step, streamed(["retried?"]))
    got: list[str] = []
    async with server.client(max_retries=3) as llm:
        with pytest.raises(LLMUnavailable, match="broke after 2 chunk"):
            async for delta in llm.stream_text(MESSAGES, prompt_version="p@1"):
                got.append(delta)
    # A retry would repeat text the caller already has: the two deltas stand, no second request.
    assert got == ["One ", "two "] and len(server.requests) == 1


async def test_silence_after_the_first_token_hits_the_idle_timeout(stream_server: StreamServer) -> None:
    server = stream_server.script(streamed(["Starts ", "then stalls"], stall_after=1))
    before = metric("cometa_llm_calls_total", backend="openai", outcome="timeout")
    got: list[str] = []
    # The overall budget (30 s) is far away: the idle timeout is what ends it.
    async with server.client(timeout_s=30.0, stream_idle_timeout_s=0.3) as llm:
        with pytest.raises(LLMTimeout, match="stalled"):
            async for delta in llm.stream_text(MESSAGES, prompt_version="p@1"):
                got.append(delta)
    assert got == ["Starts "]
    assert metric("cometa_llm_calls_total", backend="openai", outcome="timeout") == before + 1
    # Giving up closed the connection, which is what stops a real server's generation.
    assert server.wait_for(lambda: server.outcomes == ["disconnected"]), server.outcomes


async def test_first_token_waits_on_the_budget_not_the_idle_timeout(stream_server: StreamServer) -> None:
    # Prompt processing can take longer than a gap between tokens: the idle limit starts after token one.
    server = stream_server.script(streamed(["Slow ", "start."], first_delay=0.6))
    async with server.client(timeout_s=20.0, stream_idle_timeout_s=0.2) as llm:
        assert await collect(llm.stream_text(MESSAGES, prompt_version="p@1")) == ["Slow ", "start."]


async def test_the_budget_bounds_a_stream_that_never_ends(stream_server: StreamServer) -> None:
    server = stream_server.script(streamed(["tick "] * 10_000, delay=0.05))
    got: list[str] = []
    async with server.client(timeout_s=0.8, stream_idle_timeout_s=5.0) as llm:
        with pytest.raises(LLMTimeout, match=r"exceeded 0\.8s"):
            async for delta in llm.stream_text(MESSAGES, prompt_version="p@1"):
                got.append(delta)
    assert 0 < len(got) < 10_000
    assert server.wait_for(lambda: server.outcomes == ["disconnected"]), server.outcomes


async def test_consumer_leaving_closes_the_upstream_stream_and_frees_the_slot(
    stream_server: StreamServer,
) -> None:
    server = stream_server.script(streamed(["word "] * 2_000, delay=0.01), streamed(["Next."]))
    before = metric("cometa_llm_calls_total", backend="openai", outcome="cancelled")
    async with server.client(max_concurrency=1) as llm:
        stream = llm.stream_text(MESSAGES, prompt_version="p@1")
        assert [await anext(stream), await anext(stream)] == ["word ", "word "]
        await stream.aclose()
        assert server.wait_for(lambda: server.outcomes[0] == "disconnected"), server.outcomes
        # The one slot was given back: the next call goes through.
        assert await collect(llm.stream_text(MESSAGES, prompt_version="p@1")) == ["Next."]
    assert server.sent[0] < 2_000
    assert metric("cometa_llm_calls_total", backend="openai", outcome="cancelled") == before + 1


async def test_cancelled_task_closes_the_upstream_stream(stream_server: StreamServer) -> None:
    server = stream_server.script(streamed(["word "] * 2_000, delay=0.01))
    first = asyncio.Event()

    async def consume(llm: OpenAICompatibleLLM) -> None:
        async for _delta in llm.stream_text(MESSAGES, prompt_version="p@1"):
            first.set()

    async with server.client() as llm:
        task = asyncio.create_task(consume(llm))
        await asyncio.wait_for(first.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert server.wait_for(lambda: server.outcomes[0] == "disconnected"), server.outcomes


class NonStreamingBackend(_BaseLLM):
    """A backend that only implements one-shot completion: ``stream_text`` must still work."""

    backend = "oneshot"

    def __init__(self, text: str) -> None:
        super().__init__(LLMSettings(model="oneshot"), concurrency=1)
        self.text = text

    async def _complete(
        self,
        messages: list[Message],
        *,
        rung: _Rung,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
    ) -> _Completion:
        return _Completion(self.text, 12, 3, "oneshot-1", "stop")


async def test_backend_that_cannot_stream_yields_its_completion_once() -> None:
    llm = NonStreamingBackend("The whole answer at once.")
    stream = llm.stream_text(MESSAGES, prompt_version="p@1")
    assert await collect(stream) == ["The whole answer at once."]
    assert (stream.result.prompt_tokens, stream.result.completion_tokens) == (12, 3)
    assert stream.result.model == "oneshot-1"


# --- the answerer -----------------------------------------------------------------------------------------

REPLY = (
    "Exercise reduces fatigue during chemotherapy [PMID:111]. Walking improves quality of life "
    "[PMID:222]. It also cures cancer [PMID:555]."
)


def answerer(llm: Any, **settings: Any) -> Answerer:
    return Answerer(llm, AnswerSettings(**settings), today=TODAY)


async def run_stream(a: Answerer, *args: Any, **kwargs: Any) -> tuple[list[str], Answer]:
    deltas: list[str] = []
    final: Answer | None = None
    async for part in a.answer_stream(*args, **kwargs):
        assert final is None, "nothing may follow the final answer"
        if isinstance(part, str):
            deltas.append(part)
        else:
            final = part
    assert final is not None
    return deltas, final


async def test_answer_stream_yields_raw_deltas_then_the_checked_answer() -> None:
    llm = ScriptedLLM(lambda _p: REPLY)
    deltas, final = await run_stream(answerer(llm), "Does exercise help?", DOCS)
    assert len(deltas) == len(pieces(REPLY)) > 1 and "".join(deltas) == REPLY  # provisional, raw
    assert final.mode == "llm" and final.citations_removed == 1  # [PMID:555] is not in the evidence
    assert "555" not in final.text and "cures cancer." in final.text
    assert [c.pmid for c in final.citations] == ["111", "222"]
    assert any("removed 1 citation" in w for w in final.warnings)
    assert llm.stream_outcomes == ["done"] and llm.versions == ["answer_patient@2"]
    # The same post-processing as the one-shot path, to the letter.
    assert final == await answerer(ScriptedLLM(lambda _p: REPLY)).answer("Does exercise help?", DOCS)


async def test_answer_stream_failure_mid_answer_falls_back_to_extractive() -> None:
    llm = ScriptedLLM(
        lambda _p: BrokenStream("Exercise reduces fatigue [PMID:111] and", LLMUnavailable("gone"))
    )
    deltas, final = await run_stream(answerer(llm), "Does exercise help?", DOCS)
    assert "".join(deltas) == "Exercise reduces fatigue [PMID:111] and"  # what the client saw so far
    assert final.mode == "extractive" and final.text.startswith(
        "2022 review: Exercise reduces fatigue during chemotherapy"
    )
    # The fallback says why, then how the extractive answer was made.
    assert final.warnings[0] == f"{WARN_LLM_INTERRUPTED} (LLMUnavailable)"
    assert "no language model wrote this" in final.warnings[1] and len(final.warnings) == 2
    assert [c.pmid for c in final.citations] == ["111"]


async def test_answer_stream_failure_before_any_token_sends_the_extractive_text_once() -> None:
    llm = ScriptedLLM(lambda _p: LLMTimeout("slow"))
    deltas, final = await run_stream(answerer(llm), "Does exercise help?", DOCS)
    assert final.mode == "extractive" and deltas == [final.text]
    assert "unavailable" in final.warnings[0] and "LLMTimeout" in final.warnings[0]


async def test_answer_stream_garbage_falls_back_like_answer() -> None:
    llm = ScriptedLLM(lambda _p: "<think>hmm</think> ok")
    deltas, final = await run_stream(answerer(llm), "Does exercise help?", DOCS)
    assert "".join(deltas) == "<think>hmm</think> ok" and final.mode == "extractive"
    garbage = ScriptedLLM(lambda _p: "<think>hmm</think> ok")
    assert final == await answerer(garbage).answer("Does exercise help?", DOCS)


async def test_answer_stream_without_evidence_never_calls_the_llm() -> None:
    llm = ScriptedLLM(lambda _p: pytest.fail("the LLM must not be called"))
    deltas, final = await run_stream(answerer(llm), "Does exercise help?", [])
    assert final.mode == "insufficient_evidence" and deltas == [INSUFFICIENT_TEXT]
    assert llm.seen == [] and llm.streamed == []


async def test_answer_stream_choice_and_extractive_come_as_one_delta() -> None:
    llm = ScriptedLLM(lambda _p: {"step_by_step_thinking": "Trials agree [PMID:111].", "answer_choice": "A"})
    deltas, final = await run_stream(answerer(llm), "Does it help?", DOCS, options={"A": "yes", "B": "no"})
    assert deltas == ["A. yes"] and final.answer_choice == "A" and llm.streamed == []
    deltas, final = await run_stream(answerer(None), "Does exercise help?", DOCS)
    assert final.mode == "extractive" and deltas == [final.text]


class OneShotOnly:
    """An LLMClient from before streaming: no ``stream_text`` at all."""

    model_name = "one-shot"

    async def complete_text(self, messages: Sequence[Message], **kwargs: Any) -> LLMResult[str]:
        return LLMResult(REPLY, REPLY, self.model_name, str(kwargs["prompt_version"]), 5, 5, 0.0, 1, "none")


async def test_answer_stream_with_a_client_that_cannot_stream() -> None:
    deltas, final = await run_stream(answerer(OneShotOnly()), "Does exercise help?", DOCS)
    assert deltas == [REPLY] and final.mode == "llm" and final.citations_removed == 1


async def test_closing_the_answer_stream_closes_the_llm_stream() -> None:
    llm = ScriptedLLM(lambda _p: REPLY)
    parts = answerer(llm).answer_stream("Does exercise help?", DOCS)
    assert await anext(parts) == "Exercise "
    await parts.aclose()
    assert llm.stream_outcomes == ["closed"] and llm.streamed == [1]


# --- /ask/stream ---------------------------------------------------------------------------------------

NARRATIVE = "does exercise help with fatigue during chemotherapy for breast cancer?"
DOCUMENTS = [
    {"pmid": "111", "title": "Exercise and fatigue", "text": "Exercise reduces fatigue during chemotherapy."},
    {"pmid": "222", "title": "Walking", "text": "Walking programmes improved quality of life in survivors."},
]


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    for block in body.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


@asynccontextmanager
async def api(llm: Any) -> AsyncIterator[httpx.AsyncClient]:
    settings = boolean_only_settings()
    async with build_pipeline(settings, use_llm=False, use_dense=False, use_passages=False) as pipeline:
        app = create_app(settings, pipeline=pipeline, answerer=Answerer(llm))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                yield client


async def test_ask_stream_sends_tokens_before_the_authoritative_answer() -> None:
    llm = ScriptedLLM(lambda _p: REPLY)
    async with api(llm) as client:
        payload = {"question": NARRATIVE, "documents": DOCUMENTS, "documents_mode": "replace"}
        r = await client.post("/ask/stream", json=payload)
        assert r.status_code == 200
        events = sse_events(r.text)
        one_shot = (await client.post("/ask", json=payload)).json()
    names = [n for n, _ in events]
    tokens = [d for n, d in events if n == "token"]
    assert len(tokens) == len(pieces(REPLY)) > 1
    assert [t["index"] for t in tokens] == list(range(len(tokens)))
    assert "".join(t["delta"] for t in tokens) == REPLY  # the raw model text, invalid citation included
    first, last = names.index("token"), len(names) - 1 - names[::-1].index("token")
    assert names.index("evidence") < first and last < names.index("answer") < names.index("done")
    assert names[first - 1 : first] == ["stage"] and events[first - 1][1] == {
        "stage": "answer",
        "status": "started",
    }
    answer = dict(events)["answer"]
    assert answer["mode"] == "llm" and answer["citations_removed"] == 1 and "555" not in answer["answer"]
    assert [c["pmid"] for c in answer["citations"]] == ["111", "222"]
    assert any("removed 1 citation" in w for w in dict(events)["done"]["warnings"])
    # /ask answers the same, without streaming.
    assert one_shot["answer"] == answer["answer"] and one_shot["citations_removed"] == 1
    assert llm.streamed == [len(tokens)] and len(llm.seen) == 2


async def test_ask_stream_llm_failure_mid_answer_ends_with_an_extractive_answer() -> None:
    llm = ScriptedLLM(
        lambda _p: BrokenStream("Exercise reduces fatigue [PMID:111] and also", LLMUnavailable("x"))
    )
    async with api(llm) as client:
        payload = {"question": NARRATIVE, "documents": DOCUMENTS, "documents_mode": "replace"}
        r = await client.post("/ask/stream", json=payload)
    assert r.status_code == 200
    events = sse_events(r.text)
    names = [n for n, _ in events]
    assert "error" not in names and names[-1] == "done"
    assert (
        "".join(d["delta"] for n, d in events if n == "token")
        == "Exercise reduces fatigue [PMID:111] and also"
    )
    answer = dict(events)["answer"]
    assert answer["mode"] == "extractive" and answer["citations"]
    assert f"{WARN_LLM_INTERRUPTED} (LLMUnavailable)" in dict(events)["done"]["warnings"]


async def test_ask_stream_without_evidence_sends_one_token_and_calls_no_llm() -> None:
    llm = ScriptedLLM(lambda _p: pytest.fail("the LLM must not be called"))
    async with api(llm) as client:
        r = await client.post(
            "/ask/stream", json={"question": NARRATIVE, "documents": [], "documents_mode": "replace"}
        )
    events = sse_events(r.text)
    assert [d["delta"] for n, d in events if n == "token"] == [INSUFFICIENT_TEXT]
    assert dict(events)["answer"]["mode"] == "insufficient_evidence" and llm.seen == []


def test_client_disconnect_cancels_generation() -> None:
    """Over real HTTP: the client reads one token and hangs up; the LLM stream behind it is closed."""
    words = 2_000
    llm = ScriptedLLM(lambda _p: "word " * words, token_delay=0.01)
    settings = boolean_only_settings()
    app: FastAPI = create_app(settings, answerer=Answerer(llm))
    payload = {"question": NARRATIVE, "documents": DOCUMENTS, "documents_mode": "replace"}
    with serve_in_thread(app) as base:
        with httpx.stream("POST", base + "/ask/stream", json=payload, timeout=30) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line == "event: token":
                    break
        deadline = time.monotonic() + 15
        while llm.stream_outcomes != ["closed"] and time.monotonic() < deadline:
            time.sleep(0.02)
    assert llm.stream_outcomes == ["closed"]
    assert 0 < llm.streamed[0] < words

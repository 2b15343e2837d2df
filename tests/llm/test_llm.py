"""The LLM client against a scripted OpenAI-compatible server running inside the test.

The server is a real Starlette app reached through ``httpx.ASGITransport`` by the official ``openai``
client, so request building, HTTP status handling and response parsing all run for real; only the model
is replaced by a script of replies.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from pydantic import BaseModel, Field, SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from llm import (
    EmbeddedLLM,
    LLMClient,
    LLMError,
    LLMOutputInvalid,
    LLMRequestRejected,
    LLMSettings,
    LLMTimeout,
    LLMUnavailable,
    OpenAICompatibleLLM,
    build_llm,
    extract_json_object,
)
from retrieval import CometaError
from tests._fakes import completion_body


class Verdict(BaseModel):
    answer: str = Field(min_length=1)
    score: int = Field(ge=0, le=10)


GOOD = '{"answer": "yes", "score": 7}'
MESSAGES = [{"role": "system", "content": "You judge."}, {"role": "user", "content": "Is it?"}]

Step = Callable[[dict[str, Any]], Awaitable[Response]]


def reply(content: str, *, prompt_tokens: int = 11, completion_tokens: int = 5, model: str = "m-1") -> Step:
    async def step(body: dict[str, Any]) -> Response:
        return JSONResponse(
            completion_body(
                content, model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
            )
        )

    return step


def error(status: int, message: str = "boom") -> Step:
    async def step(body: dict[str, Any]) -> Response:
        return JSONResponse(
            {"error": {"message": message, "type": "error", "code": status}}, status_code=status
        )

    return step


def stall(seconds: float, then: Step) -> Step:
    async def step(body: dict[str, Any]) -> Response:
        await asyncio.sleep(seconds)
        return await then(body)

    return step


def rejecting(predicate: Callable[[dict[str, Any]], bool], then: Step) -> Step:
    """400 for requests matching ``predicate`` (like a server without that response_format), else ``then``."""

    async def step(body: dict[str, Any]) -> Response:
        if predicate(body):
            return await error(400, "response_format not supported")(body)
        return await then(body)

    return step


class ScriptedServer:
    """Replies with ``steps`` in order, the last one forever; records every request body."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0

        async def chat(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            step = self.steps[min(len(self.requests), len(self.steps)) - 1]
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return await step(body)
            finally:
                self.in_flight -= 1

        self.app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])

    def client(self, **overrides: Any) -> OpenAICompatibleLLM:
        settings = LLMSettings(
            base_url="http://llm.test/v1",
            model="test-model",
            timeout_s=overrides.pop("timeout_s", 5.0),
            retry_backoff_s=overrides.pop("retry_backoff_s", 0.0),
            **overrides,
        )
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app))
        return OpenAICompatibleLLM(settings, http_client=http)

    def formats(self) -> list[str | None]:
        """The response_format sent with each request: json_schema / json_object+schema / json_object."""
        out: list[str | None] = []
        for body in self.requests:
            fmt = body.get("response_format")
            if fmt is None:
                out.append(None)
            elif fmt["type"] == "json_object" and "schema" in fmt:
                out.append("json_object+schema")
            else:
                out.append(fmt["type"])
        return out


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# --- happy path ---------------------------------------------------------------------------------------


async def test_valid_json_first_time() -> None:
    server = ScriptedServer(reply(GOOD, prompt_tokens=20, completion_tokens=8))
    async with server.client() as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="judge@1")
    assert result.value == Verdict(answer="yes", score=7)
    assert result.raw_text == GOOD
    assert (result.attempts, result.prompt_tokens, result.completion_tokens) == (1, 20, 8)
    assert result.prompt_version == "judge@1"
    assert result.model == "m-1"  # what the server says it ran
    assert result.json_mode_used == "json_schema"
    assert result.latency_s >= 0

    body = server.requests[0]
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.0 and body["max_tokens"] == 512
    assert body["messages"] == MESSAGES  # json_schema mode: prompt untouched
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Verdict" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == Verdict.model_json_schema()
    assert server.headers[0]["authorization"] == "Bearer EMPTY"


async def test_api_key_and_per_call_overrides() -> None:
    server = ScriptedServer(reply(GOOD))
    async with server.client(api_key=SecretStr("sk-test")) as llm:
        await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1", max_tokens=40, temperature=0.7)
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert server.requests[0]["max_tokens"] == 40 and server.requests[0]["temperature"] == 0.7


@pytest.mark.parametrize(
    "content",
    [
        f"```json\n{GOOD}\n```",
        f"Sure! Here it is:\n{GOOD}\nHope this helps {{:-)",
        f"{{not json}} then {GOOD} and {{}}",
    ],
)
async def test_json_is_extracted_from_fences_and_prose(content: str) -> None:
    server = ScriptedServer(reply(content))
    async with server.client() as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert result.value.score == 7 and result.attempts == 1


def test_extract_json_object() -> None:
    assert extract_json_object('x {"a": {"b": [1, "}"]}} y') == {"a": {"b": [1, "}"]}}
    assert extract_json_object('```\n{"a": 1}\n```') == {"a": 1}
    assert extract_json_object('[1, 2] {"a": 2}') == {"a": 2}
    with pytest.raises(ValueError):
        extract_json_object("no json [1, 2] here")
    with pytest.raises(ValueError):
        extract_json_object('{"truncated": ')


async def test_complete_text() -> None:
    server = ScriptedServer(reply("Plain answer.", prompt_tokens=3, completion_tokens=2))
    async with server.client() as llm:
        result = await llm.complete_text(MESSAGES, prompt_version="t@1", stop=["\n\n"], max_tokens=9)
    assert result.value == result.raw_text == "Plain answer."
    assert (result.attempts, result.prompt_tokens, result.completion_tokens) == (1, 3, 2)
    assert result.json_mode_used == "none"
    body = server.requests[0]
    assert "response_format" not in body
    assert body["stop"] == ["\n\n"] and body["max_tokens"] == 9


# --- invalid output -----------------------------------------------------------------------------------


async def test_garbage_then_valid_retries_with_correction() -> None:
    server = ScriptedServer(
        reply("I think the answer is yes.", prompt_tokens=10, completion_tokens=6),
        reply(GOOD, prompt_tokens=12, completion_tokens=4),
    )
    before = metric("cometa_llm_invalid_output_total", backend="openai")
    async with server.client() as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert result.value.answer == "yes"
    assert result.attempts == 2
    # Tokens of every attempt are counted: the failed one cost money too.
    assert (result.prompt_tokens, result.completion_tokens) == (22, 10)
    assert metric("cometa_llm_invalid_output_total", backend="openai") == before + 1
    retry_messages = server.requests[1]["messages"]
    assert retry_messages[: len(MESSAGES)] == MESSAGES
    assert retry_messages[-1]["role"] == "user"
    assert "not valid" in retry_messages[-1]["content"]


async def test_schema_violation_counts_as_invalid() -> None:
    server = ScriptedServer(reply('{"answer": "yes", "score": 99}'), reply(GOOD))
    async with server.client() as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert result.attempts == 2
    assert "score" in server.requests[1]["messages"][-1]["content"]  # the correction names the field


async def test_always_garbage_raises_output_invalid() -> None:
    server = ScriptedServer(reply("nope"))
    before = metric("cometa_llm_calls_total", backend="openai", outcome="invalid")
    async with server.client(max_retries=2) as llm:
        with pytest.raises(LLMOutputInvalid) as info:
            await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert len(server.requests) == 3  # first try + max_retries
    assert info.value.raw_text == "nope" and info.value.attempts == 3
    assert isinstance(info.value, LLMError) and isinstance(info.value, CometaError)
    assert metric("cometa_llm_calls_total", backend="openai", outcome="invalid") == before + 1
    # Corrections replace each other instead of piling up in a small context window.
    assert len(server.requests[2]["messages"]) == len(MESSAGES) + 1


async def test_empty_choices_is_invalid_output_not_a_crash() -> None:
    async def no_choices(body: dict[str, Any]) -> Response:
        return JSONResponse(
            {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
        )

    server = ScriptedServer(no_choices)
    async with server.client(max_retries=0) as llm:
        with pytest.raises(LLMOutputInvalid):
            await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")


# --- structured-output negotiation --------------------------------------------------------------------


def _is_json_schema(body: dict[str, Any]) -> bool:
    return bool(body.get("response_format", {}).get("type") == "json_schema")


async def test_json_schema_rejected_falls_back_to_json_object_and_remembers() -> None:
    server = ScriptedServer(rejecting(_is_json_schema, reply(GOOD)))
    async with server.client() as llm:
        first = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
        second = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
        assert llm.json_mode == "json_object"
    assert first.json_mode_used == second.json_mode_used == "json_object"
    assert first.attempts == 2 and second.attempts == 1  # the refusal is paid once per client
    assert server.formats() == ["json_schema", "json_object+schema", "json_object+schema"]
    # llama.cpp-style json_object carries the schema, so the prompt needs no extra instructions.
    assert server.requests[1]["messages"] == MESSAGES
    assert server.requests[1]["response_format"]["schema"] == Verdict.model_json_schema()


async def test_openai_style_server_ends_on_bare_json_object_with_schema_in_prompt() -> None:
    def refuses(body: dict[str, Any]) -> bool:
        fmt = body.get("response_format", {})
        return fmt.get("type") == "json_schema" or "schema" in fmt

    server = ScriptedServer(rejecting(refuses, reply(GOOD)))
    async with server.client() as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert result.json_mode_used == "json_object" and result.attempts == 3
    assert server.formats() == ["json_schema", "json_object+schema", "json_object"]
    system = server.requests[-1]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You judge.")
    assert '"score"' in system["content"]  # schema spelled out in the prompt


async def test_server_without_response_format_falls_back_to_plain_text() -> None:
    server = ScriptedServer(rejecting(lambda body: "response_format" in body, reply(f"```json\n{GOOD}\n```")))
    async with server.client() as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
        again = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert result.json_mode_used == again.json_mode_used == "none"
    assert server.formats() == ["json_schema", "json_object+schema", "json_object", None, None]


async def test_llama_cpp_python_500_on_unknown_response_format_is_a_refusal() -> None:
    """llama-cpp-python's server turns FastAPI's validation error into HTTP 500 (seen on 0.3.36)."""
    validation = (
        "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\"}"
    )

    async def step(body: dict[str, Any]) -> Response:
        if _is_json_schema(body):
            return await error(500, validation)(body)
        return await reply(GOOD)(body)

    server = ScriptedServer(step)
    async with server.client() as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert result.json_mode_used == "json_object" and result.attempts == 2


async def test_context_length_400_is_rejected_without_downgrading() -> None:
    server = ScriptedServer(error(400, "This model's maximum context length is 2048 tokens"))
    async with server.client() as llm:
        with pytest.raises(LLMRequestRejected, match="context length") as info:
            await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
        assert llm.json_mode == "json_schema"
    assert info.value.status == 400
    assert len(server.requests) == 1


async def test_explicit_json_schema_mode_does_not_fall_back() -> None:
    server = ScriptedServer(rejecting(_is_json_schema, reply(GOOD)))
    async with server.client(json_mode="json_schema") as llm:
        with pytest.raises(LLMRequestRejected):
            await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert server.formats() == ["json_schema"]


async def test_json_mode_none_sends_instructions_only() -> None:
    server = ScriptedServer(reply(GOOD))
    async with server.client(json_mode="none") as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert result.json_mode_used == "none"
    assert server.formats() == [None]
    assert "JSON schema" in server.requests[0]["messages"][0]["content"]


# --- transport failures -------------------------------------------------------------------------------


async def test_500s_then_ok() -> None:
    server = ScriptedServer(error(500), error(503), reply(GOOD))
    async with server.client(max_retries=2) as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert result.value.score == 7 and result.attempts == 3
    assert result.json_mode_used == "json_schema"  # a plain 5xx is not a format refusal


async def test_500s_forever_is_unavailable() -> None:
    server = ScriptedServer(error(502))
    before = metric("cometa_llm_calls_total", backend="openai", outcome="unavailable")
    async with server.client(max_retries=1) as llm:
        with pytest.raises(LLMUnavailable) as info:
            await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert info.value.status == 502 and len(server.requests) == 2
    assert metric("cometa_llm_calls_total", backend="openai", outcome="unavailable") == before + 1


async def test_rate_limit_is_retried() -> None:
    server = ScriptedServer(error(429, "slow down"), reply(GOOD))
    async with server.client() as llm:
        result = await llm.complete_text(MESSAGES, prompt_version="p@1")
    assert result.attempts == 2


async def test_auth_failure_is_not_retried() -> None:
    server = ScriptedServer(error(401, "bad key"))
    async with server.client() as llm:
        with pytest.raises(LLMUnavailable, match="credentials"):
            await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert len(server.requests) == 1


async def test_unknown_model_404_is_rejected() -> None:
    server = ScriptedServer(error(404, "model not found"))
    async with server.client() as llm:
        with pytest.raises(LLMRequestRejected) as info:
            await llm.complete_text(MESSAGES, prompt_version="p@1")
    assert info.value.status == 404


async def test_connection_refused_is_unavailable_and_wraps_nothing_foreign() -> None:
    calls = 0

    def refuse(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("connection refused", request=request)

    settings = LLMSettings(base_url="http://llm.test/v1", max_retries=2, retry_backoff_s=0.0)
    llm = OpenAICompatibleLLM(settings, http_client=httpx.AsyncClient(transport=httpx.MockTransport(refuse)))
    async with llm:
        with pytest.raises(LLMUnavailable, match="after 3 attempt") as info:
            await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert calls == 3
    assert info.value.__suppress_context__  # no openai/httpx exception in the user-facing chain


async def test_stall_longer_than_timeout_is_bounded() -> None:
    server = ScriptedServer(stall(10.0, reply(GOOD)))
    before = metric("cometa_llm_calls_total", backend="openai", outcome="timeout")
    async with server.client(timeout_s=0.3) as llm:
        started = time.monotonic()
        with pytest.raises(LLMTimeout):
            await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
        elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 1.5
    assert metric("cometa_llm_calls_total", backend="openai", outcome="timeout") == before + 1


async def test_timeout_covers_retries_and_backoff() -> None:
    server = ScriptedServer(error(500))
    async with server.client(timeout_s=0.4, max_retries=10, retry_backoff_s=0.2) as llm:
        started = time.monotonic()
        with pytest.raises(LLMTimeout):
            await llm.complete_text(MESSAGES, prompt_version="p@1")
        assert time.monotonic() - started < 1.5


# --- accounting, concurrency, factory -----------------------------------------------------------------


async def test_token_and_call_metrics() -> None:
    server = ScriptedServer(reply(GOOD, prompt_tokens=100, completion_tokens=30))
    prompt_before = metric("cometa_llm_tokens_total", kind="prompt")
    completion_before = metric("cometa_llm_tokens_total", kind="completion")
    ok_before = metric("cometa_llm_calls_total", backend="openai", outcome="ok")
    latency_before = metric("cometa_llm_latency_seconds_count", backend="openai")
    async with server.client() as llm:
        await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert metric("cometa_llm_tokens_total", kind="prompt") == prompt_before + 100
    assert metric("cometa_llm_tokens_total", kind="completion") == completion_before + 30
    assert metric("cometa_llm_calls_total", backend="openai", outcome="ok") == ok_before + 1
    assert metric("cometa_llm_latency_seconds_count", backend="openai") == latency_before + 1


async def test_missing_usage_counts_zero_tokens() -> None:
    async def no_usage(body: dict[str, Any]) -> Response:
        return JSONResponse(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": GOOD}, "finish_reason": "stop"}
                ],
            }
        )

    server = ScriptedServer(no_usage)
    async with server.client() as llm:
        result = await llm.complete_json(MESSAGES, Verdict, prompt_version="p@1")
    assert (result.prompt_tokens, result.completion_tokens) == (0, 0)


async def test_max_concurrency_is_enforced() -> None:
    server = ScriptedServer(stall(0.05, reply(GOOD)))
    async with server.client(max_concurrency=2) as llm:
        results = await asyncio.gather(
            *(llm.complete_json(MESSAGES, Verdict, prompt_version="p@1") for _ in range(6))
        )
    assert len(results) == 6
    assert server.max_in_flight == 2


def test_build_llm_factory() -> None:
    assert build_llm(LLMSettings(backend="none")) is None
    openai_llm = build_llm(LLMSettings(base_url="http://vllm:8000/v1"))
    assert isinstance(openai_llm, OpenAICompatibleLLM) and isinstance(openai_llm, LLMClient)
    assert openai_llm.model_name == "meta-llama/Llama-3.1-8B-Instruct"
    embedded = build_llm(LLMSettings(backend="embedded"))  # lazy: nothing is loaded yet
    assert isinstance(embedded, EmbeddedLLM) and isinstance(embedded, LLMClient)
    assert embedded.model_name == "gemma-3-270m-q4_k_m"


async def test_embedded_with_missing_model_file_is_unavailable(tmp_path: Any) -> None:
    llm = EmbeddedLLM(LLMSettings(backend="embedded", embedded_model_path=tmp_path / "absent.gguf"))
    with pytest.raises(LLMUnavailable):
        await llm.complete_text(MESSAGES, prompt_version="p@1")


def test_settings_section_reads_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.settings import Settings

    monkeypatch.setenv("COMETA_LLM__BACKEND", "embedded")
    monkeypatch.setenv("COMETA_LLM__JSON_MODE", "json_object")
    monkeypatch.setenv("COMETA_LLM__API_KEY", "sk-secret")
    settings = Settings(_env_file=None)
    assert settings.llm.backend == "embedded" and settings.llm.json_mode == "json_object"
    assert settings.llm.api_key is not None and "sk-secret" not in repr(settings.llm)


def test_result_is_json_friendly() -> None:
    # Stages log/persist results; the value is a pydantic model, the rest plain data.
    from dataclasses import asdict

    from llm import LLMResult

    result = LLMResult(
        value=Verdict(answer="a", score=1),
        raw_text="{}",
        model="m",
        prompt_version="p@1",
        prompt_tokens=1,
        completion_tokens=1,
        latency_s=0.1,
        attempts=1,
        json_mode_used="json_schema",
    )
    data = asdict(result)
    data["value"] = result.value.model_dump()
    assert json.loads(json.dumps(data))["value"] == {"answer": "a", "score": 1}


def not_json(body_text: str = "<html>502 Bad Gateway</html>") -> Step:
    async def step(body: dict[str, Any]) -> Response:
        return Response(body_text, status_code=200, media_type="application/json")

    return step


async def test_200_with_a_non_json_body_is_retried_then_unavailable() -> None:
    # Found by the soak benchmark: the SDK's JSONDecodeError escaped as a 500 instead of a fallback.
    server = ScriptedServer(not_json(), reply("fine"))
    async with server.client(max_retries=1) as llm:
        result = await llm.complete_text(MESSAGES, prompt_version="p@1")
    assert result.value == "fine" and result.attempts == 2
    broken = ScriptedServer(not_json())
    async with broken.client(max_retries=1) as llm:
        with pytest.raises(LLMUnavailable, match="unparseable response body"):
            await llm.complete_text(MESSAGES, prompt_version="p@1")
    assert len(broken.requests) == 2


def test_no_base_url_is_no_llm_never_the_openai_default() -> None:
    # The openai package falls back to api.openai.com without a base_url: a question nobody sent there.
    assert LLMSettings().base_url is None and build_llm(LLMSettings(backend="openai")) is None
    with pytest.raises(LLMUnavailable, match="no LLM server configured"):
        OpenAICompatibleLLM(LLMSettings())


async def test_served_models_lists_the_servers_model_ids() -> None:
    async def listing(request: Request) -> Response:
        return JSONResponse(
            {"object": "list", "data": [{"id": "a", "object": "model", "created": 0, "owned_by": "x"}]}
        )

    app = Starlette(routes=[Route("/v1/models", listing)])
    settings = LLMSettings(base_url="http://llm.test/v1", model="a")
    async with OpenAICompatibleLLM(
        settings, http_client=httpx.AsyncClient(transport=httpx.ASGITransport(app))
    ) as llm:
        assert await llm.served_models() == ["a"]
    gone = Starlette(routes=[])  # 404: not an OpenAI-compatible server
    async with OpenAICompatibleLLM(
        settings, http_client=httpx.AsyncClient(transport=httpx.ASGITransport(gone))
    ) as llm:
        with pytest.raises(LLMUnavailable, match="listing the server's models failed"):
            await llm.served_models()

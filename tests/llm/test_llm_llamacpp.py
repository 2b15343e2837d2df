"""Integration with a real model: Gemma-3-270M (GGUF, from the ``llm`` extra) through llama-cpp-python.

Two paths, the same client code above them:

* ``python -m llama_cpp.server`` on loopback, reached by :class:`OpenAICompatibleLLM` over HTTP, exactly as
  a vLLM deployment would be;
* :class:`EmbeddedLLM` in-process.

The model is a 270M *base* model: answers are weak, so only validity and shape are asserted. Budget: well
under two minutes on two CPU cores (small ``max_tokens``, one server for the module).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated

import httpx
import pytest
from pydantic import BaseModel, Field

pytest.importorskip("llama_cpp")

from llm import (
    EmbeddedLLM,
    LLMSettings,
    LLMTimeout,
    OpenAICompatibleLLM,
    ensure_embedded_model,
)
from prompts import load_prompt
from retrieval.understand import Intent, QueryPlan

pytestmark = pytest.mark.llm

THREADS = 2
READY_TIMEOUT_S = 60.0


class Triage(BaseModel):
    topic: str = Field(min_length=1, max_length=80)
    urgent: bool


class Essay(BaseModel):
    text: str = Field(min_length=450, max_length=500)


class PlanSketch(BaseModel):
    """The part of QueryPlan the model must get right, with every string bounded."""

    corrected_question: str = Field(min_length=1, max_length=150)
    intent: Intent
    ladder: list[Annotated[str, Field(min_length=1, max_length=80)]] = Field(min_length=1, max_length=3)


TRIAGE_MESSAGES = [
    {"role": "system", "content": "You triage patient messages. Reply in JSON with keys topic and urgent."},
    {"role": "user", "content": "My dad has been coughing up blood since yesterday."},
]


@pytest.fixture(scope="module")
def gguf() -> Path:
    try:
        return ensure_embedded_model()
    except Exception as exc:  # the model package is part of the optional extra
        pytest.skip(f"embedded model unavailable: {exc}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def llama_server(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    # Logs go to a file, never a pipe: nobody reads a pipe during the tests, and a full pipe blocks
    # the server mid-request.
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(gguf),
                "--model_alias",
                "gemma-3-270m",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "2048",
                "--n_threads",
                str(THREADS),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}"
                )
            try:
                if httpx.get(f"{base_url}/models", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"llama_cpp.server not ready in {READY_TIMEOUT_S:g}s:\n{log_path.read_text()[-2000:]}"
                )
            time.sleep(0.2)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
async def http_llm(llama_server: str) -> AsyncIterator[OpenAICompatibleLLM]:
    settings = LLMSettings(
        base_url=llama_server, model="gemma-3-270m", timeout_s=60, stream_idle_timeout_s=60, max_tokens=48
    )
    async with OpenAICompatibleLLM(settings) as llm:
        yield llm


@pytest.fixture(scope="module")
def embedded(gguf: Path) -> Iterator[EmbeddedLLM]:
    # Generous stream idle limit: on a loaded 2-core machine one token can take seconds.
    settings = LLMSettings(
        backend="embedded", timeout_s=60, stream_idle_timeout_s=60, max_tokens=48, embedded_n_threads=THREADS
    )
    llm = EmbeddedLLM(settings, model_path=gguf)
    yield llm
    asyncio.run(llm.aclose())


async def test_server_json_through_openai_protocol(http_llm: OpenAICompatibleLLM) -> None:
    first = await http_llm.complete_json(TRIAGE_MESSAGES, Triage, prompt_version="triage@test")
    assert isinstance(first.value, Triage)
    assert first.prompt_tokens > 0 and first.completion_tokens > 0
    assert first.model == "gemma-3-270m"
    # llama-cpp-python 0.3.x refuses response_format "json_schema" (HTTP 500 from its validation layer);
    # the client steps down to json_object + schema, which llama.cpp enforces with a grammar.
    assert first.json_mode_used in ("json_schema", "json_object")
    second = await http_llm.complete_json(TRIAGE_MESSAGES, Triage, prompt_version="triage@test")
    assert isinstance(second.value, Triage)
    assert second.json_mode_used == first.json_mode_used == http_llm.json_mode
    assert second.attempts == 1  # the negotiation is remembered


async def test_server_text_completion(http_llm: OpenAICompatibleLLM) -> None:
    result = await http_llm.complete_text(
        [{"role": "user", "content": "Name one symptom of anemia."}],
        prompt_version="text@test",
        max_tokens=16,
    )
    assert isinstance(result.value, str)
    assert result.prompt_tokens > 0 and result.completion_tokens <= 16
    assert result.attempts == 1 and result.json_mode_used == "none"


async def test_embedded_json(embedded: EmbeddedLLM) -> None:
    result = await embedded.complete_json(TRIAGE_MESSAGES, Triage, prompt_version="triage@test")
    assert isinstance(result.value, Triage)
    assert result.json_mode_used == "json_object"
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert result.model == embedded.model_name


async def test_embedded_rewrite_prompt_fits_small_context_and_yields_a_plan(embedded: EmbeddedLLM) -> None:
    """The real rewrite prompt plus a narrative fit n_ctx=2048 and come back as a usable QueryPlan.

    QueryPlan's own strings are unbounded for the grammar (corrected_question allows 4000 characters,
    ladder items have no limit), and a 270M base model happily loops inside one until max_tokens. A
    bounded subset keeps the test about the prompt and the plumbing, not about the model's stamina.
    """
    prompt = load_prompt("rewrite_query")
    messages = prompt.render(
        question="My mom is 70 and has stage 3 colon cancr. is chemo worth it at her age or just sick?",
        current_year=2025,
    )
    result = await embedded.complete_json(messages, PlanSketch, prompt_version=prompt.id, max_tokens=160)
    plan = QueryPlan.model_validate(result.value.model_dump())
    assert 1 <= len(plan.ladder) <= 3
    assert result.prompt_version == "rewrite_query@2"
    assert result.prompt_tokens + 160 <= 2048 * result.attempts  # prompt + answer fit the context


async def test_embedded_timeout_aborts_generation_and_recovers(embedded: EmbeddedLLM) -> None:
    patient = embedded.settings
    llm = EmbeddedLLM(patient, model_path=embedded.model_path)
    try:
        await llm.complete_text([{"role": "user", "content": "Hi"}], prompt_version="t@test", max_tokens=1)
        sampled: list[int] = []
        inner = llm._llama.generate  # count what llama.cpp really samples (not wall time: CI load varies)

        def counting(*args: object, **kwargs: object) -> Iterator[int]:
            n = 0
            try:
                for token in inner(*args, **kwargs):
                    n += 1
                    yield token
            finally:
                sampled.append(n)

        llm._llama.generate = counting
        # The model is loaded now, so the short budget below times generation only.
        llm.settings = patient.model_copy(update={"timeout_s": 0.3})
        with pytest.raises(LLMTimeout):
            # The grammar forces >= 450 characters: far more than 0.3 s of generation on any CPU.
            await llm.complete_json(
                [{"role": "user", "content": "Write a long story about a hospital."}],
                Essay,
                prompt_version="t@test",
                max_tokens=1500,
            )
        # Generation is serialised, so this call runs only after the abandoned one stopped; the bound
        # turns a regression (1500 tokens) into a failure instead of a hang.
        llm.settings = patient
        result = await asyncio.wait_for(
            llm.complete_text([{"role": "user", "content": "Hi"}], prompt_version="t@test", max_tokens=1), 120
        )
        assert result.attempts == 1
        assert sampled[0] < 300  # the abandoned generation stopped at its next token, not at max_tokens
    finally:
        await llm.aclose()


# --- streaming ------------------------------------------------------------------------------------------

# A base model continues a story prefix (it answers most chat questions with an immediate end of turn).
STORY = [{"role": "user", "content": "Once upon a time, in a small hospital,"}]


async def test_server_streams_text(http_llm: OpenAICompatibleLLM) -> None:
    stream = http_llm.stream_text(STORY, prompt_version="text@test", max_tokens=16)
    deltas = [delta async for delta in stream]
    result = stream.result
    assert len(deltas) > 1 and "".join(deltas) == result.value
    assert result.attempts == 1 and result.model == "gemma-3-270m"
    assert result.completion_tokens <= 16  # 0 when the server ignores stream_options (no usage chunk)


async def test_embedded_streams_tokens(embedded: EmbeddedLLM) -> None:
    stream = embedded.stream_text(STORY, prompt_version="text@test", max_tokens=16)
    deltas = [delta async for delta in stream]
    result = stream.result
    assert len(deltas) > 1 and "".join(deltas) == result.value
    # Counted from the generation itself: llama-cpp-python reports no usage when streaming.
    assert 1 < result.completion_tokens <= 16 and result.prompt_tokens > 5
    assert result.model == embedded.model_name and result.attempts == 1


async def test_embedded_stream_closed_early_stops_generation(embedded: EmbeddedLLM) -> None:
    llm = EmbeddedLLM(embedded.settings, model_path=embedded.model_path)
    try:
        await llm.complete_text([{"role": "user", "content": "Hi"}], prompt_version="t@test", max_tokens=1)
        sampled: list[int] = []
        inner = llm._llama.generate  # count what llama.cpp really samples per generation

        def counting(*args: object, **kwargs: object) -> Iterator[int]:
            n = 0
            try:
                for token in inner(*args, **kwargs):
                    n += 1
                    yield token
            finally:
                sampled.append(n)

        llm._llama.generate = counting
        stream = llm.stream_text(STORY, prompt_version="t@test", max_tokens=2000)
        assert [await anext(stream), await anext(stream)]
        await stream.aclose()
        # Generation is serialised: this call runs only once the abandoned one has stopped. The bound
        # turns a regression (2000 tokens at a few per second) into a failure instead of a hang.
        result = await asyncio.wait_for(
            llm.complete_text([{"role": "user", "content": "Hi"}], prompt_version="t@test", max_tokens=1), 120
        )
        assert result.attempts == 1
        assert 2 <= sampled[0] < 200  # stopped within a few tokens of the close, not at max_tokens
    finally:
        await llm.aclose()

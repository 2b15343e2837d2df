"""Logs without secrets or the patient's words (issue 27, finding 3), scanned over a whole run.

Node a and node b run in-process (b mounted as a's federated node); one synthetic-PHI question with a
distinctive name, a lower-case husband's name, a town and a drug nobody studied (so that the evidence gate
counts it at NCBI: ``"quintaflozamide"[tiab]`` in the E-utilities URL) goes through every route: ``/ask``
(with a per-request NCBI key, PubMed beside a collection of node b), ``/ask/stream``, ``/search``,
``/v1/chat/completions`` streamed and not, MCP ``ask`` (and a call the tool's validation refuses),
``/collections/search``, ``/judge`` and ``GET /collections?remote=true``. Every record of every logger is
captured at DEBUG; not one may carry a key, a token or a word of the question.

Before the fix httpx logged every E-utilities URL at INFO (``esearch.fcgi?db=pubmed&term=...&api_key=...``):
the service's key, the caller's key and the search terms built from the patient's words; and the MCP SDK
logged a refused tool call's error, pydantic's text with ``input_value={'question': 'Hi, I'm Zofia ...'}``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
from pydantic import SecretStr

from app.api import create_app, get_judge
from app.container import build_pipeline
from app.judge import CrossSourceJudge
from app.settings import AccessSettings, ApiSettings, NodeSettings, Settings
from app.sources import FederationClient, SourcesService
from tests._fakes import Reply, ScriptedLLM
from tests._handbooks import INSTITUTIONS, BowEncoder, build_store, federation, node_settings

ASYNC = pytest.mark.asyncio(loop_scope="module")

# NCBI keys are 36 hex digits: the service's and one caller's, each distinctive.
SERVICE_NCBI_KEY = "c0ffee" * 6
CALLER_NCBI_KEY = "facade" * 6
API_KEY = "logscan-api-key-4f1d2e"  # a's X-API-Key
NODE_B_KEY = "logscan-node-b-key-9a7c"  # b's X-API-Key, configured at a
IDP_SECRET = "logscan-idp-secret-0123456789abcdef"
QUESTION = (
    "Hi, I'm Zofia Wojciechowska from Szczebrzeszyn. My husband john kowalczyk has angina; "
    "when can he travel abroad after his transplant, and does quintaflozamide help?"
)
# What of the question must never reach a log (the name, the town, the lower-case name, the rare word
# the gate counts at NCBI), and the secrets.
WORDS = ("zofia", "wojciechowska", "szczebrzeszyn", "kowalczyk", "quintaflozamide", "angina", "transplant")
SECRETS = (SERVICE_NCBI_KEY, CALLER_NCBI_KEY, API_KEY, NODE_B_KEY, IDP_SECRET)


def idp_token(audience: str) -> str:
    now = int(time.time())
    claims = {"iss": "https://idp.test", "aud": audience, "iat": now, "exp": now + 300, "sub": "u-42"}
    return jwt.encode({**claims, "org": "A", "name": "Zofia Wojciechowska"}, IDP_SECRET, algorithm="HS256")


def judge_llm() -> ScriptedLLM:
    def script(prompt: str) -> Reply:
        if "Does this response indicate" in prompt:
            return "NO"
        return {"classification": "CONSISTENT", "reasoning": "alike", "divergence_topic": None}

    return ScriptedLLM(script)


class Run:
    def __init__(self, client: httpx.AsyncClient, token: str) -> None:
        self.client = client
        self.token = token


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def run(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Run]:
    root: Path = tmp_path_factory.mktemp("logscan") / "root"
    build_store(root)
    access = AccessSettings(jwt_secret=SecretStr(IDP_SECRET), issuer="https://idp.test")
    remote = NodeSettings(
        name="b",
        url="https://b.test",
        audience="node-b",
        timeout_s=60,
        api_key=SecretStr(NODE_B_KEY),
        institutions=list(INSTITUTIONS.values()),
    )

    def settings(audience: str, **update: Any) -> Settings:
        s = node_settings(root, access=access.model_copy(update={"audience": audience}), **update)
        # No E-utilities cache: every route reaches the (local) E-utilities, with the service's key or the
        # caller's, and httpx sees each request.
        cache = s.eutils.cache.model_copy(update={"max_entries": 0})
        eutils = s.eutils.model_copy(update={"api_key": SecretStr(SERVICE_NCBI_KEY), "cache": cache})
        return s.model_copy(update={"eutils": eutils})

    settings_a = settings("node-a", federation=federation(remote, node_id="a"))
    settings_b = settings("node-b", federation=federation(node_id="b", peers=["a"]))
    api_a = ApiSettings(api_keys=[SecretStr(API_KEY)], rate_limit_per_minute=0)
    api_b = ApiSettings(api_keys=[SecretStr(NODE_B_KEY)], rate_limit_per_minute=0)
    async with build_pipeline(settings_a, use_llm=False, use_dense=False, use_passages=False) as pipeline:
        app_b = create_app(settings_b, api_settings=api_b, pipeline=pipeline)
        app_a = create_app(settings_a, api_settings=api_a, pipeline=pipeline)
        app_a.dependency_overrides[get_judge] = lambda: CrossSourceJudge(judge_llm())
        async with app_b.router.lifespan_context(app_b), app_a.router.lifespan_context(app_a):
            app_b.state.sources = SourcesService(settings_b, pipeline, encoder=BowEncoder(), reranker=None)
            fed = FederationClient(settings_a.federation, transport=httpx.ASGITransport(app=app_b))
            app_a.state.sources = SourcesService(
                settings_a, pipeline, encoder=BowEncoder(), reranker=None, federation=fed
            )
            transport = httpx.ASGITransport(app=app_a)
            headers = {"X-API-Key": API_KEY}
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8000", headers=headers, timeout=120
            ) as client:
                yield Run(client, idp_token("node-a"))


async def every_route(run: Run) -> None:
    c, bearer = run.client, {"Authorization": f"Bearer {run.token}"}
    ask = {"question": QUESTION, "ncbi_api_key": CALLER_NCBI_KEY}

    async def ok(r: httpx.Response) -> None:
        assert r.status_code == 200, (r.request.url.path, r.text[:500])

    await ok(await c.post("/ask", json={**ask, "sources": ["pubmed", "b/riverside"]}, headers=bearer))
    await ok(await c.post("/ask", json={**ask, "judge": True}))
    await ok(await c.post("/ask/stream", json={"question": QUESTION}))  # the service's NCBI key
    await ok(await c.post("/search", json=ask))
    chat = {"model": "cometa", "messages": [{"role": "user", "content": QUESTION}]}
    await ok(await c.post("/v1/chat/completions", json=chat))
    await ok(await c.post("/v1/chat/completions", json={**chat, "stream": True}))
    await ok(await c.post("/collections/search", json={"question": QUESTION, "collections": ["eastgate"]}))
    await ok(await c.get("/collections", params={"remote": "true"}, headers=bearer))
    answers = [{"source_id": "a", "text": QUESTION}, {"source_id": "b", "text": f"{QUESTION} Yes."}]
    await ok(await c.post("/judge", json={"question": QUESTION, "answers": answers}))
    mcp = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {API_KEY}"}
    for name, arguments in (
        ("ask", {"question": QUESTION}),
        ("search_literature", {"question": QUESTION, "max_results": 0}),  # refused by validation
        ("search_literature", {"question": QUESTION, "mindate": "2015"}),  # refused by the /ask validation
    ):
        call = {"method": "tools/call", "params": {"name": name, "arguments": arguments}}
        r = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, **call}, headers=mcp)
        await ok(r)
        assert "result" in r.json(), r.text[:500]
    # The refusal says where and why, without quoting the arguments back (the SDK logs it).
    refusal = r.json()["result"]["content"][0]["text"]
    assert "mindate and maxdate go together" in refusal and "Wojciechowska" not in refusal, refusal


@ASYNC
async def test_no_log_line_carries_a_secret_or_a_word_of_the_question(
    run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await every_route(run)
    records = [r for r in caplog.records if r.levelno <= logging.INFO]
    assert records  # the run logs (request lines, question hashes, the E-utilities requests)
    lines = [r.getMessage() for r in records]
    assert any("esearch" in line for line in lines)  # the E-utilities requests are still logged ...
    text = "\n".join(lines).lower()
    leaked = [s for s in (*SECRETS, *WORDS) if s.lower() in text]
    assert not leaked, [line for line in lines if any(s.lower() in line.lower() for s in leaked)][:5]
    assert "eyj" not in text  # ... and no JWT: neither the caller's token nor a's assertion to b
    assert "term=" not in text and "api_key=" not in text
    # Nor anything above INFO: the whole capture, formatted as a handler writes it.
    assert not [s for s in (*SECRETS, *WORDS) if s.lower() in caplog.text.lower()]


def test_any_logger_any_handler_gets_redacted_records(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.privacy import install_log_hygiene

    install_log_hygiene()
    caplog.set_level(logging.DEBUG)
    token = idp_token("node-a")
    # uvicorn's access log (were it switched on): the query string goes, the status stays a number. A server
    # an earlier test started in this process configured it (no propagation): as a deployment would have it.
    access = logging.getLogger("uvicorn.access")
    monkeypatch.setattr(access, "propagate", True)
    monkeypatch.setattr(access, "disabled", False)
    monkeypatch.setattr(access, "level", logging.NOTSET)
    path = f"/search?question=zofia+wojciechowska&ncbi_api_key={CALLER_NCBI_KEY}"
    access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5123", "GET", path, "1.1", 200)
    # A library echoing headers or a pydantic error, with any message shape.
    other = logging.getLogger("some.library")
    other.debug("headers: %r", {"authorization": f"Bearer {token}", "x-api-key": API_KEY})
    other.info(
        "1 validation error\n  [type=value_error, input_value={'question': 'I am Zofia'}, input_type=dict]"
    )
    other.info(f"token={token} api_key={SERVICE_NCBI_KEY}")
    # Libraries that write bodies and headers at DEBUG stay quiet whatever the root level.
    logging.getLogger("httpcore.http11").debug("send_request_headers %s", "Zofia")
    logging.getLogger("openai").debug("Request options: %s", {"messages": [{"content": "Zofia"}]})
    text = "\n".join(r.getMessage() for r in caplog.records)
    # Four records (uvicorn's handlers, when an earlier test configured them, may pass one twice).
    assert len({(r.name, r.getMessage()) for r in caplog.records}) == 4, text
    assert not [s for s in (*SECRETS, "zofia", "wojciechowska", "eyJ") if s.lower() in text.lower()], text
    assert caplog.records[0].args[-1] == 200  # type: ignore[index]
    assert "/search?[redacted]" in text and "input_value=[redacted], input_type=dict" in text

"""The HTTP API in-process: httpx.ASGITransport over create_app, offline pipeline on the bundled corpus."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from pydantic import BaseModel, SecretStr

from app import ApiSettings
from app.api import create_app, get_judge
from app.container import build_pipeline
from app.factories import build_dense_retriever
from app.judge import CrossSourceJudge
from app.pipeline import Pipeline
from app.settings import Settings
from retrieval import EutilsSettings
from retrieval.embed import DenseRetriever
from retrieval.eutils import LOCAL_BASE_URL, EutilsClient
from retrieval.evidence import EvidenceDoc
from retrieval.localncbi import LocalServerSettings, create_eutils_app, eutils_transport
from tests._fakes import Reply, ScriptedLLM

pytestmark = pytest.mark.asyncio(loop_scope="module")

NARRATIVE = (
    "Hi I'm Linda Parker. My mom has a mass on her pancreas and her CA 19 9 came back really high, "
    "is the whipple pointless?"
)
M = TypeVar("M", bound=BaseModel)


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings().offline()


@pytest.fixture(scope="module")
def dense(settings: Settings) -> DenseRetriever:
    return build_dense_retriever(settings)  # bundled MiniLM index: built once per machine, then loaded


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pipeline(settings: Settings, dense: DenseRetriever) -> AsyncIterator[Pipeline]:
    async with build_pipeline(settings, use_llm=False, dense=dense) as p:
        yield p


@asynccontextmanager
async def serve(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(settings: Settings, pipeline: Pipeline) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    async with serve(app) as c:
        yield c


COMPARISON = {
    "classification": "DIVERGENT",
    "reasoning": "one source recommends surgery, the other does not",
    "divergence_topic": "surgery",
    "clinical_significance": "high",
}


def api_llm() -> ScriptedLLM:
    """Replies by prompt: absence check -> NO, pair comparison -> DIVERGENT, else a cited answer."""

    def script(prompt: str) -> Reply:
        if "Does this response indicate" in prompt:
            return "NO"
        if "ABSENT / CONSISTENT / COMPLEMENTARY / DIVERGENT / CONTRADICTORY" in prompt:
            return COMPARISON
        return "Surgery can help [PMID:19459018]."

    return ScriptedLLM(script)


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields["event"], json.loads(fields["data"])))
    return events


# --- /ask ---------------------------------------------------------------------------------------------


async def test_ask_narrative_gives_a_cited_extractive_answer(client: httpx.AsyncClient) -> None:
    r = await client.post("/ask", json={"question": NARRATIVE}, headers={"X-Request-ID": "req-123"})
    assert r.status_code == 200, r.text
    assert r.headers["x-request-id"] == "req-123"
    body = r.json()
    assert body["request_id"] == "req-123"
    assert body["mode"] == "extractive"  # offline: no LLM
    evidence_pmids = {d["pmid"] for d in body["evidence"]}
    assert body["citations"] and {c["pmid"] for c in body["citations"]} <= evidence_pmids
    cite = body["citations"][0]
    assert cite["url"].startswith("https://pubmed.ncbi.nlm.nih.gov/") and cite["title"]
    assert "19459018" in [d["pmid"] for d in body["evidence"][:3]]
    assert body["evidence"][0]["provenance"] and body["passages"]
    assert body["query"]["tiers"] and body["query"]["rewriter"]["path"] == "deterministic"
    assert {"understand", "esearch", "answer"} <= set(body["timings_ms"])
    assert "Linda" not in r.text and "Parker" not in r.text  # PHI scrubbed from the query plan


async def test_ask_generates_a_request_id_and_respects_max_documents(client: httpx.AsyncClient) -> None:
    r = await client.post("/ask", json={"question": NARRATIVE, "max_documents": 2})
    assert r.status_code == 200
    assert len(r.headers["x-request-id"]) == 32 and r.json()["request_id"] == r.headers["x-request-id"]
    assert len(r.json()["evidence"]) == 2
    assert {p["pmid"] for p in r.json()["passages"]} <= {d["pmid"] for d in r.json()["evidence"]}


async def test_zero_evidence_is_insufficient_and_never_calls_the_llm(
    settings: Settings, pipeline: Pipeline
) -> None:
    llm = api_llm()
    from app.answer import Answerer

    app = create_app(settings, pipeline=pipeline, answerer=Answerer(llm))
    async with serve(app) as c:
        r = await c.post("/ask", json={"question": "Is the whipple worth it?", "documents": []})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "insufficient_evidence" and body["citations"] == [] and body["evidence"] == []
    assert llm.versions == []


async def test_bring_your_own_documents_replace_retrieval(client: httpx.AsyncClient) -> None:
    docs = [
        {
            "pmid": "123",
            "title": "Aspirin trial",
            "text": "Aspirin reduced headache duration in adults.",
            "year": 2020,
        },
        {"title": "No PMID", "text": "Ibuprofen also relieved tension headache in a small trial."},
    ]
    r = await client.post("/ask", json={"question": "Does aspirin help headache?", "documents": docs})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [d["pmid"] for d in body["evidence"]] == ["123", "U2"]
    assert body["query"] is None and body["mode"] == "extractive"
    assert {c["pmid"] for c in body["citations"]} <= {"123", "U2"}
    assert any("retrieval skipped" in w for w in body["warnings"])


async def test_choice_question_without_llm_is_marked(client: httpx.AsyncClient) -> None:
    payload = {"question": NARRATIVE, "options": {"A": "yes", "B": "no"}, "max_documents": 3}
    r = await client.post("/ask", json=payload)
    assert r.status_code == 200, r.text
    assert r.json()["mode"] in {"extractive", "insufficient_evidence"} and r.json()["warnings"]


@pytest.mark.parametrize(
    ("payload", "where"),
    [
        ({"question": ""}, "question"),
        ({"question": "x" * 4001}, "question"),
        ({"question": "ok?", "mindate": "2010"}, "mindate and maxdate"),
        ({"question": "ok?", "mindate": "2010-01", "maxdate": "2012"}, "YYYY"),
        ({"question": "ok?", "options": {"A": "only one"}}, "options"),
        ({"question": "ok?", "options": {"a": "x", "b": "y"}}, "capital"),
        ({"question": "ok?", "max_documents": 51}, "max_documents"),
        ({"question": "ok?", "answer_type": "choice"}, "needs options"),
        ({"question": "ok?", "surprise": 1}, "surprise"),
    ],
)
async def test_invalid_requests_are_422_with_a_clear_message(
    client: httpx.AsyncClient, payload: dict[str, Any], where: str
) -> None:
    r = await client.post("/ask", json=payload)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "invalid request" and where in body["reason"] and body["request_id"]


async def test_malformed_json_is_422(client: httpx.AsyncClient) -> None:
    r = await client.post("/ask", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["error"] == "invalid request"


async def test_oversized_body_is_413_before_parsing(settings: Settings, pipeline: Pipeline) -> None:
    app = create_app(settings, api_settings=ApiSettings(max_body_bytes=2048), pipeline=pipeline)
    async with serve(app) as c:
        r = await c.post("/ask", json={"question": "x" * 3000})
        assert r.status_code == 413 and r.json()["error"] == "request too large"
        assert r.headers["x-request-id"]

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while reading
            yield b'{"question": "'
            yield b"y" * 4000
            yield b'"}'

        r = await c.post("/ask", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413


async def test_api_keys_401_then_per_key_429(settings: Settings, pipeline: Pipeline) -> None:
    api = ApiSettings(api_keys=[SecretStr("k1"), SecretStr("k2")], rate_limit_per_minute=2)
    app = create_app(settings, api_settings=api, pipeline=pipeline)
    body = {"question": "Is aspirin safe?", "documents": []}
    async with serve(app) as c:
        assert (await c.post("/ask", json=body)).status_code == 401
        r = await c.post("/ask", json=body, headers={"X-API-Key": "wrong"})
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        for _ in range(2):
            assert (await c.post("/ask", json=body, headers={"X-API-Key": "k1"})).status_code == 200
        r = await c.post("/ask", json=body, headers={"X-API-Key": "k1"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        # The limit is per key: k2 still has its own budget.
        assert (await c.post("/ask", json=body, headers={"X-API-Key": "k2"})).status_code == 200
        # Ops endpoints stay open.
        assert (await c.get("/healthz")).status_code == 200


# The limiter's own window math (memory and Redis): tests/test_limits.py.


# --- failures -----------------------------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module")
async def broken_pipeline(settings: Settings, dense: DenseRetriever) -> AsyncIterator[Pipeline]:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    eutils = EutilsSettings(base_url="http://eutils.invalid/", max_attempts=1, backoff_base_s=0)
    client = EutilsClient(eutils, transport=httpx.MockTransport(refuse))
    async with build_pipeline(settings, client=client, use_llm=False, dense=dense) as p:
        yield p


async def test_eutils_down_is_503_not_500(settings: Settings, broken_pipeline: Pipeline) -> None:
    app = create_app(settings, pipeline=broken_pipeline)
    async with serve(app) as c:
        r = await c.post("/ask", json={"question": NARRATIVE})
        assert r.status_code == 503, r.text
        body = r.json()
        assert body["error"] == "NCBI unavailable" and "ESearch" in body["reason"] and body["request_id"]
        assert "Traceback" not in r.text
        r = await c.post("/search", json={"question": NARRATIVE})
        assert r.status_code == 503
        r = await c.get("/readyz")
        assert r.status_code == 503 and r.json()["checks"]["eutils"]["ok"] is False
        r = await c.post("/ask/stream", json={"question": NARRATIVE})
        events = sse_events(r.text)
        assert events[-1][0] == "error" and events[-1][1]["error"] == "NCBI unavailable"
        assert "done" not in [name for name, _ in events]


class FirstSearchFails(httpx.AsyncBaseTransport):
    """The local E-utilities server, except that the first ESearch gets a connection error."""

    def __init__(self) -> None:
        self.inner = eutils_transport(create_eutils_app(LocalServerSettings()))
        self.failed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if "esearch" in request.url.path and not self.failed:
            self.failed = True
            raise httpx.ConnectError("connection reset", request=request)
        return await self.inner.handle_async_request(request)


async def test_partial_eutils_failure_degrades_with_a_warning(
    settings: Settings, dense: DenseRetriever
) -> None:
    update = {"max_attempts": 1, "backoff_base_s": 0, "base_url": LOCAL_BASE_URL}
    client = EutilsClient(settings.eutils.model_copy(update=update), transport=FirstSearchFails())
    async with build_pipeline(settings, client=client, use_llm=False, dense=dense) as p:
        app = create_app(settings, pipeline=p)
        async with serve(app) as c:
            r = await c.post("/ask", json={"question": NARRATIVE})
    assert r.status_code == 200, r.text
    body = r.json()
    assert any(w.startswith("degraded:") for w in body["warnings"])
    # The other search still brought evidence; whether it is close enough to answer is the gate's call
    # (without the strict search's match the README question's best similarity, 0.41, is under the floor).
    assert body["evidence"] and (body["citations"] or body["mode"] == "insufficient_evidence")


async def test_unexpected_exception_is_a_generic_500_json(settings: Settings, pipeline: Pipeline) -> None:
    class Exploding:
        async def judge(self, question: str, answers: Any) -> Any:
            raise RuntimeError("secret patient detail")

    app = create_app(settings, pipeline=pipeline)
    app.dependency_overrides[get_judge] = lambda: Exploding()
    async with serve(app) as c:
        r = await c.post(
            "/judge",
            json={
                "question": "q?",
                "answers": [{"source_id": "a", "text": "x"}] * 1 + [{"source_id": "b", "text": "y"}],
            },
        )
    assert r.status_code == 500
    assert r.json()["error"] == "internal error" and "secret" not in r.text and r.json()["request_id"]


# --- /search, /judge, ops -----------------------------------------------------------------------------


async def test_search_returns_the_pipeline_json(client: httpx.AsyncClient) -> None:
    r = await client.post("/search", json={"question": NARRATIVE, "mindate": "2005", "maxdate": "2015"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["pmids"] and body["tiers"] and body["evidence"][0]["pmid"] == body["pmids"][0]
    assert all(2005 <= d["year"] <= 2015 for d in body["evidence"])


@pytest.mark.parametrize("key", ["k" * 5000, "0" * 5000, "0123456789abcdef0123456789abcdef012", "not-a-key"])
async def test_an_ncbi_api_key_not_in_ncbis_format_is_422(client: httpx.AsyncClient, key: str) -> None:
    # Issue 27 #7: any string was a key (5,000 characters: 200), each one a fresh NCBI rate budget.
    for path in ("/search", "/ask"):
        r = await client.post(path, json={"question": NARRATIVE, "ncbi_api_key": key})
        assert r.status_code == 422, r.text
        assert "36 hexadecimal characters" in r.json()["reason"] and key not in r.text


async def test_an_ncbi_api_key_in_ncbis_format_is_accepted(client: httpx.AsyncClient) -> None:
    key = "0123456789abcdef0123456789ABCDEF0123"
    r = await client.post("/search", json={"question": NARRATIVE, "ncbi_api_key": key})
    assert r.status_code == 200, r.text
    assert key not in r.text


async def test_judge_is_503_without_an_llm(client: httpx.AsyncClient) -> None:
    answers = [{"source_id": "1", "text": "yes"}, {"source_id": "2", "text": "no"}]
    r = await client.post("/judge", json={"question": "Is it safe?", "answers": answers})
    assert r.status_code == 503 and r.json()["error"] == "LLM not configured"


async def test_judge_with_a_scripted_llm(settings: Settings, pipeline: Pipeline) -> None:
    llm = api_llm()
    app = create_app(settings, pipeline=pipeline)
    app.dependency_overrides[get_judge] = lambda: CrossSourceJudge(llm)
    answers = [
        {"source_id": "111", "text": "Surgery improves survival."},
        {"source_id": "222", "text": "Surgery does not change survival."},
        {
            "source_id": "333",
            "text": "NOT ADDRESSED: This source does not contain information on this topic.",
        },
    ]
    async with serve(app) as c:
        r = await c.post("/judge", json={"question": "Does surgery help?", "answers": answers})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["sources"] == ["111", "222", "333"]
    assert body["counts"]["DIVERGENT"] == 1 and body["counts"]["ABSENT"] == 2
    assert body["matrix"][0][1] == "DIVERGENT" and body["any_div"] is True and body["note"]
    assert body["r_abs"] == pytest.approx(1 / 3) and body["r_abs_pairs"] == pytest.approx(2 / 3)
    # Absence screen for the two real answers, one compare call; the NOT ADDRESSED one needs none.
    assert sorted(llm.versions) == ["judge_absence@1", "judge_absence@1", "judge_compare@2"]


async def test_ask_with_judge_without_llm_warns(client: httpx.AsyncClient) -> None:
    r = await client.post("/ask", json={"question": NARRATIVE, "judge": True, "max_documents": 3})
    assert r.status_code == 200
    assert r.json()["judge"] is None and any("judge requested" in w for w in r.json()["warnings"])


async def test_health_ready_metrics_docs(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    r = await client.get("/readyz")
    assert r.status_code == 200, r.text
    checks = r.json()["checks"]
    assert checks["eutils"]["ok"] and checks["dense"]["vectors"] > 0 and checks["llm"]["configured"] is False
    await client.post("/ask", json={"question": ""})
    ok = await client.post(
        "/ask", json={"question": "does radiotherapy for prostate cancer cause bowel problems?"}
    )
    assert ok.status_code == 200
    r = await client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'cometa_api_requests_total{method="POST",route="/ask",status="422"}' in text
    assert "cometa_api_request_seconds_bucket" in text and "cometa_eutils_requests_total" in text
    # Per-stage latency, answer modes, zero-hits per tier and fallbacks are all exposed.
    assert 'cometa_stage_seconds_count{stage="understand"}' in text
    assert 'cometa_stage_seconds_count{stage="answer"}' in text
    assert 'cometa_answers_total{mode="extractive"}' in text and "cometa_citations_removed_total" in text
    assert "cometa_adapte_tier_runs_total" in text and "cometa_rewriter_fallback_total" in text
    # Cache sizes, with their bounds (bytes as well as entries), for every cache the answer filled.
    for cache in ("passages", "dense_queries", "rerank_vectors"):
        assert f'cometa_cache_bytes{{cache="{cache}"}}' in text
        assert f'cometa_cache_max_bytes{{cache="{cache}"}}' in text
    entries = re.search(r'cometa_cache_entries\{cache="dense_queries"\} (\S+)', text)
    assert entries is not None and float(entries.group(1)) >= 1  # at least this question, encoded once
    assert (await client.get("/openapi.json")).json()["paths"]["/ask"]
    assert (await client.get("/docs")).status_code == 200
    r = await client.get("/nope")
    assert r.status_code == 404 and r.json()["error"] == "Not Found"


async def test_cors_preflight(settings: Settings, pipeline: Pipeline) -> None:
    app = create_app(
        settings, api_settings=ApiSettings(cors_origins=["https://app.example"]), pipeline=pipeline
    )
    async with serve(app) as c:
        headers = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
        r = await c.options("/ask", headers=headers)
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        r = await c.options("/ask", headers={**headers, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in r.headers


# --- streaming ----------------------------------------------------------------------------------------


async def test_stream_events_in_order_ending_with_done(client: httpx.AsyncClient) -> None:
    started = time.perf_counter()
    async with client.stream("POST", "/ask/stream", json={"question": NARRATIVE, "max_documents": 4}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        body = (await r.aread()).decode()
    assert time.perf_counter() - started < 60
    events = sse_events(body)
    names = [n for n, _ in events]
    stages = [(d["stage"], d["status"]) for n, d in events if n == "stage"]
    assert stages == [
        ("understand", "started"),
        ("understand", "finished"),
        ("retrieve", "started"),
        ("retrieve", "finished"),
        ("answer", "started"),
        ("answer", "finished"),
    ]
    assert names.index("evidence") < names.index("answer") < names.index("done") == len(names) - 1
    answer = dict(events)["answer"]
    evidence = dict(events)["evidence"]
    assert answer["mode"] == "extractive" and len(evidence["documents"]) == 4
    assert dict(events)["done"]["request_id"]


class _CrashingEncoder:
    """An encoder whose every document encode raises (a model crash on some text)."""

    name, dim, query_max_length, doc_max_length = "crash", 8, 64, 256

    def encode_queries(self, texts: Any, batch_size: int = 32) -> Any:
        raise RuntimeError("model crashed")

    def encode_documents(self, docs: Any, batch_size: int = 32, on_progress: Any = None) -> Any:
        raise RuntimeError("model crashed")


async def test_a_passage_encoder_failure_is_a_warning_not_a_500(
    client: httpx.AsyncClient, pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval.embed import EncodeBatcher

    passages = await pipeline.passage_retriever()
    assert passages is not None
    failing = EncodeBatcher(_CrashingEncoder(), window_s=0.001)
    # Whatever the passage cache holds, this request must encode: the failing encoder answers.
    monkeypatch.setattr(passages, "_passage_vectors", lambda items: failing.encode_documents([("", "x")]))
    r = await client.post("/search", json={"question": NARRATIVE})
    assert r.status_code == 200, r.text
    body = r.json()
    assert any("passage retrieval unavailable" in w for w in body["warnings"]), body["warnings"]
    assert body["pmids"] and body.get("context") is None


@pytest.mark.parametrize("mode", ["replace", "augment"])
async def test_ask_with_documents_and_a_failing_passage_encoder_is_a_warning_not_a_500(
    client: httpx.AsyncClient, pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    from retrieval.embed import EncodeBatcher

    passages = await pipeline.passage_retriever()
    assert passages is not None
    failing = EncodeBatcher(_CrashingEncoder(), window_s=0.001)
    monkeypatch.setattr(passages, "_passage_vectors", lambda items: failing.encode_documents([("", "x")]))
    docs = [{"pmid": "123", "title": "Aspirin trial", "text": "Aspirin reduced headache duration in adults."}]
    payload = {"question": "Does aspirin help headache?", "documents": docs, "documents_mode": mode}
    r = await client.post("/ask", json=payload)
    assert r.status_code == 200, r.text
    body = r.json()
    assert sum("passage retrieval unavailable" in w for w in body["warnings"]) == 1, body["warnings"]
    if mode == "replace":
        assert [d["pmid"] for d in body["evidence"]] == ["123"]


def record_encoded(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of every document the passage stage is asked to segment and encode, in order."""
    encoded: list[str] = []
    passages_for = pipeline.passages_for

    async def recording(question: str, docs: Sequence[EvidenceDoc], warnings: list[str]) -> Any:
        encoded.extend(d.pmid for d in docs)
        return await passages_for(question, docs, warnings)

    monkeypatch.setattr(pipeline, "passages_for", recording)
    return encoded


async def test_augmenting_documents_past_max_documents_are_never_encoded(
    client: httpx.AsyncClient, pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Attacker: 200 documents beside retrieval (the body limit allows ~240,000 characters of them) while only
    # max_documents are answered from; passages for the rest were segmented and encoded, then thrown away
    # (worst_case bench: 24 s CPU, 320 MB for one request).
    encoded = record_encoded(pipeline, monkeypatch)
    mine = [
        {"pmid": str(9_000_000 + i), "title": f"Study {i}", "text": "Chemotherapy helped."}
        for i in range(200)
    ]
    question = "my dad has lung cancer, will chemotherapy help him live longer?"
    payload = {"question": question, "documents": mine, "documents_mode": "augment", "max_documents": 10}
    r = await client.post("/ask", json=payload)
    assert r.status_code == 200, r.text
    answered = {d["pmid"] for d in r.json()["evidence"]}
    assert len(answered) <= 10
    assert set(encoded) & {d["pmid"] for d in mine} <= answered  # only documents answered from were encoded


async def test_documents_past_the_encoding_bound_are_refused_before_any_work(
    client: httpx.AsyncClient, pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Attacker: documents to replace retrieval, 245,000 characters within the body limit: every one is
    # segmented and encoded (worst_case bench: 5.9 s CPU, 242 MB for one request). The bound is 20,000.
    encoded = record_encoded(pipeline, monkeypatch)
    text = "Chemotherapy helped some patients live longer in this trial. " * 80  # 4,960 characters
    mine = [{"title": f"Study {i}", "text": text} for i in range(50)]
    question = "will chemotherapy help my dad live longer?"
    for route in ("/ask", "/ask/stream"):
        r = await client.post(
            route, json={"question": question, "documents": mine, "documents_mode": "replace"}
        )
        assert r.status_code == 422, r.text
        assert "20000" in r.json()["reason"]
    assert encoded == []
    r = await client.post(
        "/ask", json={"question": question, "documents": mine[:4], "documents_mode": "replace"}
    )
    assert r.status_code == 200 and len(r.json()["evidence"]) == 4

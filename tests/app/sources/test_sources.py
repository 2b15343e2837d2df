"""Asking across sources in-process: handbooks as collections, the per-source answers, the judge matrix,
rank fusion, access decisions over HTTP (ASGI) and the federation client's statuses.

The collections are H8's synthetic handbooks (travel abroad after transplant: Northbridge 3 months,
Riverside 6, Lakeshore 12, Hillcrest silent) plus Eastgate, written here, which agrees with Northbridge.
A bag-of-words hashing encoder stands in for MiniLM (the e2e test runs the real one); the low whole-document
threshold sends every handbook down the section/chunk route, so citations carry sections and pages.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
from pydantic import SecretStr

from app.answer import Answerer, build_evidence_context, extractive_answer
from app.api import create_app
from app.container import build_pipeline
from app.frontends import across_response, fused_out
from app.judge import LABELS, NOT_ADDRESSED, CrossSourceJudge
from app.pipeline import Pipeline
from app.settings import (
    AccessSettings,
    ApiSettings,
    FederationSettings,
    NodeSettings,
    Policy,
    SourcesSettings,
)
from app.sources import (
    AccessEngine,
    FederationClient,
    SourcesService,
    Subject,
    UnknownSource,
    evidence_from_json,
    evidence_to_json,
    fuse_sources,
    load_policies,
    parse_sources,
)
from llm import LLMTimeout
from retrieval.collections import (
    CollectionStore,
    InstEvidence,
    SectionRef,
)
from tests._fakes import Reply, ScriptedLLM
from tests._handbooks import (
    INSTITUTIONS,
    ORDER,
    BowEncoder,
    build_store,
    federation,
    handbook_llm,
    months,
    node_key,
    node_settings,
)

ASYNC = pytest.mark.asyncio(loop_scope="module")

QUESTION = "When can I travel abroad after my transplant?"
SECRET = "sources-test-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("collections") / "root"
    build_store(root)
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pipeline(root: Path) -> AsyncIterator[Pipeline]:
    async with build_pipeline(node_settings(root), use_llm=False, use_dense=False, use_passages=False) as p:
        yield p


def service(root: Path, pipeline: Pipeline, **update: Any) -> SourcesService:
    return SourcesService(node_settings(root, **update), pipeline, encoder=BowEncoder(), reranker=None)


# --- pure parts -----------------------------------------------------------------------------------------


def test_parse_sources() -> None:
    refs = parse_sources(["pubmed", "a", "n1/b", "n1/*"], local=["a"], nodes=["n1"])
    assert [(r.kind, r.node, r.collection) for r in refs] == [
        ("pubmed", None, None),
        ("collection", None, "a"),
        ("remote", "n1", "b"),
        ("remote", "n1", "*"),
    ]
    # A caller's unknown names are refs like any other (answered "not available to you" later); only the
    # operator's strict parse raises, and never lists what exists.
    assert [r.kind for r in parse_sources(["n2/b", "zz"], local=["a"], nodes=["n1"])] == [
        "remote",
        "collection",
    ]
    with pytest.raises(UnknownSource, match="unknown node 'n2'") as info:
        parse_sources(["n2/b"], local=[], nodes=["n1"], strict=True)
    assert "n1" not in str(info.value)
    with pytest.raises(UnknownSource, match="unknown source 'zz'"):
        parse_sources(["zz"], local=["a"], nodes=[], strict=True)


def ev(collection: str, doc_id: str, text: str, score: float = 0.5) -> InstEvidence:
    return InstEvidence(
        collection, doc_id, doc_id.title(), "chunks", text, (SectionRef("s1", "Travel", 3, 4),), score
    )


def test_extractive_answer_cites_the_matching_sentence() -> None:
    evidence = [
        ev(
            "a",
            "hb",
            "Take your tablets daily. Do not travel abroad for 6 months after the transplant. Eat well.",
        )
    ]
    answer, _ = extractive_answer(build_evidence_context(evidence), 2, question=QUESTION)
    assert answer == "Do not travel abroad for 6 months after the transplant. [DOC:a/hb §Travel pp.3-4]"
    unrelated = build_evidence_context([ev("a", "hb", "Take your tablets daily with water.")])
    assert extractive_answer(unrelated, 2, question=QUESTION)[0] == NOT_ADDRESSED


def test_fusion_uses_ranks_never_scores() -> None:
    ranked = {
        "a": [ev("a", "x", "", 900.0), ev("a", "y", "", 800.0)],  # a cross-encoder's logits
        "b": [ev("b", "x", "", 0.2)],  # another node's cosine: tiny, yet its best is as good as a's best
    }
    fused = fuse_sources(ranked, key=lambda e: e.doc_id, k=60)
    assert [(f.source, f.item.doc_id, f.source_rank, f.rank) for f in fused] == [
        ("a", "x", 1, 1),
        ("b", "x", 1, 2),  # same id in another source stays its own item
        ("a", "y", 2, 3),
    ]
    assert fused[0].rrf_score == pytest.approx(1 / 61) and fused[1].rrf_score == pytest.approx(1 / 61)
    # Scaling one source's scores changes nothing.
    ranked["b"] = [ev("b", "x", "", 1e9)]
    assert [f.item.doc_id for f in fuse_sources(ranked, key=lambda e: e.doc_id)] == ["x", "x", "y"]


def test_evidence_json_round_trip() -> None:
    original = ev("a", "hb", "text", 0.25)
    back = evidence_from_json(json.loads(json.dumps(evidence_to_json(original))))
    assert back == original and back.cite() == original.cite()
    with pytest.raises(ValueError, match="route"):
        evidence_from_json({**evidence_to_json(original), "route": "everything"})


# --- the judge across handbooks ----------------------------------------------------------------------------


@ASYNC
async def test_scripted_judge_over_the_handbooks(root: Path, pipeline: Pipeline) -> None:
    svc = service(root, pipeline)
    llm = handbook_llm()
    judge = CrossSourceJudge(llm, max_sources=8)
    refs = parse_sources(ORDER, local=svc.local_names(), nodes=[])
    out = await svc.ask(
        QUESTION,
        refs,
        understanding=await svc.pipeline.understander.understand(QUESTION),
        subject=svc.subject(None),
        answerer=Answerer(None),
        judge=judge,
    )
    assert [o.name for o in out.sources] == ORDER
    assert all(o.status.status == "ok" for o in out.sources)
    by = {o.name: o for o in out.sources}
    assert {n: months(o.answer.text) if o.answer else None for n, o in by.items()} == {
        "northbridge": "3",
        "riverside": "6",
        "lakeshore": "12",
        "hillcrest": None,
        "eastgate": "3",
    }
    assert by["hillcrest"].answer is not None and by["hillcrest"].answer.absent
    report = out.judge
    assert report is not None and list(report.sources) == ORDER
    m = {(a, b): report.matrix[i][j] for i, a in enumerate(ORDER) for j, b in enumerate(ORDER) if i != j}
    assert m["northbridge", "riverside"] == m["northbridge", "lakeshore"] == "DIVERGENT"
    assert m["riverside", "lakeshore"] == m["lakeshore", "eastgate"] == "DIVERGENT"
    assert m["northbridge", "eastgate"] == m["eastgate", "northbridge"] == "CONSISTENT"
    assert {m["hillcrest", x] for x in ORDER if x != "hillcrest"} == {"ABSENT"}
    assert report.counts == {
        "ABSENT": 4,
        "CONSISTENT": 1,
        "COMPLEMENTARY": 0,
        "DIVERGENT": 5,
        "CONTRADICTORY": 0,
    }
    assert report.r_abs == pytest.approx(1 / 5) and report.r_abs_pairs == pytest.approx(0.4)
    assert report.r_div == pytest.approx(5 / 6) and report.r_con == pytest.approx(1 / 6)
    assert report.any_div and report.pairs_judged_by_llm == 6  # absent pairs never reach the LLM
    # The patient's note: their hospital (the first listed) against the others, with section and page.
    note = out.differences or ""
    assert note.startswith(
        "Your hospital's guidance (Northbridge Hospital (northbridge), "
        "[DOC:northbridge/northbridge-kidney §Travel after your transplant]) differs from "
        "Riverside Medical Center (riverside) ([DOC:riverside/riverside-liver §Travel]) "
        "on how long to wait before travelling abroad."
    )
    assert (
        "differs from Lakeshore Transplant Institute (lakeshore) ([DOC:lakeshore/lakeshore-transplant" in note
    )
    assert re.search(r"\[DOC:lakeshore/lakeshore-transplant §[^\]]*Travel[^\]]* p\.\d\]", note)  # PDF: a page
    assert "Eastgate Clinic (eastgate) ([DOC:eastgate/eastgate §Travel abroad]) gives the same advice" in note
    assert "Hillcrest University Hospital (hillcrest) does not address this question" in note
    assert out.mode == "llm" and out.model == "scripted"
    # Long handbooks: sections or (weak evidence) the whole document; Eastgate (short) whole. Either
    # way the citation carries a section, and the PDF's a page.
    routes = {o.name: o.evidence[0].route for o in out.sources}
    assert routes.pop("eastgate") == "whole"
    assert set(routes.values()) <= {"chunks", "whole_fallback"}
    assert all(o.evidence[0].sections for o in out.sources)
    assert {f.source for f in out.fused} == set(ORDER)


@ASYNC
async def test_offline_answers_are_extractive_and_the_judge_is_skipped(
    root: Path, pipeline: Pipeline
) -> None:
    svc = service(root, pipeline)
    refs = parse_sources(["riverside", "hillcrest", "lakeshore"], local=svc.local_names(), nodes=[])
    out = await svc.ask(
        QUESTION,
        refs,
        understanding=await svc.pipeline.understander.understand(QUESTION),
        subject=svc.subject(None),
        answerer=Answerer(None),
        judge=None,
    )
    by = {o.name: o for o in out.sources}
    assert by["riverside"].answer_mode == "extractive" and by["lakeshore"].answer_mode == "extractive"
    assert "6 months" in (by["riverside"].answer.text if by["riverside"].answer else "")
    assert "12 months" in (by["lakeshore"].answer.text if by["lakeshore"].answer else "")
    assert "[DOC:lakeshore/" in (by["lakeshore"].answer.text if by["lakeshore"].answer else "")
    assert by["hillcrest"].answer_mode == "not_addressed"
    assert out.judge is None and out.mode == "extractive"
    assert any(w.startswith("judge skipped: comparing sources needs an LLM") for w in out.warnings)


@ASYNC
async def test_pubmed_beside_a_handbook(root: Path, pipeline: Pipeline) -> None:
    """PubMed is one more source: retrieved by the pipeline, answered from its abstracts, judged."""
    base = handbook_llm()

    def script(prompt: str) -> Reply:
        if "Source Context (PubMed (published research))" in prompt:
            pmid = re.search(r"\[PMID:(\d+)\]", prompt)
            assert pmid, "the PubMed source is answered from PMID-labelled evidence"
            return f"Recipients waited 12 months before travelling abroad [PMID:{pmid.group(1)}]."
        return base.script(prompt)

    svc = service(root, pipeline)
    refs = parse_sources(["eastgate", "pubmed"], local=svc.local_names(), nodes=[])
    judge = CrossSourceJudge(ScriptedLLM(script))
    out = await svc.ask(
        QUESTION,
        refs,
        understanding=await svc.pipeline.understander.understand(QUESTION),
        subject=svc.subject(None),
        answerer=Answerer(None),
        judge=judge,
    )
    pubmed = out.sources[1]
    assert pubmed.kind == "pubmed" and pubmed.status.status == "ok" and pubmed.docs
    assert pubmed.citations and pubmed.answer_mode == "llm"
    assert out.judge is not None and out.judge.matrix[0][1] == "DIVERGENT"
    assert (out.differences or "").startswith(
        "Your hospital's guidance (Eastgate Clinic (eastgate), [DOC:eastgate/eastgate §Travel abroad]) "
        "differs from the published research (PMID:"
    )
    assert any(f.source == "pubmed" and fused_out(f).cite.startswith("[PMID:") for f in out.fused)
    # Offline, PubMed's answer is the pipeline's extractive one, with its PMID citations.
    offline = await svc.ask(
        QUESTION,
        refs,
        understanding=await svc.pipeline.understander.understand(QUESTION),
        subject=svc.subject(None),
        answerer=Answerer(None),
        judge=None,
    )
    pm = offline.sources[1]
    assert pm.answer_mode == "extractive" and pm.answer is not None and "[PMID:" in pm.answer.text
    assert pm.citations and all(c.pmid in pm.answer.text for c in pm.citations)


# --- over HTTP: access decisions at this node ---------------------------------------------------------------

POLICIES = [
    {"id": "nb-staff", "collections": ["northbridge"], "action": "search", "subject": {"org": "northbridge"}},
    {
        "id": "nb-clinicians",
        "collections": ["northbridge"],
        "action": "search",
        "subject": {"role": "clinician"},
    },
    {
        "id": "lake-patients-docs",
        "collections": ["lakeshore"],
        "action": "retrieve",
        "document": {"audience": "staff"},
    },
]


def token(**claims: Any) -> str:
    return jwt.encode({"exp": int(time.time()) + 300, **claims}, SECRET, algorithm="HS256")


def auth(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path, pipeline: Pipeline) -> AsyncIterator[httpx.AsyncClient]:
    access = AccessSettings(
        jwt_secret=SecretStr(SECRET), policies=[Policy.model_validate(p) for p in POLICIES]
    )
    # A copy of the store in which Northbridge is private (the other tests see it public).
    private_root = root.parent / "private-root"
    if not private_root.exists():
        shutil.copytree(root, private_root)
    store = CollectionStore(private_root)
    store.set_meta(store.get("northbridge").meta.model_copy(update={"private": True}))
    settings = node_settings(private_root, access=access)
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    async with app.router.lifespan_context(app):
        app.state.sources = SourcesService(settings, pipeline, encoder=BowEncoder(), reranker=None)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://node-a") as c:
            yield c


@ASYNC
async def test_http_gate_and_document_decisions(client: httpx.AsyncClient) -> None:
    body = {"question": QUESTION, "sources": ["northbridge", "riverside"]}
    # Anonymous: the private collection is denied (listed, no content), the public one answered.
    r = await client.post("/ask", json=body)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["sources_status"]["northbridge"]["status"] == "denied"
    assert data["sources_status"]["riverside"]["status"] == "ok"
    nb = next(s for s in data["sources"] if s["source"] == "northbridge")
    assert nb["answer"] is None and nb["evidence"] == [] and nb["institution"] is None
    assert "Northbridge" not in json.dumps(data["evidence"])
    # A clinician from elsewhere is let in by the second policy (any matching policy allows).
    r = await client.post("/ask", json=body, headers=auth(token(org="riverside", role="clinician")))
    assert r.json()["sources_status"]["northbridge"]["status"] == "ok"
    nb = next(s for s in r.json()["sources"] if s["source"] == "northbridge")
    assert nb["evidence"][0]["route"] in ("chunks", "whole_fallback") and nb["evidence"][0]["sections"]
    assert nb["answer_mode"] == "extractive" and "3 months" in nb["answer"]
    # Only source and denied: 403, with the reason and nothing else.
    r = await client.post(
        "/ask", json={**body, "sources": ["northbridge"]}, headers=auth(token(org="x", role="porter"))
    )
    assert r.status_code == 403 and r.json() == {
        "error": "forbidden",
        "reason": "northbridge: not available to you",
        "request_id": r.json()["request_id"],
    }
    # Document level: lakeshore's handbook is for patients; the policy releases staff documents only, so
    # nothing of it is available to this caller (not: "does not address the question").
    r = await client.post("/ask", json={**body, "sources": ["lakeshore", "riverside"]})
    lake = next(s for s in r.json()["sources"] if s["source"] == "lakeshore")
    assert lake["status"] == "denied" and lake["evidence"] == [] and lake["answer_mode"] is None


@ASYNC
async def test_http_tokens_and_bad_sources(client: httpx.AsyncClient) -> None:
    body = {"question": QUESTION, "sources": ["riverside", "hillcrest"]}
    expired = jwt.encode({"exp": int(time.time()) - 3600, "org": "x"}, SECRET, algorithm="HS256")
    r = await client.post("/ask", json=body, headers=auth(expired))
    assert r.status_code == 401 and r.json()["reason"] == "token expired"
    assert r.headers["www-authenticate"].startswith("Bearer")
    r = await client.post("/ask", json=body, headers=auth(token(org="x") + "tampered"))
    assert r.status_code == 401
    r = await client.post("/ask", json={**body, "sources": ["nowhere"]})
    assert r.status_code == 403 and r.json()["reason"] == "nowhere: not available to you"
    r = await client.post("/ask", json={**body, "sources": ["Bad Name"]})
    assert r.status_code == 422
    r = await client.post("/ask", json={**body, "options": {"A": "yes", "B": "no"}})
    assert r.status_code == 422 and "several sources" in r.json()["reason"]


@ASYNC
async def test_http_collections_listing_and_search(client: httpx.AsyncClient) -> None:
    r = await client.get("/collections")
    assert r.status_code == 200, r.text
    assert sorted(c["name"] for c in r.json()["collections"]) == [
        "eastgate",
        "hillcrest",
        "lakeshore",
        "riverside",
    ]
    r = await client.get("/collections", headers=auth(token(org="northbridge", role="nurse")))
    assert "northbridge" in [c["name"] for c in r.json()["collections"]]
    r = await client.post(
        "/collections/search",
        json={"question": QUESTION, "collections": ["northbridge", "riverside", "nope"]},
    )
    results = {i["collection"]: i for i in r.json()["results"]}
    assert results["northbridge"]["status"] == "denied" and results["northbridge"]["evidence"] == []
    assert results["northbridge"]["meta"] is None
    assert results["riverside"]["status"] == "ok" and results["riverside"]["meta"]["institution"]
    assert results["riverside"]["evidence"][0]["sections"][0]["heading"]
    assert {**results["nope"], "collection": "x"} == {**results["northbridge"], "collection": "x"}
    r = await client.post(
        "/collections/search", json={"question": QUESTION, "collections": ["*"], "top_docs": 1}
    )
    assert [i["collection"] for i in r.json()["results"]] == [
        "eastgate",
        "hillcrest",
        "lakeshore",
        "riverside",
    ]


# --- the federation client's statuses ---------------------------------------------------------------


def remote_settings(timeout_s: float = 0.5) -> FederationSettings:
    # Node b holds the shared handbooks: it speaks for their institutions.
    node = NodeSettings(
        name="b",
        url="https://b.test",
        audience="node-b",
        timeout_s=timeout_s,
        institutions=list(INSTITUTIONS.values()),
        attributes=["org"],  # what a vouches for to b: the attribute b's policies use
    )
    return federation(node)


CALLER = Subject(
    authenticated=True, attributes={"sub": "u1", "org": "northbridge"}, issuer="https://idp.test"
)


async def ask_remote(transport: httpx.AsyncBaseTransport, collections: list[str]) -> dict[str, Any]:
    client = FederationClient(remote_settings(), transport=transport)
    [answer] = await client.search(QUESTION, {"b": collections}, top_docs=2, subject=CALLER)
    return {k: (st.status, st.reason, len(evs)) for k, (st, evs) in answer.results.items()}


@ASYNC
async def test_federation_statuses_for_failing_nodes() -> None:
    seen: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    async def slow(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        await asyncio.sleep(5)
        return httpx.Response(200, json={"results": []})

    got = await ask_remote(httpx.MockTransport(refuse), ["x"])
    assert got == {"b/x": ("failed", "node b unreachable (ConnectError)", 0)}
    got = await ask_remote(httpx.MockTransport(slow), ["x", "y"])
    assert got == {k: ("timeout", "node b did not answer within 0.5 s", 0) for k in ("b/x", "b/y")}
    # Not the caller's token: an assertion node a signed for node b's audience, with the caller's claims.
    sent = seen[0].headers["authorization"].removeprefix("Bearer ")
    claims = jwt.decode(sent, node_key("a")[1], algorithms=["ES256"], audience="node-b")
    assert claims["iss"] == "a" and claims["attrs"]["org"] == "northbridge" and claims["idp"] == CALLER.issuer
    got = await ask_remote(
        httpx.MockTransport(lambda r: httpx.Response(401, json={"reason": "token expired"})), ["x"]
    )
    assert got["b/x"][:2] == ("denied", "not available to you")  # why (token expired) is logged here
    got = await ask_remote(httpx.MockTransport(lambda r: httpx.Response(500, text="boom")), ["x"])
    assert got["b/x"][:2] == ("failed", "node b answered HTTP 500")
    got = await ask_remote(httpx.MockTransport(lambda r: httpx.Response(200, text="<html>")), ["x"])
    assert got["b/x"][:2] == ("failed", "node b sent a malformed reply (at body)")
    partial = {"results": [{"collection": "x", "status": "denied", "reason": "private", "evidence": []}]}
    got = await ask_remote(httpx.MockTransport(lambda r: httpx.Response(200, json=partial)), ["x", "y"])
    assert got == {
        "b/x": ("denied", "not available to you", 0),
        "b/y": ("failed", "node b did not report y", 0),
    }


@ASYNC
async def test_remote_sources_through_an_in_process_node(root: Path, pipeline: Pipeline) -> None:
    """Node A asks node B (mounted in-process) for a collection; B's own policy decides."""
    access_b = AccessSettings(
        jwt_secret=SecretStr(SECRET), policies=[Policy.model_validate(p) for p in POLICIES]
    )
    settings_b = node_settings(root, access=access_b)
    app_b = create_app(settings_b, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    async with app_b.router.lifespan_context(app_b):
        app_b.state.sources = SourcesService(settings_b, pipeline, encoder=BowEncoder(), reranker=None)
        fed = FederationClient(remote_settings(timeout_s=30), transport=httpx.ASGITransport(app=app_b))
        svc_a = SourcesService(
            node_settings(root), pipeline, encoder=BowEncoder(), reranker=None, federation=fed
        )
        refs = parse_sources(
            ["riverside", "b/lakeshore", "b/hillcrest"], local=svc_a.local_names(), nodes=["b"]
        )
        judge = CrossSourceJudge(handbook_llm(), max_sources=8)
        out = await svc_a.ask(
            QUESTION,
            refs,
            subject=svc_a.subject(None),
            answerer=Answerer(None),
            judge=judge,
            understanding=await svc_a.pipeline.understander.understand(QUESTION),
        )
    by = {o.name: o for o in out.sources}
    assert [o.name for o in out.sources] == ["riverside", "b/lakeshore", "b/hillcrest"]
    # B released no lakeshore document (its retrieve policy wants staff documents): not available, and
    # so neither answered nor judged (never "does not address").
    assert by["b/lakeshore"].status.status == "denied" and by["b/lakeshore"].evidence == []
    assert by["b/lakeshore"].answer is None
    assert by["b/hillcrest"].evidence and by["b/hillcrest"].meta and by["b/hillcrest"].meta["institution"]
    assert by["b/hillcrest"].label == "Hillcrest University Hospital (b/hillcrest)"
    assert out.judge is not None and out.judge.sources == ("riverside", "b/hillcrest")
    assert out.judge.matrix[0][1] == "ABSENT"  # Hillcrest is silent on travel


# --- the embedded model end to end (no label assertions: a 270M base model) --------------------------------


@pytest.mark.llm
@pytest.mark.slow
@ASYNC
async def test_embedded_model_completes_over_the_handbooks(root: Path) -> None:
    pytest.importorskip("llama_cpp")
    from llm import EmbeddedLLM, LLMSettings, ensure_embedded_model

    try:
        gguf = ensure_embedded_model()
    except Exception as exc:  # the model package is part of the optional extra
        pytest.skip(f"embedded model unavailable: {exc}")
    # Small context and answers: the judge's prompts must fit Gemma's 2,048-token window on 2 cores.
    llm_settings = LLMSettings(
        backend="embedded", timeout_s=120, stream_idle_timeout_s=120, max_tokens=48, embedded_n_threads=2
    )
    settings = node_settings(root, sources=SourcesSettings(top_docs=1, context_chars=2000))
    llm = EmbeddedLLM(llm_settings, model_path=gguf)
    pipeline = build_pipeline(settings, llm=llm, use_dense=False, use_passages=False)
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    sources = ["northbridge", "riverside", "hillcrest"]
    try:
        async with app.router.lifespan_context(app):
            app.state.sources = SourcesService(settings, pipeline, encoder=BowEncoder(), reranker=None)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://node", timeout=600) as c:
                r = await c.post("/ask", json={"question": QUESTION, "sources": sources})
    finally:
        await pipeline.aclose()
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] and all(s["status"] == "ok" for s in body["sources"])
    assert all(s["answer_mode"] in ("llm", "not_addressed", "error") for s in body["sources"])
    judge = body["judge"]
    assert judge is not None and judge["sources"] == [s for s in sources if s in judge["sources"]]
    n = len(judge["sources"])
    matrix = judge["matrix"]
    assert len(matrix) == n and all(len(row) == n and row[i] is None for i, row in enumerate(matrix))
    assert all(matrix[i][j] == matrix[j][i] for i in range(n) for j in range(n))
    assert all(cell in (None, *LABELS) for row in matrix for cell in row)
    assert (
        sum(judge["counts"].values()) + len([p for p in judge["pairs"] if p["classification"] is None])
        == n * (n - 1) // 2
    )


@ASYNC
async def test_remote_nodes_get_the_question_scrubbed(root: Path, pipeline: Pipeline) -> None:
    bodies: list[dict[str, Any]] = []

    def node(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"results": [{"collection": "x", "status": "ok", "evidence": []}]})

    fed = FederationClient(remote_settings(), transport=httpx.MockTransport(node))
    svc = SourcesService(node_settings(root), pipeline, encoder=BowEncoder(), reranker=None, federation=fed)
    narrative = "Hi I'm Linda Parker (linda.parker@example.com, 555-123-4567). " + QUESTION
    refs = parse_sources(["b/x"], local=[], nodes=["b"])
    out = await svc.ask(
        narrative,
        refs,
        understanding=await svc.pipeline.understander.understand(narrative),
        subject=svc.subject(None),
        answerer=Answerer(None),
        judge=None,
    )
    assert out.sources[0].status.status == "ok" and out.sources[0].answer_mode == "not_addressed"
    sent = bodies[0]["question"]
    assert "travel abroad" in sent
    assert not any(phi in sent for phi in ("Linda", "Parker", "example.com", "555-123-4567"))


class Routes(httpx.AsyncBaseTransport):
    """One transport for several fake hosts: an in-process node, or a connection refused."""

    def __init__(self, hosts: dict[str, httpx.AsyncBaseTransport | None]) -> None:
        self.hosts = hosts

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = self.hosts[request.url.host]
        if target is None:
            raise httpx.ConnectError("connection refused", request=request)
        return await target.handle_async_request(request)


@ASYNC
async def test_listing_includes_remote_nodes_with_their_status(root: Path, pipeline: Pipeline) -> None:
    access = AccessSettings(
        jwt_secret=SecretStr(SECRET), policies=[Policy.model_validate(p) for p in POLICIES]
    )
    nodes = [
        NodeSettings(name="b", url="https://b.test", audience="node-b"),
        NodeSettings(name="down", url="https://down.test", audience="node-down"),
    ]
    # b trusts a's assertions; a's callers carry tokens for a's audience.
    settings_b = node_settings(
        root,
        access=access.model_copy(update={"audience": "node-b"}),
        federation=federation(node_id="b", peers=["a"]),
    )
    app_b = create_app(settings_b, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    settings_a = node_settings(
        root, access=access.model_copy(update={"audience": "node-a"}), federation=federation(*nodes)
    )
    app_a = create_app(settings_a, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    async with app_b.router.lifespan_context(app_b), app_a.router.lifespan_context(app_a):
        routes = Routes({"b.test": httpx.ASGITransport(app=app_b), "down.test": None})
        # As the sources service builds it: assertions carry the attributes the policies use.
        vouched = AccessEngine(load_policies(settings_a.access)).subject_attributes
        fed = FederationClient(settings_a.federation, transport=routes, attributes=vouched)
        app_a.state.sources = SourcesService(settings_a, pipeline, encoder=BowEncoder(), federation=fed)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app_a), base_url="http://a") as c:
            staff = auth(token(org="northbridge", role="nurse", aud="node-a"))
            body = (await c.get("/collections", params={"remote": "true"}, headers=staff)).json()
    names = [c["name"] for c in body["collections"]]
    assert names[:5] == sorted(ORDER)  # local first, then the nodes'
    assert sorted(n for n in names if n.startswith("b/")) == [f"b/{n}" for n in sorted(ORDER)]
    assert body["nodes"]["b"]["status"] == "ok"
    assert body["nodes"]["down"]["status"] == "failed" and "unreachable" in body["nodes"]["down"]["reason"]


@ASYNC
async def test_a_failed_answer_is_reported_not_judged(root: Path, pipeline: Pipeline) -> None:
    base = handbook_llm()

    def script(prompt: str) -> Reply:
        if "Source Context (Riverside" in prompt:
            return LLMTimeout("no reply within 30 s")
        return base.script(prompt)

    svc = service(root, pipeline)
    refs = parse_sources(["northbridge", "riverside", "eastgate"], local=svc.local_names(), nodes=[])
    judge = CrossSourceJudge(ScriptedLLM(script))
    out = await svc.ask(
        QUESTION,
        refs,
        understanding=await svc.pipeline.understander.understand(QUESTION),
        subject=svc.subject(None),
        answerer=Answerer(None),
        judge=judge,
    )
    river = out.sources[1]
    assert river.answer_mode == "error" and river.answer is not None and river.answer.error
    assert "riverside: answer failed (LLMTimeout)" in out.warnings
    assert out.judge is not None
    assert out.judge.matrix[0][1] is None and out.judge.matrix[1][2] is None  # not judged, not guessed
    assert out.judge.matrix[0][2] == "CONSISTENT" and out.judge.pairs_judged_by_llm == 1
    assert "Riverside Medical Center (riverside): could not be answered this time" in out.answer
    body = across_response(out, "r1", 100).model_dump(mode="json")
    assert body["sources"][1]["absent"] is None and body["sources"][1]["answer_mode"] == "error"

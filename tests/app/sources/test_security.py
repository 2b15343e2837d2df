"""The security review's holes, each tried as an attacker would, in-process (issue 16).

One test per hole: poisoning the absence cache through ``POST /judge``; telling a private collection or
node from a missing one (status, body, timing) on ``/ask``, ``/collections`` and ``/collections/search``;
a node speaking for another institution or sending an oversized or ill-typed reply; access denial dressed
up as silence; a handbook longer than the context budget cut without a word. Token exchange across nodes
(forwarded tokens, audiences, issuers, anonymous callers) is in ``test_token_exchange.py``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
from pydantic import SecretStr

from app.answer import Answerer
from app.api import create_app
from app.container import build_pipeline
from app.judge import CrossSourceJudge
from app.pipeline import Pipeline
from app.settings import (
    AccessSettings,
    ApiSettings,
    FederationSettings,
    NodeSettings,
    Policy,
    Settings,
    SourcesSettings,
)
from app.sources import ANONYMOUS, FederationClient, SourcesService, parse_sources
from retrieval.collections import CollectionMeta, CollectionSettings, CollectionStore
from tests._fakes import Reply, ScriptedLLM
from tests._handbooks import BowEncoder, build_store, federation, handbook_llm, node_settings

ASYNC = pytest.mark.asyncio(loop_scope="module")

QUESTION = "When can I travel abroad after my transplant?"
SECRET = "security-test-secret-0123456789abcdef"


def token(**claims: Any) -> str:
    return jwt.encode({"exp": int(time.time()) + 300, **claims}, SECRET, algorithm="HS256")


def auth(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("security") / "root"
    build_store(root, private=["northbridge"])
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pipeline(root: Path) -> AsyncIterator[Pipeline]:
    async with build_pipeline(node_settings(root), use_llm=False, use_dense=False, use_passages=False) as p:
        yield p


# --- 1. absence-cache poisoning through POST /judge ------------------------------------------------------


def poison_llm() -> ScriptedLLM:
    """The handbook LLM, with an absence check that says YES to anything claiming "no information"."""
    base = handbook_llm()

    def script(prompt: str) -> Reply:
        if "Does this response indicate" in prompt:
            return "YES" if "no information" in prompt else "NO"
        return base.script(prompt)

    return ScriptedLLM(script)


@ASYNC
async def test_judge_cannot_poison_the_absence_screen_of_a_real_source(
    root: Path, pipeline: Pipeline
) -> None:
    llm = poison_llm()
    judge = CrossSourceJudge(llm, max_sources=8)
    settings = node_settings(root)
    app = create_app(
        settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline, judge=judge
    )
    async with app.router.lifespan_context(app):
        app.state.sources = SourcesService(settings, pipeline, encoder=BowEncoder(), reranker=None)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://n") as c:
            # The attacker screens a planted "absent" answer under Riverside's name (public collection).
            planted = [
                {"source_id": "riverside", "text": "The handbook has no information on this."},
                {"source_id": "eastgate", "text": "The handbook has no information on this either."},
            ]
            r = await c.post("/judge", json={"question": QUESTION, "answers": planted})
            assert r.status_code == 200 and [a["absent"] for a in r.json()["answers"]] == [True, True]
            screens = len([m for m in llm.seen if "Does this response indicate" in m[-1]["content"]])
            # The patient's real question: Riverside's own answer must be screened on its own words.
            r = await c.post("/ask", json={"question": QUESTION, "sources": ["riverside", "eastgate"]})
            assert r.status_code == 200, r.text
            by = {s["source"]: s for s in r.json()["sources"]}
            assert "6 months" in by["riverside"]["answer"] and by["riverside"]["absent"] is False
            assert by["eastgate"]["absent"] is False and r.json()["judge"]["matrix"][0][1] == "DIVERGENT"
            after = len([m for m in llm.seen if "Does this response indicate" in m[-1]["content"]])
            assert after == screens + 2  # both real answers screened, nothing taken from the attacker
            # The same real answers again: cached now (same evidence version, same text), no screen call.
            r = await c.post("/ask", json={"question": QUESTION, "sources": ["riverside", "eastgate"]})
            assert [s["absent"] for s in r.json()["sources"]] == [False, False]
            assert len([m for m in llm.seen if "Does this response indicate" in m[-1]["content"]]) == after
            # And /judge learns nothing from the cache: the same text as a real answer is screened again.
            real = by["riverside"]["answer"]
            r = await c.post(
                "/judge",
                json={
                    "question": QUESTION,
                    "answers": [{"source_id": "riverside", "text": real}, planted[1]],
                },
            )
            assert (
                len([m for m in llm.seen if "Does this response indicate" in m[-1]["content"]]) == after + 2
            )


# --- 2. existence oracle: a private collection or node and a missing one answer alike -------------------

POLICIES = [
    {"id": "nb-staff", "collections": ["northbridge"], "action": "search", "subject": {"org": "northbridge"}},
    # Lakeshore is public, but its retrieve policy releases staff documents only: its handbook (for
    # patients) is withheld from everyone.
    {
        "id": "lake-staff-docs",
        "collections": ["lakeshore"],
        "action": "retrieve",
        "document": {"audience": "staff"},
    },
]


def refusing_node(request: httpx.Request) -> httpx.Response:
    """Node b: its "secret" collection exists and is refused; anything else is unknown to it; its listing
    refuses anonymous callers outright."""
    if request.method == "GET":
        return httpx.Response(
            401, json={"error": "unauthorized", "reason": "collection sources need a token"}
        )
    body = json.loads(request.content)
    items = [
        {"collection": c, "status": "denied", "reason": f"policy b-{c} refused"} for c in body["collections"]
    ]
    return httpx.Response(200, json={"results": items})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path, pipeline: Pipeline) -> AsyncIterator[httpx.AsyncClient]:
    access = AccessSettings(
        jwt_secret=SecretStr(SECRET), audience="node-a", policies=[Policy.model_validate(p) for p in POLICIES]
    )
    settings = node_settings(root, access=access, federation=federation_to_b())
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    async with app.router.lifespan_context(app):
        fed = FederationClient(settings.federation, transport=httpx.MockTransport(refusing_node))
        app.state.sources = SourcesService(
            settings, pipeline, encoder=BowEncoder(), reranker=None, federation=fed
        )
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://n") as c:
            yield c


def federation_to_b() -> FederationSettings:
    return federation(NodeSettings(name="b", url="https://b.test", audience="node-b"))


def without(body: dict[str, Any], *names: str) -> str:
    """The body as text with the request id and the probed names blanked out."""
    text = json.dumps(
        {k: v for k, v in body.items() if k not in ("request_id", "timings_ms")}, sort_keys=True
    )
    for n in names:
        text = text.replace(n, "NAME")
    return text


@ASYNC
async def test_private_and_missing_collections_and_nodes_are_indistinguishable(
    client: httpx.AsyncClient,
) -> None:
    # /ask, the probed source alone: the same status and body for private, missing, refused and unknown node.
    answers = {}
    for name in ("northbridge", "atlantis", "b/secret", "nowhere/secret"):
        r = await client.post("/ask", json={"question": QUESTION, "sources": [name]})
        answers[name] = (r.status_code, without(r.json(), name))
    assert len(set(answers.values())) == 1, answers
    assert answers["atlantis"][0] == 403 and "not available to you" in answers["atlantis"][1]
    assert "nodes" not in answers["nowhere/secret"][1] and "b," not in answers["nowhere/secret"][1]
    # /ask beside a public source: the probed entry is the same, down to its timing (none is given).
    entries = {}
    for name in ("northbridge", "atlantis", "b/secret", "nowhere/secret"):
        r = await client.post("/ask", json={"question": QUESTION, "sources": ["riverside", name]})
        assert r.status_code == 200
        body = r.json()
        entry = {k: v for k, v in body["sources"][1].items() if k not in ("kind", "node")}
        entries[name] = without({"entry": entry, "status": body["sources_status"][name]}, name)
        assert name not in json.dumps(body["evidence"])
    assert len(set(entries.values())) == 1, entries
    # /collections/search: one item shape for both, no metadata.
    r = await client.post(
        "/collections/search", json={"question": QUESTION, "collections": ["northbridge", "atlantis"]}
    )
    a, b = r.json()["results"]
    assert {**a, "collection": "x"} == {**b, "collection": "x"}
    assert a["status"] == "denied" and a["reason"] == "not available to you" and a["meta"] is None
    # /collections: neither is named; with remote=true, a node that refuses the caller is not named either.
    listed = [c["name"] for c in (await client.get("/collections")).json()["collections"]]
    assert "northbridge" not in listed and "atlantis" not in listed
    remote = (await client.get("/collections", params={"remote": "true"})).json()
    assert remote["nodes"] == {} and not any(c["name"].startswith("b/") for c in remote["collections"])


@ASYNC
async def test_denial_timing_does_not_tell_private_from_missing(client: httpx.AsyncClient) -> None:
    async def once(name: str) -> float:
        t = time.perf_counter()
        r = await client.post("/collections/search", json={"question": QUESTION, "collections": [name]})
        assert r.status_code == 200
        return time.perf_counter() - t

    times: dict[str, list[float]] = {"northbridge": [], "atlantis": []}
    for _ in range(3):  # warm up both paths
        await once("northbridge"), await once("atlantis")
    for _ in range(40):  # interleaved: machine load hits both alike
        for name in times:
            times[name].append(await once(name))
    med = {n: statistics.median(v) for n, v in times.items()}
    assert abs(med["northbridge"] - med["atlantis"]) < 0.002 + 0.25 * max(med.values()), med


# --- 7. not available to you is not "does not address" ---------------------------------------------------


@ASYNC
async def test_withheld_documents_are_not_available_not_absent(client: httpx.AsyncClient) -> None:
    r = await client.post("/ask", json={"question": QUESTION, "sources": ["lakeshore", "riverside"]})
    assert r.status_code == 200, r.text
    body = r.json()
    lake = body["sources"][0]
    # Before: status ok, no evidence, answered NOT ADDRESSED and counted as absence.
    assert lake["status"] == "denied" and lake["reason"] == "not available to you"
    assert lake["answer"] is None and lake["absent"] is None and lake["evidence"] == []
    assert "Lakeshore" not in json.dumps(body["evidence"])
    assert "lakeshore: not available to you." in body["answer"]
    assert (
        "lakeshore" not in (body["differences"] or "")
        and "does not address" not in body["answer"].split("\n\n")[0]
    )
    # Alone, it is refused like any collection the caller may not read.
    r = await client.post("/ask", json={"question": QUESTION, "sources": ["lakeshore"]})
    assert r.status_code == 403 and r.json()["reason"] == "lakeshore: not available to you"


# --- 8. a handbook longer than the context budget is read by its chunks, never cut ------------------------


def long_handbook(chars: int) -> str:
    """A handbook of ``chars`` characters whose only word on travel is in its last section."""
    topics = ["Medicines", "Diet", "Wound care", "Exercise", "Blood tests", "Infections", "Mood", "Driving"]
    parts = ["# Westfield Hospital: living with your new kidney"]
    i = 0
    while sum(map(len, parts)) < chars:
        topic = topics[i % len(topics)]
        body = " ".join(
            f"Week {i}: keep a diary of your {topic.lower()} and bring it to clinic visit number {j}."
            for j in range(12)
        )
        parts.append(f"## {topic} (part {i})\n{body}")
        i += 1
    parts.append(
        "## Travel abroad\nPlease do not travel abroad for the first 6 months after your transplant; "
        "after that, trips abroad are fine once your kidney function is stable."
    )
    return "\n\n".join(parts) + "\n"


@ASYNC
async def test_a_long_handbook_is_not_cut_into_a_false_not_addressed(
    tmp_path: Path, pipeline: Pipeline
) -> None:
    src = tmp_path / "westfield.md"
    src.write_text(long_handbook(60_000))
    store = CollectionStore(tmp_path / "store")
    meta = CollectionMeta(name="westfield", institution="Westfield Hospital", topic="transplant")
    assert not store.add("westfield", [src], meta, attributes={"audience": "patients"}).failed
    # The defaults: whole documents up to 80k characters, a 24k context per answer.
    settings = Settings(collections=CollectionSettings(root=tmp_path / "store")).offline()
    assert (
        settings.collections.search.whole_doc_max_chars == 80_000 and settings.sources.context_chars == 24_000
    )
    svc = SourcesService(settings, pipeline, encoder=BowEncoder(), reranker=None)
    refs = parse_sources(["westfield"], local=svc.local_names(), nodes=[])
    llm = handbook_llm()
    out = await svc.ask(
        QUESTION,
        refs,
        subject=svc.subject(None),
        answerer=Answerer(None),
        judge=CrossSourceJudge(llm),
        understanding=await svc.pipeline.understander.understand(QUESTION),
    )
    west = out.sources[0]
    # Before: route "whole", the model shown the first 24k characters, no travel section: NOT ADDRESSED.
    assert west.evidence[0].route == "chunks" and "Travel abroad" in west.evidence[0].text
    assert len(west.evidence[0].text) <= svc.document_budget()
    assert west.answer is not None and not west.answer.absent and "6 months" in west.answer.text
    assert not any("context budget" in w for w in out.warnings)  # nothing had to be cut or left out
    # The same document under a budget that holds it is still read whole.
    roomy = settings.model_copy(update={"sources": SourcesSettings(context_chars=100_000)})
    whole = await SourcesService(roomy, pipeline, encoder=BowEncoder(), reranker=None).search_collection(
        "westfield", QUESTION, ANONYMOUS, 1
    )
    assert whole[1][0].route == "whole" and "Travel abroad" in whole[1][0].text
    # A calling node with a small model asks for less: the same document comes back as chunks.
    small = await svc.search_collection("westfield", QUESTION, ANONYMOUS, 1, max_chars=3000)
    assert small[1][0].route == "chunks" and len(small[1][0].text) <= 3000


# --- 6. a remote node's reply is checked, bounded and cannot speak for another institution ---------------


class Flood(httpx.AsyncByteStream):
    """A reply body of ``total`` bytes in 64 KiB chunks, counting what the reader pulled."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunk = b'{"results": [' + b" " * 65_523
        while self.sent < self.total:
            self.sent += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        pass


def node_b(**update: Any) -> FederationSettings:
    node = NodeSettings(
        name="b", url="https://b.test", audience="node-b", institutions=["Riverside Medical Center"], **update
    )
    return federation(node, max_response_bytes=100_000)


async def ask_b(reply: httpx.Response | Any, collections: list[str]) -> list[Any]:
    transport = httpx.MockTransport(reply if callable(reply) else lambda r: reply)
    fed = FederationClient(node_b(), transport=transport)
    return await fed.search(QUESTION, {"b": collections}, top_docs=3, subject=ANONYMOUS)


@ASYNC
async def test_an_oversized_reply_is_abandoned_while_streaming() -> None:
    flood = Flood(50_000_000)
    [answer] = await ask_b(httpx.Response(200, stream=flood), ["riverside"])
    status = answer.results["b/riverside"][0]
    assert (status.status, status.reason) == ("failed", "node b sent more than 100000 bytes")
    assert flood.sent < 500_000  # before: all 50 MB were read, then measured
    # Declared too large: refused before a byte of the body is read.
    declared = Flood(50_000_000)
    big = httpx.Response(200, stream=declared, headers={"content-length": "50000000"})
    [answer] = await ask_b(big, ["riverside"])
    assert answer.results["b/riverside"][0].status == "failed" and declared.sent == 0


def evidence(collection: str, text: str = "Wait 6 months before travelling abroad.") -> dict[str, Any]:
    return {"collection": collection, "doc_id": "hb", "title": "Handbook", "route": "whole", "text": text}


@ASYNC
async def test_a_node_cannot_speak_for_another_institution() -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        meta = {"name": "riverside", "institution": "Northbridge Hospital", "topic": "transplant"}
        item = {"collection": "riverside", "status": "ok", "meta": meta, "evidence": [evidence("riverside")]}
        return httpx.Response(200, json={"results": [item]})

    [answer] = await ask_b(reply, ["riverside"])
    # Node b speaks for Riverside only: its claim to be Northbridge is not shown.
    assert (
        answer.results["b/riverside"][0].status == "ok" and answer.metas["b/riverside"]["institution"] == ""
    )

    def honest(request: httpx.Request) -> httpx.Response:
        meta = {"name": "riverside", "institution": "Riverside Medical Center"}
        item = {"collection": "riverside", "status": "ok", "meta": meta, "evidence": [evidence("riverside")]}
        return httpx.Response(200, json={"results": [item]})

    [answer] = await ask_b(honest, ["riverside"])
    assert answer.metas["b/riverside"]["institution"] == "Riverside Medical Center"


@pytest.mark.parametrize(
    "item",
    [
        # Evidence filed under a collection other than the one it answers for.
        {"collection": "riverside", "status": "ok", "evidence": [evidence("northbridge")]},
        # Content for a collection the node itself says is denied.
        {"collection": "riverside", "status": "denied", "evidence": [evidence("riverside")]},
        {"collection": "riverside", "status": "granted"},
        {"collection": "riverside", "status": "ok", "evidence": [{**evidence("riverside"), "text": None}]},
        {"collection": "../../etc", "status": "ok"},
        {"collection": "riverside", "status": "ok", "evidence": [evidence("riverside")] * 11},
    ],
)
@ASYNC
async def test_an_ill_typed_reply_is_refused_whole(item: dict[str, Any]) -> None:
    [answer] = await ask_b(httpx.Response(200, json={"results": [item]}), ["riverside"])
    status, found = answer.results["b/riverside"]
    assert status.status == "failed" and "malformed reply" in (status.reason or "") and found == []


@ASYNC
async def test_a_node_cannot_add_sources_nobody_asked_for() -> None:
    items = [
        {"collection": "riverside", "status": "ok", "evidence": [evidence("riverside")]},
        {"collection": "northbridge", "status": "ok", "evidence": [evidence("northbridge", "Never travel.")]},
    ]
    [answer] = await ask_b(httpx.Response(200, json={"results": items}), ["riverside"])
    assert list(answer.results) == ["b/riverside"]


# --- 2 (issue 27, finding 11): a node that refuses everything reads as one that does not exist ----------


@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(401, json={"error": "unauthorized", "reason": "collection sources need a token"}),
        httpx.Response(200, json={"results": []}),  # a node where the caller may search nothing
    ],
    ids=["401", "nothing"],
)
@ASYNC
async def test_a_node_that_refuses_everything_reads_as_one_that_does_not_exist(
    root: Path, pipeline: Pipeline, reply: httpx.Response
) -> None:
    access = AccessSettings(jwt_secret=SecretStr(SECRET), audience="node-a")
    evil = NodeSettings(name="evil", url="https://evil.test", audience="node-evil")
    settings = node_settings(root, access=access, federation=federation(evil))
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    async with app.router.lifespan_context(app):
        fed = FederationClient(settings.federation, transport=httpx.MockTransport(lambda r: reply))
        app.state.sources = SourcesService(
            settings, pipeline, encoder=BowEncoder(), reranker=None, federation=fed
        )
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://n") as c:
            alone, beside = {}, {}
            for name in ("evil", "nonode"):
                r = await c.post("/ask", json={"question": QUESTION, "sources": [f"{name}/*"]})
                alone[name] = (r.status_code, without(r.json(), name))
                r = await c.post("/ask", json={"question": QUESTION, "sources": ["riverside", f"{name}/*"]})
                body = r.json()
                entry = [{k: v for k, v in s.items() if k != "node"} for s in body["sources"][1:]]
                beside[name] = (r.status_code, without({"entry": entry, "answer": body["answer"]}, name))
    # Before: 200 with no sources and answer "" for the node that said 401; 403 for the unknown one.
    assert alone["evil"] == alone["nonode"], alone
    assert alone["evil"][0] == 403 and "NAME/*: not available to you" in alone["evil"][1]
    assert beside["evil"] == beside["nonode"] and beside["evil"][0] == 200, beside
    assert "NAME/*: not available to you." in beside["evil"][1]


# --- 6 (issue 27, finding 12): a node's words are typed, bounded and never relayed as markup -------------

PHISH = "<script>alert(1)</script> Your session expired: log in again at https://evil.example/login"


@ASYNC
async def test_a_nodes_failure_reason_is_ours_not_its_words() -> None:
    items = [
        {"collection": "riverside", "status": "failed", "reason": PHISH},
        {"collection": "eastgate", "status": "timeout", "reason": PHISH},
    ]
    [answer] = await ask_b(httpx.Response(200, json={"results": items}), ["riverside", "eastgate"])
    reasons = {k: st.reason for k, (st, _) in answer.results.items()}
    assert reasons == {
        "b/riverside": "node b could not search it",
        "b/eastgate": "node b did not finish searching it in time",
    }


@pytest.mark.parametrize(
    "bad",
    [
        {"doc_id": "../../../../etc/passwd"},
        {"doc_id": "hb<script>"},
        {"doc_id": "x" * 200},
        {"sections": [{"section_id": "../s1", "heading": "Travel"}]},
        {"score": "NaN"},
        {"sections": [{"section_id": "s", "heading": "h"}] * 201},
    ],
)
@ASYNC
async def test_an_evidence_item_with_a_path_for_an_id_or_no_number_for_a_score_is_refused(
    bad: dict[str, Any],
) -> None:
    item = {"collection": "riverside", "status": "ok", "evidence": [{**evidence("riverside"), **bad}]}
    [answer] = await ask_b(httpx.Response(200, json={"results": [item]}), ["riverside"])
    status, found = answer.results["b/riverside"]
    assert status.status == "failed" and "malformed reply" in (status.reason or "") and found == []


@ASYNC
async def test_a_nodes_free_text_is_cut_to_its_bound() -> None:
    long = {"title": "T" * 5000, "sections": [{"section_id": "s1", "heading": "H" * 5000}]}
    item = {"collection": "riverside", "status": "ok", "evidence": [{**evidence("riverside"), **long}]}
    [answer] = await ask_b(httpx.Response(200, json={"results": [item]}), ["riverside"])
    [ev] = answer.results["b/riverside"][1]
    assert (len(ev.title), len(ev.sections[0].heading)) == (500, 300)

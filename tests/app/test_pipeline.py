"""The whole retrieval pipeline offline: Understand -> Adapt-E ‖ dense (MiniLM) -> RRF -> evidence."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY
from starlette.applications import Starlette

from app.api import create_app
from app.container import build_pipeline
from app.factories import build_dense_retriever
from app.frontends import search_out
from app.pipeline import Pipeline
from app.settings import Settings
from retrieval import EutilsError, FaultSettings, LocalServerSettings, create_eutils_app, eutils_transport
from retrieval.embed import DenseRetriever
from retrieval.eutils import LOCAL_BASE_URL, EutilsClient, MemoryStore
from retrieval.search import ZERO_HIT_CAUSES

NARRATIVE = (
    "my mom has a mass on her pancreas and her CA 19 9 came back really high, is the whipple pointless?"
)


@pytest.fixture(scope="module")
def settings() -> Settings:
    # The product's own bundled-index location: built once per machine (~45 s), reused by later runs.
    return Settings().offline()


@pytest.fixture(scope="module")
def dense(settings: Settings) -> DenseRetriever:
    # Built once per module (MiniLM over the 1,013 bundled abstracts); not bound to an event loop.
    return build_dense_retriever(settings)


@pytest.fixture
async def pipeline(settings: Settings, dense: DenseRetriever) -> AsyncIterator[Pipeline]:
    async with build_pipeline(settings, use_llm=False, dense=dense) as p:
        yield p


@pytest.fixture
async def phrase_pipeline(settings: Settings, dense: DenseRetriever) -> AsyncIterator[Pipeline]:
    # The absent-phrase tests pin the threshold they were written for (the default is calibrated).
    gate = settings.gate.model_copy(update={"absent_phrase_max_dense": 0.44})
    async with build_pipeline(settings.model_copy(update={"gate": gate}), use_llm=False, dense=dense) as p:
        yield p


async def test_hybrid_fuses_both_arms_into_filtered_evidence(pipeline: Pipeline) -> None:
    outcome = await pipeline.search(NARRATIVE)
    docs = outcome.evidence.docs
    assert docs and outcome.pmids == [d.pmid for d in docs]
    assert outcome.pmids[0] == "19459018"  # the corpus article on exactly this question
    arms = {p.arm for d in docs for p in d.provenance}
    assert arms == {"boolean", "dense"}
    both = [d for d in docs if {p.arm for p in d.provenance} == {"boolean", "dense"}]
    assert both, "RRF should reward documents found by both arms"
    assert all(d.text_units and d.doc_class in {"D1", "D2", "D3"} for d in docs)
    # Fused order is by RRF score.
    scores = [d.rrf_score for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert {"understand", "esearch", "dense", "fuse", "metadata"} <= set(outcome.timings_ms)
    payload = search_out(outcome).model_dump(mode="json")
    assert payload["pmids"] == outcome.pmids and payload["dense"] and payload["tiers"]
    # Passages for the answer: from the evidence documents, reranked, and honest about the offline reranker.
    context = outcome.context
    assert context is not None and context.selected
    assert {p.pmid for p in context.passages} <= set(outcome.pmids)
    assert all({"dense", "rerank"} <= set(p.scores) for p in context.selected)
    assert context.reranker_kind == "bi-encoder" and context.rerank_note
    assert any(context.rerank_note == w for w in outcome.warnings)
    assert context.budget_used <= context.budget
    assert payload["context"]["passages"][0]["pmid"] in outcome.pmids


async def test_date_window_applies_to_the_dense_arm_too(pipeline: Pipeline) -> None:
    outcome = await pipeline.search(NARRATIVE, mindate="2010", maxdate="2014")
    assert outcome.evidence.docs
    assert all(d.year is not None and 2010 <= d.year <= 2014 for d in outcome.evidence.docs)
    dense_only = [h.pmid for h in outcome.dense]
    assert dense_only  # the dense arm retrieved out-of-window records, which the metadata stage dropped
    assert any(d.reason == "outside date window" for d in outcome.evidence.dropped)


async def test_without_a_dense_model_the_boolean_arm_still_answers(
    settings: Settings, tmp_path: Path
) -> None:
    broken = settings.model_copy(
        update={"dense": settings.dense.model_copy(update={"st_model": str(tmp_path / "no-such-model")})}
    )
    async with build_pipeline(broken, use_llm=False) as p:
        outcome = await p.search(NARRATIVE)
    assert outcome.dense == [] and outcome.evidence.docs
    assert any("dense retrieval unavailable" in w for w in outcome.warnings)
    assert all({pr.arm for pr in d.provenance} == {"boolean"} for d in outcome.evidence.docs)


# --- degraded mode: NCBI down (issue 6) -----------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _pipeline_on_a_failable_server(
    settings: Settings, dense: DenseRetriever, clock: _Clock
) -> tuple[Pipeline, Starlette]:
    """The bundled corpus behind the local E-utilities server, whose faults the test can switch on."""
    server = create_eutils_app(LocalServerSettings())
    store = MemoryStore(ttl_s=60, max_stale_s=3600, max_entries=10_000, clock=clock)
    eutils = settings.eutils.model_copy(
        update={"base_url": LOCAL_BASE_URL, "max_attempts": 1, "backoff_base_s": 0.0}
    )
    client = EutilsClient(eutils, transport=eutils_transport(server), store=store)
    # Passages off: SEOS and reranking are local and beside the point here, and slow on 2 cores.
    return build_pipeline(settings, client=client, use_llm=False, dense=dense, use_passages=False), server


def _ncbi_goes_down(server: Starlette) -> None:
    server.state.settings.faults = FaultSettings(error_500_rate=1.0)


async def test_ncbi_down_answers_from_the_stale_cache_with_a_warning(
    settings: Settings, dense: DenseRetriever
) -> None:
    clock = _Clock()
    pipeline, server = _pipeline_on_a_failable_server(settings, dense, clock)
    async with pipeline as p:
        fresh = await p.search(NARRATIVE)
        assert fresh.eutils is not None and not fresh.eutils.degraded and not fresh.eutils.unavailable
        assert not any(w.startswith("NCBI unavailable") for w in fresh.warnings)
        clock.now += 61  # every cached entry is past its TTL now
        _ncbi_goes_down(server)
        asked = len(server.state.request_log)
        stale = await p.search(NARRATIVE)
    assert len(server.state.request_log) > asked  # NCBI was asked first, and failed
    assert stale.pmids == fresh.pmids and stale.evidence.docs
    assert stale.eutils is not None and stale.eutils.unavailable and stale.eutils.stale["esearch"] >= 1
    assert stale.eutils.stale["efetch"] >= len(stale.pmids) and stale.eutils.unserved == 0
    assert "NCBI unavailable: answered from cache" in " ".join(stale.warnings)
    assert any("up to 1 min old" in w for w in stale.warnings)


async def test_search_down_the_dense_arm_answers_alone_from_cached_records(
    settings: Settings, dense: DenseRetriever
) -> None:
    pipeline, server = _pipeline_on_a_failable_server(settings, dense, _Clock())
    async with pipeline as p:
        understanding = await p.understander.understand(NARRATIVE)
        hits = await dense.asearch(understanding.plan.corrected_question, settings.dense.top_k)
        await p.client.efetch_pubmed([h.pmid for h in hits])  # records cached, no search ever ran
        _ncbi_goes_down(server)
        outcome = await p.retrieve(understanding)
    docs = outcome.evidence.docs
    assert docs and outcome.adapte.pmids == () and outcome.eutils is not None and outcome.eutils.unavailable
    assert all({pr.arm for pr in d.provenance} == {"dense"} for d in docs)
    assert set(outcome.pmids) <= {h.pmid for h in hits}
    assert any(w.startswith("NCBI unavailable: PubMed search failed") for w in outcome.warnings)


async def test_ncbi_down_with_nothing_cached_is_still_a_503_with_the_reason(
    settings: Settings, dense: DenseRetriever
) -> None:
    pipeline, server = _pipeline_on_a_failable_server(settings, dense, _Clock())
    _ncbi_goes_down(server)
    async with pipeline as p:
        with pytest.raises(EutilsError, match="ESearch"):
            await p.search(NARRATIVE)
        app = create_app(settings, pipeline=p)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
                r = await c.post("/ask", json={"question": NARRATIVE})
    assert r.status_code == 503, r.text
    body = r.json()
    assert (
        body["error"] == "NCBI unavailable"
        and "ESearch" in body["reason"]
        and "ServerError" in body["reason"]
    )


def spy_esearch(pipeline: Pipeline) -> list[str]:
    """Every ESearch term the pipeline sends from now on (what would reach NCBI), in order."""
    queries: list[str] = []
    esearch = pipeline.client.esearch

    async def spy(term: str, **kwargs: object) -> object:
        queries.append(term)
        return await esearch(term, **kwargs)  # type: ignore[arg-type]

    pipeline.client.esearch = spy  # type: ignore[method-assign]
    return queries


async def test_a_phrase_whose_words_never_meet_in_the_literature_is_counted(
    phrase_pipeline: Pipeline,
) -> None:
    pipeline = phrase_pipeline
    from app.trust import assess_evidence

    queries = spy_esearch(pipeline)
    # "tongue" and "splitting" are both in the evidence, never together in any record: the evidence is
    # about the words, not the procedure.
    outcome = await pipeline.search("Does tongue splitting help breast cancer?")
    assert outcome.absent_phrases == 1 and '"tongue splitting*"[tiab]' in queries
    signals = pipeline.gate_signals(outcome, outcome.evidence.docs[:10])
    verdict = assess_evidence(signals, pipeline.settings.gate)
    assert verdict.abstain and any("phrase(s)" in r for r in verdict.reasons)
    # The README's narrative: its phrases are in the evidence (or the evidence is close): no phrase count.
    queries.clear()
    outcome = await pipeline.search(NARRATIVE)
    assert outcome.absent_phrases == 0 and not [q for q in queries if "*" in q]


# Synthetic PHI the scrubber misses as written (lower case, no capital, some without a cue), and the
# name, street and town words that must never reach NCBI.
PHI_NARRATIVES = (
    "zofia wisniewska here, does tongue splitting help breast cancer",
    "does tongue splitting help breast cancer? thanks, zofia garcia",
    "my husband john kowalski has angina, does tongue splitting help his breast cancer?",
    "my husband mary brown has breast cancer: does tongue splitting help?",
    "we live at 12 oak street springfield and mary jones asks: does tongue splitting help breast cancer?",
)
# More of them, whose evidence need not reach the phrase count: the name must not leave all the same.
MORE_PHI_NARRATIVES = (
    "I'm zofia kowalczyk, does tongue splitting help breast cancer?",
    "i'm zofia kowalczyk, does tongue splitting help breast cancer?",
    "It's zofia kowalczyk: does tongue splitting help breast cancer?",
    "my husband john wisniewski has breast cancer, does tongue splitting help?",
    "my wife's name is zofia kowalczyk, does tongue splitting help her breast cancer?",
)
PHI_WORDS = (
    "john kowalski mary brown oak springfield jones zofia wisniewska garcia kowalczyk wisniewski".split()
)


async def test_no_outbound_esearch_term_carries_a_name_street_or_town(phrase_pipeline: Pipeline) -> None:
    pipeline = phrase_pipeline
    import re

    queries = spy_esearch(pipeline)
    for question in PHI_NARRATIVES:
        queries.clear()
        outcome = await pipeline.search(question)
        # Not one query, ladder or count, carries the narrative's PHI ...
        leaked = [q for q in queries for w in PHI_WORDS if re.search(rf"\b{w}\b", q, re.I)]
        assert not leaked, (question, leaked)
        # ... and the gate's counts still run for the clinical words (the phrase the literature lacks).
        assert outcome.absent_phrases == 1 and '"tongue splitting*"[tiab]' in queries, (question, queries)
    for question in MORE_PHI_NARRATIVES:
        queries.clear()
        await pipeline.search(question)
        leaked = [q for q in queries for w in PHI_WORDS if re.search(rf"\b{w}\b", q, re.I)]
        assert not leaked, (question, leaked)


async def test_only_the_clinical_rare_word_is_counted_after_i_am(pipeline: Pipeline) -> None:
    queries = spy_esearch(pipeline)
    for question in (
        "I'm zofia kowalczyk, does quintaflozamide help angina?",
        "i'm zofia kowalczyk, does quintaflozamide help angina?",
        "It's zofia kowalczyk, does quintaflozamide help angina?",
    ):
        queries.clear()
        outcome = await pipeline.search(question)
        leaked = [q for q in queries if "zofia" in q.lower() or "kowalczyk" in q.lower()]
        assert not leaked, (question, queries)
        # The rare-word count still runs for the clinical word: the only rare word that leaves.
        assert '"quintaflozamide"[tiab]' in queries and outcome.absent_terms == 1, (question, queries)
        assert outcome.absent_technical == 1  # not an English word: a drug name nobody studied


async def test_no_count_query_leaves_without_the_everyday_words(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.trust._counts as module

    outcome = await pipeline.search("i'm zofia kowalczyk, does quintaflozamide help angina?")
    queries: list[str] = []

    async def spy(term: str, **kwargs: object) -> object:
        queries.append(term)
        raise AssertionError("no count query without the everyday words")

    pipeline.client.esearch = spy  # type: ignore[method-assign]
    # The MiniLM vocabulary package missing: "zofia" would look as rare as "quintaflozamide". Fail closed.
    monkeypatch.setattr(module, "common_english", frozenset)
    pipeline.absence.forget()
    rewriter = pipeline.understander.rewriter
    got = await pipeline.absence.count(
        outcome.understanding, outcome.evidence, outcome.dense, rewriter, None, 5
    )
    assert got == (0, 0, 0) and not queries


def test_a_count_query_passes_the_ladders_phi_check_in_any_casing() -> None:
    from app.trust._counts import _may_leave
    from core import common_english
    from retrieval.understand import scrub, scrub_any_case

    question = "my wife zofia kowalczyk has angina; my doctor suggests tongue splitting or quintaflozamide"
    found = scrub(question)
    checked = (found, scrub_any_case(question, common_english()))
    # As written the scrubber finds no name: the cue finds it once the words are capitalised.
    assert _may_leave('"kowalczyk"[tiab]', (found,))
    assert not _may_leave('"kowalczyk"[tiab]', checked)
    assert not _may_leave('"zofia"[tiab]', checked)
    # A name starts with no everyday word: the doctor "suggests", no doctor is named "Suggests Tongue".
    assert _may_leave('"tongue splitting*"[tiab]', checked)
    assert _may_leave('"quintaflozamide"[tiab]', checked)


async def test_phrases_are_counted_on_the_documents_the_gate_will_see(phrase_pipeline: Pipeline) -> None:
    pipeline = phrase_pipeline
    import threading

    import app.trust._counts as module
    from app.trust import assess_evidence
    from retrieval.embed import DenseHit

    outcome = await pipeline.search("Does tongue splitting help breast cancer?")
    docs = outcome.evidence.docs
    assert len(docs) > 6
    threshold = pipeline.settings.gate.absent_phrase_max_dense
    # The gate weighs the first five documents, all loosely related; a close one sits further down.
    dense = [DenseHit(docs[0].pmid, threshold - 0.1, 1), DenseHit(docs[6].pmid, threshold + 0.2, 2)]
    threads: list[str] = []
    unseen = module._unseen

    def spy(*args: object) -> object:
        threads.append(threading.current_thread().name)
        return unseen(*args)  # type: ignore[arg-type]

    module._unseen = spy  # type: ignore[assignment]

    async def count(dense: list[DenseHit], shown: int | None) -> tuple[int, int, int]:
        rewriter = pipeline.understander.rewriter
        return await pipeline.absence.count(
            outcome.understanding, outcome.evidence, dense, rewriter, None, shown
        )

    try:
        shown = await count(dense, 5)
        everything = await count(dense, None)
    finally:
        module._unseen = unseen
    terms = (outcome.absent_terms, outcome.absent_technical)
    assert shown == (*terms, 1)  # counted: it decides the verdict on those five documents
    assert everything == (*terms, 0)  # a close document among those weighed: not needed
    # Dense hits, but none among the documents the gate weighs: it has no similarity and never abstains
    # on phrases, so no phrase count is sent for nothing.
    sent = spy_esearch(pipeline)
    elsewhere = [DenseHit(docs[6].pmid, threshold - 0.1, 1)]
    assert (await count(elsewhere, 5))[2] == 0
    assert not [q for q in sent if "*" in q or " " in q], sent
    # Full texts are read off the event loop.
    assert threads and threading.main_thread().name not in threads
    outcome.dense, outcome.absent_phrases = dense, shown[2]
    verdict = assess_evidence(pipeline.gate_signals(outcome, docs[:5]), pipeline.settings.gate)
    assert verdict.abstain and any("phrase(s)" in r for r in verdict.reasons)


# --- zero hits by cause (issue 30): each cause driven through the local server's fault injection ----------


def _zero_hits() -> dict[str, float]:
    return {
        c: REGISTRY.get_sample_value("cometa_zero_hit_total", {"cause": c}) or 0.0 for c in ZERO_HIT_CAUSES
    }


def _counted(before: dict[str, float]) -> dict[str, float]:
    """The counter's change since ``before``, causes that moved only."""
    return {c: n - before[c] for c, n in _zero_hits().items() if n != before[c]}


@pytest.fixture
async def zero_node(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, Starlette]]:
    """``/ask`` over the local E-utilities server (its faults switched per test), no dense arm: a zero-hit is
    then the Boolean arm's, as in live mode without a dense index."""
    server = create_eutils_app(LocalServerSettings())
    eutils = settings.eutils.model_copy(
        update={"base_url": LOCAL_BASE_URL, "max_attempts": 1, "backoff_base_s": 0.0, "timeout_s": 0.5}
    )
    client = EutilsClient(
        eutils,
        transport=eutils_transport(server),
        store=MemoryStore(ttl_s=60, max_stale_s=0, max_entries=1000),
    )
    async with build_pipeline(
        settings, client=client, use_llm=False, use_dense=False, use_passages=False
    ) as p:
        app = create_app(settings, pipeline=p)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
                yield c, server


EXERCISE = "Does exercise help fatigue in breast cancer?"
ESEARCH_FAULTS = {
    "none_found": FaultSettings(esearch_empty_rate=1.0),
    "pubmed_error": FaultSettings(esearch_not_found_rate=1.0),
    "pubmed_warning": FaultSettings(esearch_quoted_not_found_rate=1.0),
}


@pytest.mark.parametrize("cause", list(ESEARCH_FAULTS))
async def test_a_search_that_finds_nothing_says_why(
    zero_node: tuple[httpx.AsyncClient, Starlette], cause: str
) -> None:
    c, server = zero_node
    server.state.settings.faults = ESEARCH_FAULTS[cause]
    before = _zero_hits()
    r = await c.post("/ask", json={"question": EXERCISE})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["evidence"] == [] and body["mode"] == "insufficient_evidence"
    assert body["zero_hit_cause"] == cause and body["query"]["zero_hit_cause"] == cause
    assert _counted(before) == {cause: 1.0}  # once per question, whatever the tiers and the fallback
    pubmed = [w for w in body["warnings"] if w.startswith("PubMed: ")]
    kind = {
        "none_found": None,
        "pubmed_error": "phrase not found",
        "pubmed_warning": "quoted phrase not found",
    }
    if kind[cause] is None:
        assert pubmed == []
        return
    # Fixed words; a phrase is named only when it is one of the plan's recognised concepts.
    plan = body["query"]["plan"]["concepts"]
    concepts = {n for con in plan for n in (con["text"], con["mesh"]) if n}
    named = {w.split(": ", 2)[2].strip('"') for w in pubmed if w.count(": ") == 2}
    assert pubmed and all(w.startswith(f"PubMed: {kind[cause]}") for w in pubmed)
    assert named and named <= concepts and {"exercise", "fatigue"} <= {n.lower() for n in named}


@pytest.mark.parametrize(
    "storm",
    [FaultSettings(error_500_rate=1.0), FaultSettings(stall_rate=1.0, stall_s=5.0)],
    ids=["5xx", "timeout"],
)
async def test_ncbi_unavailable_is_a_503_with_its_cause(
    zero_node: tuple[httpx.AsyncClient, Starlette], storm: FaultSettings
) -> None:
    c, server = zero_node
    server.state.settings.faults = storm
    before = _zero_hits()
    r = await c.post("/ask", json={"question": EXERCISE})
    assert r.status_code == 503, r.text
    assert r.json()["error"] == "NCBI unavailable" and r.json()["zero_hit_cause"] == "ncbi_unavailable"
    assert _counted(before) == {"ncbi_unavailable": 1.0}


async def test_a_question_of_personal_details_only_is_never_searched(
    zero_node: tuple[httpx.AsyncClient, Starlette],
) -> None:
    c, server = zero_node
    before, sent = _zero_hits(), len(server.state.request_log)
    r = await c.post("/ask", json={"question": "555-123-4567 john.smith@example.com"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["zero_hit_cause"] == "phi_scrubbed" and body["query"]["zero_hit_cause"] == "phi_scrubbed"
    assert body["query"]["tiers"] == [] and body["evidence"] == []
    assert not any(rec.endpoint == "esearch" for rec in list(server.state.request_log)[sent:])
    assert any("personal details were removed" in w for w in body["warnings"])
    assert _counted(before) == {"phi_scrubbed": 1.0}


@pytest.mark.parametrize(
    "question",
    [
        "asdkjh qwpoeiru zmxncbv lkjhgf",
        "My wife suddenly can't lift her arm and her face is drooping, what do I do?",
    ],
    ids=["out_of_scope", "urgent"],
)
async def test_a_refused_question_is_a_zero_hit_before_any_search(
    zero_node: tuple[httpx.AsyncClient, Starlette], question: str
) -> None:
    c, server = zero_node
    before, sent = _zero_hits(), len(server.state.request_log)
    r = await c.post("/ask", json={"question": question})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] in {"out_of_scope", "urgent"} and body["query"] is None
    assert body["zero_hit_cause"] == "refused"
    assert len(server.state.request_log) == sent
    assert _counted(before) == {"refused": 1.0}


async def test_a_question_with_evidence_is_no_zero_hit_and_search_counts_its_own(
    zero_node: tuple[httpx.AsyncClient, Starlette],
) -> None:
    c, server = zero_node
    before = _zero_hits()
    r = await c.post("/ask", json={"question": EXERCISE})
    assert r.status_code == 200 and r.json()["evidence"] and r.json()["zero_hit_cause"] is None
    assert r.json()["query"]["zero_hit_cause"] is None
    assert _counted(before) == {}
    server.state.settings.faults = FaultSettings(esearch_empty_rate=1.0)
    r = await c.post("/search", json={"question": "Does ginger help nausea?"})
    assert r.status_code == 200 and r.json()["zero_hit"] and r.json()["zero_hit_cause"] == "none_found"
    assert _counted(before) == {"none_found": 1.0}

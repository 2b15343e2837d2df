"""Publication notices end to end: a local NCBI-compatible server over a corpus whose records carry PubMed's
notices (written by the record writer, served by EFetch), ``/ask`` and the OpenAI-compatible chat over it.

A cited study's expression of concern reaches its citation and its evidence entry; of a review and its
update, the older one is dropped with a warning naming both; a review whose update the corpus does not hold
stays, its notice and a warning saying a newer version exists.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from app.answer import Answerer
from app.api import create_app
from app.container import build_pipeline
from app.settings import ApiSettings
from retrieval.evidence import DROP_SUPERSEDED
from retrieval.ncbi import (
    PubmedNotice,
    clear_corpus_cache,
    pubmed_article_xml,
    pubmed_articleset,
)
from tests._fakes import ScriptedLLM, boolean_only_settings
from tests.app.api.test_api import serve
from tests.retrieval.evidence.test_notices import record, update

pytestmark = pytest.mark.asyncio(loop_scope="module")

OLD, NEW, CONCERN, ORPHAN, ABSENT, NOTICE = (
    "92000001",
    "92000002",
    "92000003",
    "92000004",
    "92999999",
    "92999998",
)
QUESTION = "Does chemotherapy help in breast cancer?"
REPLY = f"Chemotherapy helps [PMID:{NEW}] [PMID:{CONCERN}] [PMID:{ORPHAN}] [PMID:{OLD}]."


RECORDS = (
    record(OLD, update(NEW), year=2010),
    record(NEW, year=2020),
    record(CONCERN, PubmedNotice("ExpressionOfConcernIn", "J Test. 2019;2:3", NOTICE)),
    record(ORPHAN, update(ABSENT)),
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("notices_world")
    (root / "pubmed").mkdir()
    (root / "pmc").mkdir()
    (root / "pubmed" / "records.xml").write_bytes(pubmed_articleset(pubmed_article_xml(r) for r in RECORDS))
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(corpus: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = boolean_only_settings(gate=False)  # the gate has its own tests; these are about citations
    settings = settings.model_copy(
        update={"local_server": settings.local_server.model_copy(update={"corpus_dir": corpus})}
    )
    async with build_pipeline(settings, use_llm=False, use_dense=False, use_passages=False) as pipeline:
        answerer = Answerer(ScriptedLLM(lambda _prompt: REPLY))
        app = create_app(
            settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline, answerer=answerer
        )
        async with serve(app) as c:
            yield c
    clear_corpus_cache()


async def test_ask_shows_the_notices_on_the_citations_and_prefers_the_update(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post("/ask", json={"question": QUESTION})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "llm"
    assert sorted(e["pmid"] for e in body["evidence"]) == [NEW, CONCERN, ORPHAN]  # OLD left out
    citations = {c["pmid"]: c for c in body["citations"]}
    assert set(citations) == {NEW, CONCERN, ORPHAN} and body["citations_removed"] == 1  # OLD is not evidence
    concern = {
        "type": "expression_of_concern",
        "pmid": NOTICE,
        "text": f"An expression of concern was published about this study (PMID {NOTICE}).",
    }
    assert citations[CONCERN]["notices"] == [concern]
    assert next(e for e in body["evidence"] if e["pmid"] == CONCERN)["notices"] == [concern]
    assert citations[ORPHAN]["notices"] == [
        {
            "type": "update",
            "pmid": ABSENT,
            "text": f"A newer version of this review exists: PMID {ABSENT}. "
            "It is not among the studies found for this question.",
        }
    ]
    assert citations[NEW]["notices"] == []
    warnings = body["warnings"]
    assert (
        f"PMID {OLD} left out of the evidence: a newer version of this review, PMID {NEW}, is used instead"
        in (warnings)
    )
    assert (
        f"PMID {ORPHAN}: a newer version of this review exists: PMID {ABSENT}, not among the studies used"
        in (warnings)
    )
    assert body["retracted_excluded"] == []


async def test_search_says_which_version_replaced_the_older_review(client: httpx.AsyncClient) -> None:
    r = await client.post("/search", json={"question": QUESTION})
    assert r.status_code == 200, r.text
    dropped = r.json()["dropped"]
    assert {"pmid": OLD, "reason": DROP_SUPERSEDED, "replaced_by": NEW} in dropped


async def test_the_chat_answer_lists_the_notices_under_their_sources(client: httpx.AsyncClient) -> None:
    payload = {"model": "cometa", "messages": [{"role": "user", "content": QUESTION}]}
    r = await client.post("/v1/chat/completions", json=payload)
    assert r.status_code == 200, r.text
    content = r.json()["choices"][0]["message"]["content"]
    sources = content.split("**Sources**", 1)[1]
    assert (
        f"   - **Note:** An expression of concern was published about this study (PMID {NOTICE})." in sources
    )
    assert f"   - **Note:** A newer version of this review exists: PMID {ABSENT}." in sources

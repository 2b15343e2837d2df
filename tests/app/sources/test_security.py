"""The security review's holes, each tried as an attacker would, in-process (issue 16).

One test per hole: poisoning the absence cache through ``POST /judge``; telling a private collection or
node from a missing one (status, body, timing) on ``/ask``, ``/collections`` and ``/collections/search``;
a node speaking for another institution or sending an oversized or ill-typed reply; access denial dressed
up as silence; a handbook longer than the context budget cut without a word. Token exchange across nodes
(forwarded tokens, audiences, issuers, anonymous callers) is in ``test_token_exchange.py``.
"""

from __future__ import annotations

import json
import shutil
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

from app.api import create_app
from app.judge import CrossSourceJudge
from app.pipeline import Pipeline
from app.settings import AccessSettings, ApiSettings, Policy
from app.sources import SourcesService
from retrieval.collections import CollectionStore
from tests._fakes import Reply, ScriptedLLM
from tests._handbooks import BowEncoder, build_store, handbook_llm, node_settings

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
    async with Pipeline(node_settings(root), use_llm=False, use_dense=False, use_passages=False) as p:
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

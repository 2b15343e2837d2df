"""The Asker's PHI policy: one scrub decision for every text bound for a language model.

A narrative with a synthetic name, date of birth, MRN, address and phone number goes through every path
that builds a prompt: ``/ask`` with the judge (rewrite, answer, per-source answers, absence screen,
comparison), ``/ask/stream`` (the streamed answer), ``/ask`` across PubMed and a collection (per-source
answers, screen, comparison), ``/judge`` and the evaluation suites' in-process ``/ask``. The scripted LLM
records every request it gets.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from app.answer import Answerer
from app.api import create_app
from app.asker import Asker
from app.container import build_pipeline
from app.privacy import PhiPolicy
from app.settings import ApiSettings, Settings
from app.sources import SourcesService
from eval import AskRunner, RunOptions
from llm import LLMUnavailable
from tests._fakes import Reply, ScriptedLLM
from tests._handbooks import BowEncoder, build_store, node_settings

PHI = {
    "name": "Linda Parker",
    "date of birth": "03/14/1962",
    "MRN": "4417823",
    "address": "42 Elm Street",
    "phone": "617-555-0134",
}
# What must not survive, also in part (a surname alone, the number without its area code).
NEEDLES = {
    "name": ("Linda", "Parker"),
    "date of birth": ("03/14/1962", "14/1962"),
    "MRN": ("4417823",),
    "address": ("42 Elm", "Elm Street"),
    "phone": ("617-555-0134", "555-0134"),
}
QUESTION = (
    f"My name is {PHI['name']}, date of birth {PHI['date of birth']}, MRN {PHI['MRN']}, I live at "
    f"{PHI['address']}, Springfield, phone {PHI['phone']}. My mother had a kidney transplant and now has a "
    "mass on her pancreas: can she travel abroad after a Whipple operation?"
)
# Every prompt the paths above render; the judge's absence screen sees an answer, never the question.
PROMPTS = {
    "rewrite_query",
    "answer_patient",
    "answer_per_source",
    "judge_absence",
    "judge_compare",
}
ASKS_THE_QUESTION = PROMPTS - {"judge_absence"}


def script(prompt: str) -> Reply:
    if "Does this response indicate" in prompt:
        return "NO"
    if "ABSENT / CONSISTENT / COMPLEMENTARY / DIVERGENT / CONTRADICTORY" in prompt:
        return {
            "classification": "DIVERGENT",
            "reasoning": "one source allows travel sooner",
            "divergence_topic": "travel",
            "clinical_significance": "medium",
        }
    if "PubMed searching" in prompt:
        return LLMUnavailable("scripted: the deterministic rewriter plans")  # the request is recorded first
    return "Travel is possible once recovery allows [PMID:19459018]."


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("collections") / "root"
    build_store(root, ["eastgate"])
    return root


@pytest_asyncio.fixture
async def asked(root: Path, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[ScriptedLLM]:
    """The question through every LLM-bound path, with ``COMETA_LLM__SCRUB_PHI_FOR_LLM`` as parametrised."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COMETA_LLM__SCRUB_PHI_FOR_LLM", request.param)
        # Every LLM-bound path must run, so the evidence gate may not abstain on this travel question (the
        # bundled corpus has no travel study; the gate's own tests are tests/app/test_gate.py).
        mp.setenv("COMETA_GATE__ENABLED", "false")
        settings = node_settings(root)
    llm = ScriptedLLM(script)
    async with build_pipeline(settings, llm=llm, use_dense=False, use_passages=False) as pipeline:  # type: ignore[arg-type]
        app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
        async with app.router.lifespan_context(app):
            app.state.sources = SourcesService(settings, pipeline, encoder=BowEncoder(), reranker=None)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://node") as c:
                await _all_paths(c)
        async with AskRunner(RunOptions(out_dir=tmp_path), pipeline=pipeline) as runner:
            assert (await runner.ask({"question": QUESTION}))["mode"] == "llm"
    yield llm


async def _all_paths(c: httpx.AsyncClient) -> None:
    r = await c.post("/ask", json={"question": QUESTION, "judge": True})
    assert r.status_code == 200, r.text
    assert r.json()["mode"] == "llm" and r.json()["judge"]["pairs_judged_by_llm"] > 0
    r = await c.post("/ask/stream", json={"question": QUESTION, "judge": True})
    events = [b.split("\n")[1] for b in r.text.strip().split("\n\n")]
    assert "event: token" in events and "event: judge" in events and events[-1] == "event: done"
    r = await c.post("/ask", json={"question": QUESTION, "sources": ["pubmed", "eastgate"]})
    assert r.status_code == 200, r.text
    assert [s["answer_mode"] for s in r.json()["sources"]] == ["llm", "llm"] and r.json()["judge"]
    answers = [{"source_id": "a", "text": "Wait 3 months."}, {"source_id": "b", "text": "Wait 12 months."}]
    r = await c.post("/judge", json={"question": QUESTION, "answers": answers})
    assert r.status_code == 200 and r.json()["pairs_judged_by_llm"] == 1


def _bodies(llm: ScriptedLLM) -> list[tuple[str, str]]:
    """(prompt name, request body) of every LLM call, in call order."""
    return [
        (version.split("@")[0], json.dumps(list(messages)))
        for version, messages in zip(llm.versions, llm.seen, strict=True)
    ]


@pytest.mark.parametrize("asked", ["true"], indirect=True)
def test_scrubbing_keeps_phi_out_of_every_llm_request(asked: ScriptedLLM) -> None:
    bodies = _bodies(asked)
    assert {name for name, _ in bodies} == PROMPTS
    assert asked.stream_outcomes and all(o == "done" for o in asked.stream_outcomes)
    for name, body in bodies:
        leaked = [kind for kind, needles in NEEDLES.items() if any(n in body for n in needles)]
        assert not leaked, f"{name} prompt carries the {', '.join(leaked)}"
    for name, body in bodies:
        if name in ASKS_THE_QUESTION:
            # Scrubbed, not dropped: the clinical question is there, the identifiers are placeholders.
            assert "Whipple operation" in body and "[NAME]" in body and "[PHONE]" in body, name


@pytest.mark.parametrize("asked", ["false"], indirect=True)
def test_without_scrubbing_the_question_reaches_the_prompts_as_asked(asked: ScriptedLLM) -> None:
    bodies = _bodies(asked)
    assert {name for name, _ in bodies} == PROMPTS
    for name, body in bodies:
        if name in ASKS_THE_QUESTION:
            assert json.dumps(QUESTION)[1:-1] in body, name


async def test_the_asker_refuses_a_rewriter_with_another_phi_decision() -> None:
    settings = Settings().offline()
    other = PhiPolicy(scrub_for_llm=not settings.llm.scrub_phi_for_llm)
    async with build_pipeline(settings, use_llm=False, use_dense=False, use_passages=False) as pipeline:
        with pytest.raises(ValueError, match="one PHI decision"):
            Asker(pipeline, Answerer(None), None, phi=other)

"""Answerer: no-evidence short circuit, mechanical citation checks, extractive fallback, choice parsing."""

from __future__ import annotations

from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from app.answer import (
    INSUFFICIENT_TEXT,
    Answerer,
    ChoiceOutput,
    build_evidence_context,
    extractive_answer,
    parse_citation_ids,
    verify_citations,
)
from app.settings import AnswerSettings
from llm import LLMUnavailable
from retrieval.collections import InstEvidence, SectionRef
from retrieval.passages import Passage, PassageContext
from tests._evidence import DOCS, TODAY
from tests._fakes import ScriptedLLM

M = TypeVar("M", bound=BaseModel)


def answerer(llm: ScriptedLLM | None, **settings: Any) -> Answerer:
    return Answerer(llm, AnswerSettings(**settings), today=TODAY)


async def test_zero_evidence_never_calls_llm() -> None:
    llm = ScriptedLLM(lambda _p: pytest.fail("the LLM must not be called"))
    ans = await answerer(llm).answer("Does exercise help?", [])
    assert ans.mode == "insufficient_evidence" and ans.text == INSUFFICIENT_TEXT
    assert ans.citations == () and llm.seen == []
    choice = await answerer(llm).answer(
        "q?", [], options={"A": "yes", "B": "no", "C": "insufficient information"}, allow_insufficient=True
    )
    assert choice.answer_choice == "C" and choice.mode == "insufficient_evidence"
    plain = await answerer(llm).answer("q?", [], options={"A": "yes", "B": "no"})
    assert plain.answer_choice is None


async def test_free_text_removes_hallucinated_citation_and_keeps_order() -> None:
    reply = (
        "Walking helps quality of life [PMID:222]. Exercise reduces fatigue [PMID: 111, 999]. "
        "It also cures cancer [PMID:555]."
    )
    llm = ScriptedLLM(lambda _p: reply)
    ans = await answerer(llm).answer("Does exercise help?", DOCS)
    assert ans.mode == "llm"
    assert [c.pmid for c in ans.citations] == ["222", "111"]
    assert ans.citations_removed == 2
    assert "999" not in ans.text and "555" not in ans.text
    assert "[PMID:111]" in ans.text and "cures cancer." in ans.text
    assert ans.prompt_id == "answer_patient@1" and ans.prompt_tokens == 100
    prompt = llm.seen[0][-1]["content"] + llm.seen[0][0]["content"]
    assert "[PMID:111] | 2022 | Review | section: Abstract" in prompt
    assert "2026" in prompt  # the current year reaches the prompt (evidence-age statement)
    assert any("removed 2" in w for w in ans.warnings)


async def test_llm_error_falls_back_to_extractive_with_citations() -> None:
    llm = ScriptedLLM(lambda _p: LLMUnavailable("down"))
    ans = await answerer(llm, extractive_sentences=3).answer("Does exercise help?", DOCS)
    assert ans.mode == "extractive"
    # Round-robin: best source's first sentence, then the next source's, then back to the first.
    assert ans.text.startswith(
        "Exercise reduces fatigue during chemotherapy in most trials. [PMID:111] Walking"
    )
    assert ans.text.count("[PMID:") == 3
    assert [c.pmid for c in ans.citations] == ["111", "222"]
    assert any("unavailable" in w for w in ans.warnings)
    none_llm = await answerer(None).answer("Does exercise help?", DOCS)
    assert none_llm.mode == "extractive" and none_llm.citations


async def test_garbage_output_falls_back_to_extractive() -> None:
    llm = ScriptedLLM(lambda _p: "<think>hmm</think>  ")
    ans = await answerer(llm).answer("Does exercise help?", DOCS)
    assert ans.mode == "extractive" and ans.citations


async def test_passages_preferred_and_budgeted() -> None:
    def passage(pmid: str, rank: int, text: str) -> Passage:
        return Passage(
            f"c{pmid}{rank}",
            pmid,
            None,
            "D1",
            1,
            "section",
            "Results",
            ("Results",),
            0,
            0,
            len(text),
            text,
            10,
            {"rerank": 1.0},
            rank,
        )

    ctx = PassageContext(
        (passage("222", 1, "Passage two text here."), passage("111", 2, "Passage one text here.")),
        None,
        None,
        None,
        10,
        100,
        2,
    )
    ev = build_evidence_context(DOCS, ctx, max_passages=1, max_chars=10_000)
    assert [b.key for b in ev.blocks] == ["222"] and "section: Results" in ev.blocks[0].label
    tiny = build_evidence_context(DOCS, None, max_chars=200)
    assert len(tiny.blocks) == 1 and len(tiny.text) <= 200


def test_collection_evidence_context_is_cited_by_document_and_section() -> None:
    handbook = InstEvidence(
        "a",
        "hb",
        "Handbook",
        "chunks",
        "  Wait 3 months before you travel abroad. Take your tablets.\n",
        (SectionRef("s1", "Travel", 3, 4), SectionRef("s2", "", None, None)),
        0.9,
    )
    other = InstEvidence("b", "leaflet", "", "whole", "Travel abroad after 6 months only. " * 40, (), 0.5)
    ev = build_evidence_context([handbook, other], max_chars=10_000)
    assert ev.text.startswith(
        "[DOC:a/hb §Travel pp.3-4] Handbook | sections: Travel pp.3-4\n"
        "Wait 3 months before you travel abroad. Take your tablets.\n\n[DOC:b/leaflet] \nTravel abroad"
    )
    assert [b.key for b in ev.blocks] == ["a/hb", "b/leaflet"] and ev.citations == {}
    # The budget is exact for collection evidence: the first document is cut, never dropped.
    for budget in (40, 120, 300, 1200):
        fitted = build_evidence_context([other, handbook], max_chars=budget)
        assert len(fitted.text) <= budget and len(fitted.blocks) == 1
    text, cited = extractive_answer(ev, 3)
    assert text == (
        "Wait 3 months before you travel abroad. [DOC:a/hb §Travel pp.3-4] "
        "Travel abroad after 6 months only. [DOC:b/leaflet] Take your tablets. [DOC:a/hb §Travel pp.3-4]"
    )
    assert cited == ("a/hb", "b/leaflet")
    with pytest.raises(TypeError, match="one source"):
        build_evidence_context([DOCS[0], handbook])


def test_citation_parsing() -> None:
    assert parse_citation_ids("a [PMID:1] b [pmid: 2, 3] c [PMID:1]") == ["1", "2", "3", "1"]
    text, order, removed = verify_citations("x [PMID:9].", {"1"})
    assert (text, order, removed) == ("x.", [], 1)


async def test_choice_json_parsed() -> None:
    llm = ScriptedLLM(
        lambda _p: {"step_by_step_thinking": "Trials show benefit [PMID:111].", "answer_choice": "(a)"}
    )
    ans = await answerer(llm).answer(
        "Does exercise help?", DOCS, options={"A": "yes", "B": "no", "C": "maybe"}
    )
    assert ans.answer_choice == "A" and ans.text == "A. yes" and ans.mode == "llm"
    assert ans.reasoning == "Trials show benefit [PMID:111]."
    assert [c.pmid for c in ans.citations] == ["111"]
    assert "POTENTIAL CHOICES" in llm.seen[0][-1]["content"]
    schema = ChoiceOutput.for_options({"A": "yes", "B": "no"})
    assert schema.model_json_schema()["properties"]["answer_choice"]["enum"] == ["A", "B"]
    assert schema.model_validate({"answer_choice": "no"}).answer_choice == "B"


async def test_choice_invalid_letter_gives_none_and_warning() -> None:
    llm = ScriptedLLM(lambda _p: {"step_by_step_thinking": "...", "answer_choice": "E"})
    ans = await answerer(llm).answer("q?", DOCS, options={"A": "yes", "B": "no"})
    assert ans.answer_choice is None
    assert any("unparseable answer" in w for w in ans.warnings)


async def test_choice_insufficient_option() -> None:
    llm = ScriptedLLM(lambda _p: {"step_by_step_thinking": "Not enough.", "answer_choice": "D"})
    options = {"A": "yes", "B": "no", "C": "maybe", "D": "Insufficient information"}
    ans = await answerer(llm).answer("q?", DOCS, options=options, allow_insufficient=True)
    assert ans.answer_choice == "D"
    assert "choose D" in llm.seen[0][-1]["content"]
    assert any("insufficient" in w for w in ans.warnings)
    # Without allow_insufficient the instruction is not given.
    await answerer(llm).answer("q?", DOCS, options=options)
    assert "choose D" not in llm.seen[1][-1]["content"]


async def test_choice_without_llm() -> None:
    ans = await answerer(None).answer("q?", DOCS, options={"A": "yes", "B": "no"})
    assert ans.answer_choice is None and ans.mode == "extractive" and ans.warnings

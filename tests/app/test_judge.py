"""Cross-source judge: absence pre-screen, caching, one compare call per pair, fallback parser, rates."""

from __future__ import annotations

import dataclasses
import re

import pytest

from app.judge import CrossSourceJudge, SourceAnswer, parse_label_fallback, parse_yes_no
from llm import LLMTimeout
from tests._evidence import make_doc
from tests._fakes import Reply, ScriptedLLM

Q = "Should I stop aspirin before surgery?"


def present(pmid: str, text: str = "Stop aspirin 7 days before.") -> SourceAnswer:
    return SourceAnswer(pmid, f"PMID:{pmid}", text, False, None)


def absent(pmid: str) -> SourceAnswer:
    return SourceAnswer(pmid, f"PMID:{pmid}", "NOT ADDRESSED", True, "prefix")


def pair_of(prompt: str) -> tuple[str, str]:
    a, b = re.findall(r"Answer [AB] \(PMID:(\d+)\)", prompt)
    return a, b


async def test_per_source_prefix_and_yes_no_screen_with_cache() -> None:
    def script(prompt: str) -> str:
        if "Does this response indicate" in prompt:
            return "**Yes.**" if "nothing relevant" in prompt else "NO"
        if "(PMID:1)" in prompt:
            return '"NOT ADDRESSED: This source does not contain information on this topic."'
        if "(PMID:2)" in prompt:
            return "The article mentions nothing relevant to aspirin."
        return "Stop aspirin 5 days before surgery (Methods)."

    llm = ScriptedLLM(script)
    judge = CrossSourceJudge(llm)
    docs = [make_doc(p, f"Abstract of {p} about aspirin.") for p in ("1", "2", "3")]
    answers = await judge.answer_per_source(Q, docs)
    assert [(a.absent, a.absence_method) for a in answers] == [
        (True, "prefix"),
        (True, "llm"),
        (False, "llm"),
    ]
    yes_no = [m for m in llm.seen if "Does this response indicate" in m[-1]["content"]]
    assert len(yes_no) == 2  # the prefix-matched answer never reaches the YES/NO check
    assert "answer only" not in llm.seen[0][-1]["content"]  # per-source prompt carries the single source
    assert "Abstract of 1" in llm.seen[0][-1]["content"] and "Abstract of 2" not in llm.seen[0][-1]["content"]
    # Cache hit: the same answer written from the same evidence is not screened twice.
    again = await judge.screen(Q, answers[2])
    assert again.absent is False and again.absence_method == "llm"
    assert len([m for m in llm.seen if "Does this response indicate" in m[-1]["content"]]) == 2
    # The cache is keyed by the answer's content, not by (source, question): another text from the same
    # source, or the same text from changed evidence, is screened afresh; a caller's answer (no evidence
    # version: POST /judge) never reads or fills the cache.
    other = await judge.screen(
        Q, dataclasses.replace(answers[2], text="The article mentions nothing relevant.")
    )
    assert other.absent is True
    newer = await judge.screen(Q, dataclasses.replace(answers[2], evidence_version="v2"))
    assert newer.absent is False
    for _ in range(2):
        assert (await judge.screen(Q, present("3", answers[2].text))).absent is False
    assert len([m for m in llm.seen if "Does this response indicate" in m[-1]["content"]]) == 6


async def test_screen_failure_treated_as_present_and_recorded() -> None:
    judge = CrossSourceJudge(ScriptedLLM(lambda p: LLMTimeout("slow")))
    screened = await judge.screen(Q, present("5"))
    assert screened.absent is False and screened.absence_method is None and screened.screen_error


def test_parsers() -> None:
    assert parse_yes_no("<think>no idea</think> YES") is True
    assert parse_yes_no("no.") is False and parse_yes_no("maybe") is None
    assert (
        parse_label_fallback('{"classification": "DIVERGENT", "reasoning": "not CONSISTENT"') == "DIVERGENT"
    )
    assert parse_label_fallback("I think these are COMPLEMENTARY, not CONSISTENT.") == "COMPLEMENTARY"
    assert parse_label_fallback("they are contradictory") == "CONTRADICTORY"
    assert parse_label_fallback("no idea") is None


async def test_four_sources_rates_matrix_and_note() -> None:
    # 6 pairs by hand: 2 ABSENT (the judge's own verdict), 1 CONSISTENT, 2 DIVERGENT, 1 COMPLEMENTARY.
    labels = {
        ("1", "2"): {"classification": "ABSENT", "reasoning": "no content"},
        ("1", "3"): {"classification": "CONSISTENT", "reasoning": "same"},
        ("1", "4"): {
            "classification": "DIVERGENT",
            "reasoning": "different days",
            "divergence_topic": "how many days before surgery to stop",
            "clinical_significance": "High",
        },
        ("2", "3"): {"classification": "absent", "reasoning": "", "divergence_topic": "null"},
        ("2", "4"): {"classification": "COMPLEMENTARY", "reasoning": "more detail"},
    }

    def script(prompt: str) -> Reply:
        a, b = pair_of(prompt)
        if (a, b) == ("3", "4"):
            return "The answers are DIVERGENT on bridging therapy."  # not JSON -> label fallback
        return labels[(a, b)]

    llm = ScriptedLLM(script)
    report = await CrossSourceJudge(llm).judge(Q, [present(p) for p in ("1", "2", "3", "4")])
    assert len(llm.seen) == 6 and report.pairs_judged_by_llm == 6
    assert report.counts == {
        "ABSENT": 2,
        "CONSISTENT": 1,
        "COMPLEMENTARY": 1,
        "DIVERGENT": 2,
        "CONTRADICTORY": 0,
    }
    # The paper's absence rate is per source (none of the four answers is absent); the pair share is not it.
    assert report.r_abs == 0.0 and report.r_abs_pairs == pytest.approx(2 / 6)
    assert report.r_div == pytest.approx(2 / 4)
    assert report.r_con == pytest.approx(1 / 4)
    assert report.any_div
    m = report.matrix
    assert all(m[i][i] is None for i in range(4))
    assert all(m[i][j] == m[j][i] for i in range(4) for j in range(4))
    assert m[0][3] == "DIVERGENT" and m[2][3] == "DIVERGENT"
    fallback = next(p for p in report.pairs if (p.a, p.b) == ("PMID:3", "PMID:4"))
    assert fallback.parsed_by == "label-fallback" and fallback.reasoning is None
    first = next(p for p in report.pairs if (p.a, p.b) == ("PMID:1", "PMID:4"))
    assert first.clinical_significance == "high" and first.parsed_by == "json"
    assert report.note is not None
    assert "how many days before surgery to stop" in report.note and "PMID:1 and PMID:4" in report.note
    assert report.sources == ("PMID:1", "PMID:2", "PMID:3", "PMID:4")


async def test_absent_pairs_skip_llm_and_one_call_per_present_pair() -> None:
    llm = ScriptedLLM(lambda p: {"classification": "CONSISTENT", "reasoning": "same"})
    answers = [absent("1"), present("2"), present("3"), present("4")]
    report = await CrossSourceJudge(llm).judge(Q, answers)
    assert len(llm.seen) == 3  # pairs among 2, 3, 4 only
    assert [p.parsed_by for p in report.pairs[:3]] == ["prescreen"] * 3
    # One source of four is silent: r_abs 1/4, though it makes half the pairs ABSENT.
    assert report.r_abs == pytest.approx(1 / 4) and report.r_abs_pairs == pytest.approx(3 / 6)
    assert report.r_con == 1.0 and report.r_div == 0.0
    assert not report.any_div and report.note is None


async def test_pair_error_excluded_from_rates() -> None:
    def script(prompt: str) -> Reply:
        if pair_of(prompt) == ("1", "2"):
            return LLMTimeout("slow")
        return {"classification": "CONTRADICTORY", "reasoning": "opposite", "divergence_topic": "dose"}

    report = await CrossSourceJudge(ScriptedLLM(script)).judge(Q, [present("1"), present("2"), present("3")])
    assert report.matrix[0][1] is None and report.matrix[1][0] is None
    assert sum(report.counts.values()) == 2
    assert report.r_div == 1.0 and report.r_abs == 0.0 and report.r_abs_pairs == 0.0
    assert len(report.errors) == 1 and "PMID:1 vs PMID:2" in report.errors[0]
    assert "opposite guidance on dose" in (report.note or "")


async def test_run_end_to_end() -> None:
    def script(prompt: str) -> Reply:
        if "Does this response indicate" in prompt:
            return "NO"
        if "Patient Question" in prompt:
            return (
                "Stop aspirin." if "(PMID:7)" in prompt else "NOT ADDRESSED: This source does not contain it."
            )
        return {"classification": "CONSISTENT", "reasoning": "same"}

    report = await CrossSourceJudge(ScriptedLLM(script), max_sources=2).run(
        Q, [make_doc(p, "text about aspirin") for p in ("7", "8", "9")]
    )
    assert report.sources == ("PMID:7", "PMID:8")
    assert report.matrix[0][1] == "ABSENT" and report.pairs_judged_by_llm == 0


async def test_a_failed_per_source_answer_is_recorded_not_judged() -> None:
    def script(prompt: str) -> Reply:
        if "(PMID:7)" in prompt:
            return LLMTimeout("no reply within 30 s")
        if "Does this response indicate" in prompt:
            return "NO"
        return "Stop aspirin 5 days before."

    judge = CrossSourceJudge(ScriptedLLM(script))
    answers = await judge.answer_per_source(Q, [make_doc(p, "text about aspirin") for p in ("7", "8")])
    assert answers[0].error == "PMID:7: answer failed: no reply within 30 s" and answers[0].text == ""
    assert answers[1].error is None and answers[1].absence_method == "llm"
    report = await judge.judge(Q, answers)
    assert report.matrix[0][1] is None and report.pairs_judged_by_llm == 0
    assert report.errors == ("PMID:7: answer failed: no reply within 30 s",)

"""CCRS suite: judge parsing, clamping, failure counting, AC blending and the aggregated statistics."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from eval import EvalInputError, ItemLog, RunOptions, ccrs, write_result
from eval.ccrs import CcrsItem, SystemAnswer, aggregate, exact_match, judge_answer, parse_score, score_items
from eval.stats import fisher_z_average, pearson
from llm import LLMSettings, LLMTimeout
from tests._fakes import ScriptedLLM

METRIC_OF = {
    "Contextual Coherence": "CC",
    "Question Relevance": "QR",
    "Information Density": "ID",
    "Answer Correctness": "AC",
    "Information Recall": "IR",
}


def _metric(prompt: str) -> str:
    return next(m for phrase, m in METRIC_OF.items() if f"Evaluate the {phrase}" in prompt)


def test_parse_score_clamps_and_flags() -> None:
    assert parse_score("85") == (85.0, False)
    assert parse_score("Score: 72.5/100") == (72.5, False)
    assert parse_score("150") == (100.0, True)
    assert parse_score("-5") == (0.0, True)
    assert parse_score("excellent") == (None, False)


def test_exact_match_is_normalised_and_strict() -> None:
    assert exact_match("The tumour shrank.", "tumour shrank") == 1.0
    assert exact_match("It shrank a lot", "tumour shrank") == 0.0
    assert exact_match("", "") == 0.0  # an empty response never matches


def test_judge_answer_renders_the_paper_prompt_and_reports_status() -> None:
    llm = ScriptedLLM(lambda _p: " 64\n")
    js = asyncio.run(
        judge_answer(llm, "AC", question="q?", response="resp", context="ctx " * 2000, ground_truth="gold")
    )
    assert (js.value, js.status) == (0.64, "ok")
    assert llm.versions == ["ccrs_ac@1"]
    text = llm.seen[0][-1]["content"]
    assert "**Ground Truth Answer (g):** gold" in text
    assert "Only print the score and nothing else." in text
    assert "ctx " * 1000 in text and "ctx " * 1001 not in text  # context cut at 4,000 characters
    assert (
        asyncio.run(judge_answer(llm, "QR", question="q", response="r", context="", ground_truth="g")).status
        == "ok"
    )
    assert "User Query (q):** q" in llm.seen[1][-1]["content"]
    bad = ScriptedLLM(lambda _p: "I cannot rate this")
    assert asyncio.run(judge_answer(bad, "CC", question="q", response="r", context="", ground_truth="g")) == (
        ccrs.JudgeScore(None, "I cannot rate this", "parse_failure")
    )
    down = ScriptedLLM(lambda _p: LLMTimeout("slow"))
    assert asyncio.run(
        judge_answer(down, "IR", question="q", response="r", context="", ground_truth="g")
    ).status == ("judge_error")
    # An empty response is 0 by the prompts' own rule, without a judge call.
    silent = ScriptedLLM(lambda _p: "99")
    js = asyncio.run(judge_answer(silent, "CC", question="q", response="  ", context="c", ground_truth="g"))
    assert (js.value, js.status, silent.seen) == (0.0, "empty_response", [])


ITEMS = [CcrsItem(f"standard:pubmedqa:{i}", f"question {i}?", f"gold answer {i}") for i in (1, 2, 3)]


def _systems() -> dict[str, Any]:
    async def good(item: CcrsItem) -> SystemAnswer:
        i = item.question.split()[1].rstrip("?")
        return SystemAnswer(f"gold answer {i}", "retrieved context")  # equals g: EM = 1

    async def bad(item: CcrsItem) -> SystemAnswer:
        i = item.question.split()[1].rstrip("?")
        return SystemAnswer(f"bad answer {i}", "")

    async def broken(_item: CcrsItem) -> SystemAnswer:
        raise LLMTimeout("reader down")

    return {"good": good, "bad": bad, "broken": broken}


def _judge(prompt: str) -> str:
    metric = _metric(prompt)
    if "gold answer 3" in prompt.split("**Generated Response (r):**")[1][:20] and metric == "CC":
        return "excellent"  # good, item 3, CC: parse failure
    if "bad answer 2" in prompt and metric == "QR":
        return "150"  # clamped to 100
    return "90" if "**Generated Response (r):** gold answer" in prompt else "20"


def test_score_items_and_aggregate_numbers(tmp_path: Path) -> None:
    judge = ScriptedLLM(_judge)
    log = ItemLog(tmp_path / "items.jsonl", resume=True)
    records = asyncio.run(score_items(ITEMS, _systems(), judge, log))
    # good and bad: 5 judgements per item; broken: a reader error, no judge call
    assert len(judge.seen) == 3 * 2 * 5
    agg = aggregate(records, ["good", "bad", "broken"], B=200, seed=0)
    good, bad, broken = (agg["systems"][s] for s in ("good", "bad", "broken"))
    # good CC: items 1, 2 -> 0.9; item 3 unparseable -> excluded and counted
    assert (good["CC"]["mean"], good["CC"]["n"], good["CC"]["parse_failures"]) == (pytest.approx(0.9), 2, 1)
    # AC = 0.7 * EM + 0.3 * judge: 0.7 * 1 + 0.3 * 0.9 = 0.97 (good); 0.7 * 0 + 0.3 * 0.2 = 0.06 (bad)
    assert good["AC"]["mean"] == pytest.approx(0.97)
    assert bad["AC"]["mean"] == pytest.approx(0.06)
    # bad QR: 0.2, 1.0 (150 clamped), 0.2 -> mean 1.4 / 3; one clamped; one of three at the ceiling
    assert bad["QR"]["mean"] == pytest.approx(1.4 / 3)
    assert bad["QR"]["clamped"] == 1
    assert bad["QR"]["ceiling_share"] == pytest.approx(1 / 3)
    # ties: good QR all 0.9 -> 1.0; bad QR {0.2: 2, 1.0: 1} -> 2*1 / (3*2) = 1/3
    assert good["QR"]["tie_probability"] == pytest.approx(1.0)
    assert bad["QR"]["tie_probability"] == pytest.approx(1 / 3)
    assert bad["ID"]["histogram"] == [0, 0, 3, 0, 0, 0, 0, 0, 0, 0]
    # broken: reader errors, counted on their own and in no mean (not 0 at the floor)
    assert math.isnan(broken["IR"]["mean"])
    assert (broken["IR"]["n"], broken["IR"]["reader_errors"], broken["IR"]["empty_responses"]) == (0, 3, 0)
    assert records[0]["systems"]["broken"]["status"]["CC"] == "reader_error"
    assert records[0]["systems"]["broken"]["mode"] == "error:LLMTimeout"
    assert agg["modes"] == {"good": {"llm": 3}, "bad": {"llm": 3}, "broken": {"error:LLMTimeout": 3}}
    # Tukey needs every system scored on an item: with the broken reader in, no item qualifies
    assert agg["tukey"]["AC"]["n_items"] == 0
    two = aggregate(records, ["good", "bad"], B=200, seed=0)
    # Tukey on CC uses only the two items both systems have a score for
    assert two["tukey"]["CC"]["n_items"] == 2
    assert two["tukey"]["AC"]["n_items"] == 3
    assert two["tukey"]["AC"]["pairs_total"] == 1
    assert two["tukey"]["AC"]["pairs"]["good vs bad"]["diff"] == pytest.approx(0.91)


def test_score_items_resumes_without_re_judging(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    first = ScriptedLLM(_judge)
    asyncio.run(score_items(ITEMS[:2], _systems(), first, ItemLog(path, resume=True)))
    again = ScriptedLLM(_judge)
    records = asyncio.run(score_items(ITEMS, _systems(), again, ItemLog(path, resume=True)))
    assert len(again.seen) == 2 * 5  # only item 3, for good and bad
    assert [r["key"] for r in records] == [it.key for it in ITEMS]
    assert len(path.read_text().splitlines()) == 3


def test_correlations_are_fisher_z_averaged_over_systems() -> None:
    def rec(i: int, scores: dict[str, dict[str, float]]) -> dict[str, Any]:
        return {
            "key": str(i),
            "systems": {
                s: {
                    "scores": {m: v.get(m, 0.5) for m in ccrs.METRICS},
                    "status": dict.fromkeys(ccrs.METRICS, "ok"),
                }
                for s, v in scores.items()
            },
        }

    cc_a, qr_a = [0.1, 0.2, 0.3, 0.9], [0.1, 0.2, 0.4, 0.5]
    cc_b, qr_b = [0.5, 0.4, 0.9, 0.1], [0.2, 0.6, 0.7, 0.3]
    records = [
        rec(i, {"A": {"CC": cc_a[i], "QR": qr_a[i]}, "B": {"CC": cc_b[i], "QR": qr_b[i]}}) for i in range(4)
    ]
    agg = aggregate(records, ["A", "B"], B=100)
    cell = agg["correlations"]["pearson"]["CC-QR"]
    assert cell["per_system"]["A"] == pytest.approx(pearson(cc_a, qr_a))
    assert cell["per_system"]["B"] == pytest.approx(pearson(cc_b, qr_b))
    assert cell["avg"] == pytest.approx(fisher_z_average([pearson(cc_a, qr_a), pearson(cc_b, qr_b)]))
    # constant metrics (ID everywhere 0.5) have no correlation: NaN, not 0
    assert math.isnan(agg["correlations"]["spearman"]["CC-ID"]["avg"])


def test_run_ccrs_without_an_llm_is_a_clear_error(tmp_path: Path) -> None:
    opts = RunOptions(out_dir=tmp_path, llm=LLMSettings(backend="none"))
    with pytest.raises(EvalInputError, match="no LLM is configured"):
        asyncio.run(ccrs.run_ccrs(opts))


def test_run_ccrs_refuses_the_reader_as_judge(tmp_path: Path) -> None:
    reader = LLMSettings(backend="openai", model="m", base_url="http://h:1/v1")
    with pytest.raises(EvalInputError, match="--allow-self-judge"):
        asyncio.run(ccrs.run_ccrs(RunOptions(out_dir=tmp_path, llm=reader)))
    same = reader.model_copy(update={"temperature": 0.7})  # same weights, other sampling: still itself
    with pytest.raises(EvalInputError, match="is the reader model"):
        asyncio.run(ccrs.run_ccrs(RunOptions(out_dir=tmp_path, llm=reader, judge_llm=same)))


def test_load_ccrs_items_pairs_questions_with_gold_long_answers() -> None:
    items = ccrs.load_ccrs_items(("standard", "narrative"))
    standard = [it for it in items if it.key.startswith("standard:")]
    narrative = [it for it in items if it.key.startswith("narrative:")]
    assert (len(standard), len(narrative)) == (69, 16)
    gold = {json.loads(line).get("key"): json.loads(line) for line in ccrs.GOLD_FILE.read_text().splitlines()}
    first = standard[0]
    assert first.ground_truth == gold[first.key.removeprefix("standard:")]["long_answer"]
    assert len(ccrs.load_ccrs_items(("standard",), limit=5, seed=1)) == 5
    assert ccrs.load_ccrs_items(("standard",), limit=5, seed=1) == ccrs.load_ccrs_items(
        ("standard",), limit=5, seed=1
    )
    with pytest.raises(EvalInputError):
        ccrs.load_ccrs_items(("bioasq",))


def _scripted_everything(prompt: str) -> str | dict[str, Any]:
    if "Evaluate the " in prompt:
        return "70" if _metric(prompt) != "ID" else "55"
    if "tag your answer with <answer></answer>" in prompt:
        return "I think so. <answer>Probably yes.</answer>"
    if "EVIDENCE:" in prompt:
        return "The evidence suggests it helps."
    return {}  # the rewriter: an invalid plan, so the deterministic rewriter takes over


@pytest.mark.slow  # ~8 s idle: the real pipeline over the bundled corpus (dense arm off)
def test_run_ccrs_end_to_end_with_a_scripted_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.answer import Answerer
    from app.container import build_pipeline
    from app.pipeline import Pipeline
    from eval import eval_settings, run_metadata

    llm = ScriptedLLM(_scripted_everything)

    async def services(opts: RunOptions) -> tuple[Pipeline, Answerer, ScriptedLLM]:
        pipeline = build_pipeline(eval_settings(opts), llm=llm, use_dense=False, use_passages=False)  # type: ignore[arg-type]
        return pipeline, Answerer(llm), llm  # type: ignore[arg-type]

    monkeypatch.setattr(ccrs, "build_offline_services", services)
    opts = RunOptions(
        out_dir=tmp_path, limit=2, llm=LLMSettings(backend="openai"), params={"B": 200}, allow_self_judge=True
    )
    result = asyncio.run(ccrs.run_ccrs(opts))
    m = result.metrics
    assert m["system_names"] == ["extractive", "llm_no_retrieval", "llm_rag"]
    assert m["n_items"] == 2
    assert m["per_system"]["llm_rag"]["QR"]["mean"] == pytest.approx(0.7)
    records = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert len(records) == 2
    rag = records[0]["systems"]["llm_rag"]
    assert rag["response"] == "The evidence suggests it helps."
    assert rag["context_chars"] > 0
    assert records[0]["systems"]["llm_no_retrieval"]["response"] == "Probably yes."
    assert records[0]["systems"]["extractive"]["mode"] == "extractive"
    # every judged metric came back 0.70 (ID 0.55); AC = 0.3 * 0.7 = 0.21 (no exact match)
    for rec in records:
        for sysrec in rec["systems"].values():
            assert sysrec["scores"]["CC"] == pytest.approx(0.7)
            assert sysrec["scores"]["ID"] == pytest.approx(0.55)
            assert sysrec["scores"]["AC"] == pytest.approx(0.21)
    tukey = m["tukey"]["CC"]
    assert (tukey["n_items"], tukey["pairs_total"], tukey["discriminative_power"]) == (2, 3, 0.0)
    paths = write_result(result, opts, run_metadata("ccrs", opts))
    # constant scores have undefined correlations: null in result.json, never a bare NaN
    strict = json.loads((tmp_path / "result.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert strict["metrics"]["correlations"]["pearson"]["CC-QR"]["avg"] is None
    report = (tmp_path / "report.md").read_text()
    assert "CCRS mean scores" in report and "Randomised Tukey HSD" in report
    assert any(p.name == "ccrs_means.png" for p in paths)


def test_structured_judge_output_is_clamped_and_failures_counted() -> None:
    def run(reply: Any) -> ccrs.JudgeScore:
        llm = ScriptedLLM(lambda _p: reply)
        return asyncio.run(
            judge_answer(
                llm, "IR", question="q", response="r", context="c", ground_truth="g", structured=True
            )
        )

    assert run({"score": 42}) == ccrs.JudgeScore(0.42, "42", "ok")
    assert run({"score": 42.5}).status == "parse_failure"  # the schema asks for an integer
    assert run({"score": 120}).value == 1.0
    assert run({"score": 120}).status == "clamped"
    assert run({"grade": "A"}).status == "parse_failure"  # schema-invalid after the LLM layer's retries
    assert run(LLMTimeout("slow")).status == "judge_error"


def test_reader_answer_takes_the_tagged_span_or_the_whole_reply() -> None:
    assert ccrs.reader_answer("Thinking... <answer>Yes, it helps.</answer> done") == "Yes, it helps."
    assert ccrs.reader_answer("<answer>No") == "No"  # cut off before the closing tag
    # an empty tag (a base model echoing the instruction) keeps the rest of the reply
    assert ccrs.reader_answer("It may help. <answer></answer>") == "It may help."
    assert ccrs.reader_answer("plain reply") == "plain reply"

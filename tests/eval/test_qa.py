"""eval.qa (CoMeta Table 4): accuracy and unparseable counting by hand, the three arms over a scripted LLM."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from app.answer import Answerer
from app.container import build_pipeline
from app.pipeline import Pipeline
from eval import ITEMS_FILE, EvalInputError, ItemLog, RunOptions, qa, write_result
from eval.mirage import MCQItem
from llm import LLMSettings, LLMUnavailable
from tests._fakes import ScriptedLLM, boolean_only_settings

ITEM = MCQItem(
    "medqa:1", "medqa", "Which drug treats X?", {"A": "aspirin", "B": "insulin", "C": "statin"}, "B"
)


def _rec(arm: str, ds: str, i: int, correct: bool, status: str = "ok") -> dict[str, Any]:
    return {"arm": arm, "dataset": ds, "key": f"{arm}:{ds}:{i}", "correct": correct, "status": status}


def test_summarise_by_hand() -> None:
    records = [
        _rec("cot", "medqa", 1, True),
        _rec("cot", "medqa", 2, False),
        _rec("cot", "medqa", 3, False, "unparseable"),
        _rec("cot", "medqa", 4, True),
        _rec("cot", "mmlu", 1, True),
        _rec("cometa", "medqa", 1, False, "no_evidence"),
    ]
    s = qa.summarise(records, ["cot", "cometa"], ["medqa", "mmlu"])
    medqa = s["cot"]["datasets"]["medqa"]
    assert (medqa["n"], medqa["correct"], medqa["acc"]) == (4, 2, 0.5)
    assert medqa["std"] == pytest.approx(math.sqrt(0.5 * 0.5 / 4))  # 0.25
    assert s["cot"]["datasets"]["mmlu"] == {"n": 1, "correct": 1, "acc": 1.0, "std": 0.0}
    assert s["cot"]["average"] == pytest.approx(0.75)  # mean of subset accuracies, not of items (0.6)
    assert s["cot"]["weighted_average"] == pytest.approx(0.6)  # (4 * 0.5 + 1 * 1.0) / 5
    assert s["cot"]["unparseable"] == 1 and s["cot"]["by_status"] == {"ok": 4, "unparseable": 1}
    assert s["cometa"]["datasets"] == {"medqa": {"n": 1, "correct": 0, "acc": 0.0, "std": 0.0}}
    assert s["cometa"]["by_status"] == {"no_evidence": 1}
    table = qa.accuracy_table(s, ["medqa", "mmlu"], "t")
    assert table.rows[0] == [
        "LLM + CoT (no retrieval)",
        "50.0 ± 25.0 (n=4)",
        "100.0 ± 0.0 (n=1)",
        "75.0",
        "60.00",
        "1 / 0 / 0 / 0",
    ]
    assert table.rows[1][2] == "n/a" and table.rows[1][-1] == "0 / 0 / 1 / 0"


async def test_cot_arm_parses_letters_and_counts_failures() -> None:
    llm = ScriptedLLM(
        lambda _p: {"step_by_step_thinking": "insulin lowers glucose", "answer_choice": "insulin"}
    )
    out = await qa.answer_cot(llm, ITEM)  # type: ignore[arg-type]
    assert (out["choice"], out["correct"], out["status"]) == ("B", True, "ok")  # option text -> letter
    prompt = llm.seen[0][-1]["content"]
    assert "Which drug treats X?" in prompt and "B. insulin" in prompt and "EVIDENCE" not in prompt
    assert llm.versions == ["qa_cot@1"] and out["tokens"] == 150
    assert "Which drug" not in str(out)  # records carry keys, never question text

    garbage = await qa.answer_cot(ScriptedLLM(lambda _p: "I think it is probably insulin"), ITEM)  # type: ignore[arg-type]
    assert (garbage["choice"], garbage["correct"], garbage["status"]) == (None, False, "unparseable")
    wrong_letter = await qa.answer_cot(ScriptedLLM(lambda _p: {"answer_choice": "Q"}), ITEM)  # type: ignore[arg-type]
    assert wrong_letter["status"] == "unparseable"
    down = await qa.answer_cot(ScriptedLLM(lambda _p: LLMUnavailable("down")), ITEM)  # type: ignore[arg-type]
    assert (down["status"], down["detail"]) == ("llm_error", "LLMUnavailable")


def _items() -> list[MCQItem]:
    # Three PubMedQA questions whose records are in the bundled corpus (titles = questions).
    opts = RunOptions(out_dir=Path("."), limit=3, seed=0, subsets=("pubmedqa",), params={"source": "mirage"})
    try:
        return qa.load_qa_items(opts)
    except EvalInputError as exc:
        pytest.skip(f"MIRAGE items unavailable: {exc}")


async def test_run_qa_three_arms_over_a_scripted_llm_and_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = _items()
    assert len(items) == 3
    right, wrong, _garbled = items
    wrong_letter = next(k for k in wrong.options if k != wrong.answer)

    def script(prompt: str) -> Any:
        if "POTENTIAL CHOICES" not in prompt:
            return LLMUnavailable("no rewriter in this test")  # Understand falls back to deterministic
        if right.question in prompt:
            return {"step_by_step_thinking": "evidence says so", "answer_choice": right.answer}
        if wrong.question in prompt:
            return {"step_by_step_thinking": "hmm", "answer_choice": wrong_letter}
        return "no idea"  # not JSON: unparseable

    llm = ScriptedLLM(script)
    # Dense arm off (no index build) and the gate off: with the Boolean arm alone one of these MIRAGE
    # questions finds only loosely related studies (coverage 1/3) and abstains; this test is about the
    # answers' parsing and the report, the gate's own tests and calibration are elsewhere.
    settings = boolean_only_settings(gate=False)

    async def services(_opts: RunOptions) -> tuple[Pipeline, Answerer, Any]:
        pipeline = build_pipeline(settings, llm=llm, use_dense=False, use_passages=False)  # type: ignore[arg-type]
        return pipeline, Answerer(llm), llm  # type: ignore[arg-type]

    monkeypatch.setattr(qa, "build_offline_services", services)
    opts = RunOptions(
        out_dir=tmp_path,
        limit=3,
        subsets=("pubmedqa",),
        params={"source": "mirage"},
        llm=LLMSettings(backend="embedded"),
    )
    result = await qa.run_qa(opts)
    arms = result.metrics["arms"]
    assert arms["cot"]["datasets"]["pubmedqa"]["acc"] == pytest.approx(1 / 3)
    assert arms["cot"]["by_status"] == {"ok": 2, "unparseable": 1}
    # Dense arm off: naive RAG retrieves nothing, and the answerer declines without evidence.
    assert arms["rag"]["by_status"] == {"no_evidence": 3} and arms["rag"]["average"] == 0.0
    # The pipeline finds each question's PubMedQA record through the Boolean arm, then the same script.
    assert arms["cometa"]["by_status"] == {"ok": 2, "unparseable": 1}
    assert arms["cometa"]["datasets"]["pubmedqa"]["std"] == pytest.approx(math.sqrt((1 / 3) * (2 / 3) / 3))
    assert len(ItemLog(tmp_path / ITEMS_FILE, resume=True).done()) == 9
    table = result.tables[0]
    assert [r[0] for r in table.rows] == list(qa.ARM_NAMES.values())
    assert table.rows[0][1] == "33.3 ± 27.2 (n=3)" and table.rows[0][-1] == "1 / 0 / 0 / 0"
    assert result.stage_times is not None and "cometa: answer" in result.stage_times.summary()

    calls = len(llm.seen)
    again = await qa.run_qa(opts)  # resumed: every answer comes from items.jsonl
    assert len(llm.seen) == calls
    assert again.metrics["arms"] == arms and any("read back" in n for n in again.notes)
    paths = write_result(again, opts, {"config_hash": "x"})
    assert "| CoMeta pipeline | 33.3 ± 27.2 (n=3) |" in paths[1].read_text(encoding="utf-8")


async def test_run_qa_refuses_without_a_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COMETA_LLM__BACKEND", raising=False)
    monkeypatch.chdir(tmp_path)
    opts = RunOptions(out_dir=tmp_path, limit=1, subsets=("medqa",), params={"source": "mirage"})
    with pytest.raises(EvalInputError, match="--llm embedded"):
        await qa.run_qa(opts)
    with pytest.raises(EvalInputError, match="arms"):
        await qa.run_qa(RunOptions(out_dir=tmp_path, params={"arms": ["cot", "oracle"]}))


def test_weighted_average_reproduces_cometa_table_4() -> None:
    """CoMeta Table 4, CoMeta row: 19/23, 60/86, 64/93, 39/60, 67/82 correct; weighted vs macro average."""
    counts = {
        "mmlu": (19, 23),
        "medqa": (60, 86),
        "medmcqa": (64, 93),
        "pubmedqa": (39, 60),
        "bioasq": (67, 82),
    }
    records = [_rec("cometa", ds, i, i < correct) for ds, (correct, n) in counts.items() for i in range(n)]
    s = qa.summarise(records, ["cometa"], list(counts))["cometa"]
    assert [round(100 * s["datasets"][ds]["acc"], 2) for ds in counts] == [82.61, 69.77, 68.82, 65.0, 81.71]
    assert round(100 * s["weighted_average"], 2) == 72.38  # 249 / 344 exactly
    assert round(100 * s["average"], 2) == 73.58  # the macro mean the table does not print


def test_depth_table_by_hand() -> None:
    records = [
        _rec("cometa@d1", "pubmedqa", 1, True) | {"gold": "A", "choice": "A"},
        _rec("cometa@d1", "pubmedqa", 2, False) | {"gold": "A", "choice": "B"},
        _rec("cometa@d1", "pubmedqa", 3, True) | {"gold": "B", "choice": "B"},
        _rec("cometa@d1", "pubmedqa", 4, False) | {"gold": "B", "choice": None},
    ]
    table = qa.depth_table(records, ["cot", "cometa@d1"])
    assert table is not None
    # Acc 2/4. A: P 1/1, R 1/2; B: P 1/2 (B predicted twice), R 1/2 -> macro P 0.75, R 0.5,
    # F1 = mean(2*1*0.5/1.5, 2*0.5*0.5/1.0) = mean(0.6667, 0.5) = 0.5833.
    assert table.rows == [["D1", 4, "50.00", "75.00", "50.00", "58.33"]]
    assert qa.depth_table(records, ["cot"]) is None


async def test_depth_ablation_runs_one_cometa_arm_per_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval.evidence import EvidenceBuilder

    items = _items()[:2]
    seen: list[tuple[str, str]] = []
    build = EvidenceBuilder.build

    async def spy(self: EvidenceBuilder, *args: Any, **kwargs: Any) -> Any:
        seen.append((self.settings.depth_d2, self.settings.depth_d3))
        return await build(self, *args, **kwargs)

    monkeypatch.setattr(EvidenceBuilder, "build", spy)

    def script(prompt: str) -> Any:
        if "POTENTIAL CHOICES" not in prompt:
            return LLMUnavailable("no rewriter in this test")
        return {"step_by_step_thinking": ".", "answer_choice": items[0].answer}

    llm = ScriptedLLM(script)
    settings = boolean_only_settings()

    async def services(_opts: RunOptions) -> tuple[Pipeline, Answerer, Any]:
        pipeline = build_pipeline(settings, llm=llm, use_dense=False, use_passages=False)  # type: ignore[arg-type]
        return pipeline, Answerer(llm), llm  # type: ignore[arg-type]

    monkeypatch.setattr(qa, "build_offline_services", services)
    opts = RunOptions(
        out_dir=tmp_path,
        limit=2,
        subsets=("pubmedqa",),
        params={"source": "mirage", "arms": ["cometa"], "depth": ["d1", "d1+d2+d3"]},
        llm=LLMSettings(backend="embedded"),
    )
    result = await qa.run_qa(opts)
    assert set(result.metrics["arms"]) == {"cometa@d1", "cometa@d1+d2+d3"}
    # Two questions per policy, each searched with its own depth policy, in that order.
    assert seen == [("abstract", "abstract")] * 2 + [("fulltext", "fulltext")] * 2
    assert [r[0] for r in result.tables[1].rows] == ["D1", "D1+D2+D3"]
    with pytest.raises(EvalInputError, match="depth must be"):
        await qa.run_qa(
            RunOptions(out_dir=tmp_path / "x", params={"depth": "d4"}, llm=LLMSettings(backend="embedded"))
        )

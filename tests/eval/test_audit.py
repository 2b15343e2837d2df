"""``eval.audit.run_audit`` with the scripted judge over the synthetic handbooks: rates per question, per
source and overall, the saved matrices, resume, and the refusal to run without a judge."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.container import build_pipeline
from app.sources import SourcesService
from core import CometaError
from eval import RunOptions, run_metadata, write_result
from eval.audit import DEFAULT_QUESTIONS, aggregate, load_questions, run_audit
from tests._handbooks import ORDER, BowEncoder, build_store, handbook_llm, node_settings

ASYNC = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audit") / "root"
    build_store(root)
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(root: Path) -> AsyncIterator[SourcesService]:
    settings = node_settings(root)
    async with build_pipeline(settings, use_llm=False, use_dense=False, use_passages=False) as pipeline:
        yield SourcesService(settings, pipeline, encoder=BowEncoder(), reranker=None)


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    lines = [
        {"id": "travel", "topic": "travel", "question": "When can I travel abroad after my transplant?"},
        {"id": "parrot", "topic": "pets", "question": "Can I keep a parrot at home?"},  # nobody says
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_the_shipped_question_set_loads() -> None:
    qs = load_questions(DEFAULT_QUESTIONS)
    assert len(qs) >= 5 and qs[0].id == "travel-abroad" and all(q.question.endswith("?") for q in qs)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", "needs JSON"),
        ('{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}', "unique"),
        ("", "no questions"),
    ],
)
def test_bad_question_sets(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(content)
    with pytest.raises(CometaError, match=message):
        load_questions(path)


@ASYNC
async def test_audit_over_five_handbooks(service: SourcesService, questions: Path, tmp_path: Path) -> None:
    llm = handbook_llm()
    opts = RunOptions(
        out_dir=tmp_path / "run",
        subsets=tuple(ORDER),
        params={"questions": str(questions)},
        allow_self_judge=True,
    )
    result = await run_audit(opts, llm=llm, service=service)
    assert result.metrics["self_judged"] is True and result.notes[0].startswith("SELF-JUDGED")

    per_q = result.metrics["per_question"]
    assert per_q["travel"] == {
        "r_abs": pytest.approx(1 / 5),  # the paper's rate: one source of five (Hillcrest) is silent
        "r_abs_pairs": pytest.approx(0.4),  # its four pairs of ten
        "r_div": pytest.approx(5 / 6),
        "r_con": pytest.approx(1 / 6),
        "any_div": True,
    }
    assert per_q["parrot"] == {
        "r_abs": 1.0,
        "r_abs_pairs": 1.0,
        "r_div": None,
        "r_con": None,
        "any_div": False,
    }
    per_s = result.metrics["per_source"]
    assert per_s["northbridge"] == {
        "questions": 2,
        "not_available": 0,
        "not_searched": 0,
        "answer_errors": 0,
        "r_abs": 0.5,
        "R_div": pytest.approx(2 / 3),  # vs riverside, lakeshore; consistent with eastgate
        "R_con": pytest.approx(1 / 3),
        "any_div": 0.5,
        "pairs_judged": 8,
    }
    assert per_s["hillcrest"]["r_abs"] == 1.0 and per_s["hillcrest"]["R_div"] is None
    assert per_s["riverside"]["R_div"] == 1.0 and per_s["riverside"]["R_con"] == 0.0
    overall = result.metrics["overall"]
    assert overall["r_abs"] == pytest.approx((0.5 * 4 + 1.0) / 5)
    assert overall["r_abs_pairs"] == pytest.approx(14 / 20)
    assert overall["R_div"] == pytest.approx(5 / 6) and overall["R_con"] == pytest.approx(1 / 6)
    assert overall["any_div"] == 0.5 and overall["questions_judged"] == 2

    matrices = json.loads((opts.out_dir / "matrices.json").read_text())
    travel = matrices["questions"]["travel"]
    assert travel["sources"] == ORDER
    assert travel["matrix"][0][4] == "CONSISTENT" and travel["matrix"][0][1] == "DIVERGENT"
    assert travel["matrix"][3][0] == "ABSENT" and travel["matrix"][2][2] is None
    div = matrices["pair_counts"]["DIVERGENT"]
    assert div[0][1] == div[1][0] == 1 and div[0][4] == 0 and sum(map(sum, div)) == 2 * 5
    assert sum(map(sum, matrices["pair_counts"]["ABSENT"])) == 2 * 14

    # The report renders, and a second run resumes without asking the judge anything.
    paths = write_result(result, opts, run_metadata("audit", opts))
    assert (opts.out_dir / "report.md") in paths and "Per source" in (opts.out_dir / "report.md").read_text()
    calls = len(llm.seen)
    again = await run_audit(opts, llm=llm, service=service)
    assert len(llm.seen) == calls and again.metrics["overall"] == result.metrics["overall"]


@ASYNC
async def test_audit_refuses_without_a_judge_or_sources(
    service: SourcesService, questions: Path, tmp_path: Path
) -> None:
    opts = RunOptions(out_dir=tmp_path / "a", subsets=tuple(ORDER), params={"questions": str(questions)})
    with pytest.raises(CometaError, match="no LLM is configured"):
        await run_audit(opts, service=service)
    # The reader as its own judge is refused unless allowed.
    with pytest.raises(CometaError, match="would be the reader"):
        await run_audit(opts, llm=handbook_llm(), service=service)
    one = RunOptions(
        out_dir=tmp_path / "b",
        subsets=("northbridge",),
        params={"questions": str(questions)},
        allow_self_judge=True,
    )
    with pytest.raises(CometaError, match="compares sources"):
        await run_audit(one, llm=handbook_llm(), service=service)
    unknown = RunOptions(
        out_dir=tmp_path / "c",
        subsets=("northbridge", "atlantis"),
        params={"questions": str(questions)},
        allow_self_judge=True,
    )
    with pytest.raises(CometaError, match="unknown source 'atlantis'"):
        await run_audit(unknown, llm=handbook_llm(), service=service)


def test_aggregate_reports_sources_not_searched_or_not_answered() -> None:
    record = {
        "key": "q",
        "status": {"a": "ok", "b": "denied", "c": "ok", "d": "timeout"},
        "absent": {"a": False, "b": None, "c": None, "d": None},  # c: its answer failed
        "errors": ["c"],
        "judged": [],
        "pairs": [],
        "any_div": None,
    }
    agg = aggregate([record], ["a", "b", "c", "d"])
    # Denied is "not available to the auditor": neither absence nor a failed search.
    assert agg["per_source"]["b"]["not_available"] == 1 and agg["per_source"]["b"]["not_searched"] == 0
    assert agg["per_source"]["b"]["r_abs"] is None
    assert agg["per_source"]["d"]["not_searched"] == 1 and agg["per_source"]["d"]["not_available"] == 0
    assert agg["per_source"]["c"]["answer_errors"] == 1 and agg["per_source"]["c"]["questions"] == 0
    assert agg["per_source"]["a"]["r_abs"] == 0.0 and agg["overall"]["questions_judged"] == 0


@ASYNC
async def test_audit_with_a_separate_judge_routes_answers_and_labels(
    service: SourcesService, questions: Path, tmp_path: Path
) -> None:
    reader, judge = handbook_llm(), handbook_llm()
    opts = RunOptions(out_dir=tmp_path / "sep", subsets=tuple(ORDER), params={"questions": str(questions)})
    result = await run_audit(opts, llm=reader, judge=judge, service=service)
    assert result.metrics["self_judged"] is False
    assert not any(n.startswith("SELF-JUDGED") for n in result.notes)
    # The reader wrote the per-source answers only; every absence screen and pair label was the judge's.
    assert reader.versions and all(v.startswith("answer_per_source") for v in reader.versions)
    assert judge.versions and all(v.startswith(("judge_compare", "judge_absence")) for v in judge.versions)

"""``cometa eval judge``: κ and per-label P/R by hand, the label mapping, the claim loaders, and a run end to
end (scripted judge in process; the CLI on a scripted OpenAI-compatible server, the offline stand-in for
``--llm embedded`` where llama-cpp-python is not installed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import app
from eval import EvalInputError, RunOptions, write_result
from eval.judging import CLAIM_SETS, load_claims, map_label, run_judge
from eval.stats import cohen_kappa, label_agreement
from tests._fakes import ScriptedLLM
from tests._procs import serve_in_thread
from tests.eval.judging._fake_openai import FakeOpenAI


def test_kappa_and_per_label_by_hand() -> None:
    gold = ["S", "S", "S", "R", "R", "N"]
    pred = ["S", "S", "R", "R", "N", "N"]
    # p_o = 4/6; p_e = (3*2 + 2*2 + 1*2) / 36 = 1/3; kappa = (2/3 - 1/3) / (2/3) = 0.5
    assert cohen_kappa(gold, pred) == pytest.approx(0.5)
    agreement = label_agreement(gold, pred, ["S", "R", "N"])
    assert agreement["accuracy"] == pytest.approx(4 / 6)
    per = agreement["per_label"]
    assert isinstance(per, dict)
    assert per["S"] == {"precision": 1.0, "recall": pytest.approx(2 / 3), "support": 3.0}
    assert per["R"] == {"precision": 0.5, "recall": 0.5, "support": 2.0}
    assert per["N"] == {"precision": 0.5, "recall": 1.0, "support": 1.0}
    assert agreement["confusion"] == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    assert cohen_kappa(["S", "S"], ["S", "S"]) != cohen_kappa(["S", "S"], ["S", "S"])  # NaN: p_e = 1
    assert cohen_kappa(["S", "R"], ["R", "S"]) == pytest.approx(-1.0)


def test_label_mapping() -> None:
    assert [
        map_label(x, "healthver") for x in ("CONSISTENT", "COMPLEMENTARY", "DIVERGENT", "CONTRADICTORY")
    ] == [
        "SUPPORT",
        "SUPPORT",
        "REFUTE",
        "REFUTE",
    ]
    assert map_label("ABSENT", "healthver") == "NEI"
    assert map_label("ABSENT", "scifact_rte") == map_label("CONTRADICTORY", "scifact_rte") == "NOT_SUPPORT"
    assert map_label(None, "covidfact") is None


def _claims_dir(root: Path) -> Path:
    """Two items per set, in each upstream format."""
    ci = root / "citation_integrity"
    ci.mkdir(parents=True)
    (ci / "corpus.jsonl").write_text(
        json.dumps({"doc_id": 1, "abstract": ["Aspirin lowered pain."]})
        + "\n"
        + json.dumps({"doc_id": 2, "abstract": ["Aspirin raised pain."]})
        + "\n"
    )
    (ci / "claims_test.jsonl").write_text(
        json.dumps(
            {
                "id": 0,
                "claim": "Aspirin lowers pain<|cit|>.",
                "evidence": {"1": [{"sentences": [0], "label": "SUPPORT"}]},
                "cited_doc_ids": [1],
            }
        )
        + "\n"
        + json.dumps({"id": 1, "claim": "Aspirin lowers pain.", "evidence": {}, "cited_doc_ids": [2]})
        + "\n"
    )
    hv = root / "healthver"
    hv.mkdir()
    (hv / "healthver_test.csv").write_text(
        "id,evidence,claim,label,topic_ip,question\n"
        "7,Masks cut spread.,Masks reduce spread,Supports,1,do masks work?\n"
        "8,Masks cut spread.,Masks increase spread,Refutes,1,do masks work?\n"
    )
    cf = root / "covidfact"
    cf.mkdir()
    (cf / "COVIDFACT_dataset.jsonl").write_text(
        json.dumps({"claim": "Vaccine works", "label": "SUPPORTED", "evidence": ["The vaccine works."]})
        + "\n"
        + json.dumps({"claim": "Vaccine fails", "label": "REFUTED", "evidence": ["The vaccine works."]})
        + "\n"
    )
    sf = root / "scifact_rte"
    sf.mkdir()
    (sf / "dev.tsv").write_text(
        "index\tsentence1\tsentence2\tlabel\n"
        "0\tX binds Y.\tX binds Y\tentailment\n"
        "1\tX binds Y.\tX binds Z\tnot_entailment\n"
    )
    return root


def test_loaders_read_each_upstream_format(tmp_path: Path) -> None:
    root = _claims_dir(tmp_path)
    ci = load_claims("citation_integrity", root)
    assert [(c.gold, c.evidence) for c in ci] == [
        ("SUPPORT", "Aspirin lowered pain."),
        ("NEI", "Aspirin raised pain."),
    ]
    assert ci[0].claim == "Aspirin lowers pain ."  # citation markers removed
    hv = load_claims("healthver", root)
    assert [c.gold for c in hv] == ["SUPPORT", "REFUTE"] and hv[0].question == "do masks work?"
    assert [c.gold for c in load_claims("covidfact", root)] == ["SUPPORT", "REFUTE"]
    sf = load_claims("scifact_rte", root)
    assert [(c.claim, c.gold) for c in sf] == [("X binds Y", "SUPPORT"), ("X binds Z", "NOT_SUPPORT")]
    with pytest.raises(EvalInputError):
        load_claims("fever", root)


VERDICTS = {
    "Masks reduce spread": "CONSISTENT",
    "Masks increase spread": "CONTRADICTORY",
    "Vaccine works": "CONSISTENT",
    "Vaccine fails": "CONTRADICTORY",
    "X binds Y": "CONSISTENT",
}


def _judge_reply(prompt: str) -> Any:
    """A judge that knows the synthetic claims; real claims (the CLI test) get COMPLEMENTARY."""
    claim = prompt.split("Answer A (CLAIM): ")[1].split("\n")[0]
    evidence = prompt.split("Answer B (EVIDENCE): ")[1].split("\n")[0]
    if claim.startswith("Aspirin"):
        return {"classification": "ABSENT" if "raised" in evidence else "CONSISTENT", "reasoning": "."}
    if claim == "X binds Z":
        return "not json at all"  # a parse failure, counted apart
    return {"classification": VERDICTS.get(claim, "COMPLEMENTARY"), "reasoning": "."}


def test_run_judge_in_process_by_hand(tmp_path: Path) -> None:
    root = _claims_dir(tmp_path / "claims")
    opts = RunOptions(out_dir=tmp_path / "run", params={"claims_dir": str(root)})
    result = asyncio_run(run_judge(opts, llm=ScriptedLLM(_judge_reply)))
    per = result.metrics["datasets"]
    assert set(per) == set(CLAIM_SETS)
    # Citation-Integrity: SUPPORT judged CONSISTENT, NEI judged ABSENT: 2/2.
    assert (per["citation_integrity"]["accuracy"], per["citation_integrity"]["n"]) == (1.0, 2)
    # HealthVer: "reduce" agrees, "increase spread" contradicts: 2/2; COVID-Fact: "fails" contradicts.
    assert per["healthver"]["accuracy"] == 1.0 and per["covidfact"]["accuracy"] == 1.0
    assert per["healthver"]["kappa"] == pytest.approx(1.0)
    # SciFact-RTE: the Z claim's reply is no label: a failure, excluded (1 judged, 1 failure).
    assert (per["scifact_rte"]["n"], per["scifact_rte"]["failures"]) == (1, 1)
    assert per["covidfact"]["five_label"]["REFUTE"]["CONTRADICTORY"] == 1
    paths = write_result(result, opts, {"config_hash": "x"})
    assert any(p.name == "judge_confusion_healthver.png" for p in paths)


def asyncio_run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


@pytest.fixture
def server() -> Iterator[tuple[FakeOpenAI, str]]:
    def reply(_model: str, prompt: str) -> str:
        verdict = _judge_reply(prompt) if "Answer A (CLAIM): " in prompt else {"classification": "ABSENT"}
        return verdict if isinstance(verdict, str) else json.dumps(verdict)

    fake = FakeOpenAI(reply)
    with serve_in_thread(fake.app) as url:
        yield fake, url


def test_cli_judge_on_the_shared_claim_sets(
    server: tuple[FakeOpenAI, str], shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offline stand-in for ``cometa eval judge --llm embedded --limit 20`` (no llama-cpp-python here)."""
    fake, url = server
    if not (shared_dir / "data" / "claims").is_dir():
        pytest.skip("no claim sets in the shared data")
    monkeypatch.setenv("COMETA_SHARED_DIR", str(shared_dir))
    monkeypatch.setenv("COMETA_LLM__BASE_URL", f"{url}/v1")
    monkeypatch.setenv("COMETA_LLM__MODEL", "judge-under-test")
    out = tmp_path / "judge"
    result = CliRunner().invoke(app, ["eval", "judge", "--llm", "openai", "--limit", "5", "--out", str(out)])
    assert result.exit_code == 0, result.stderr + result.stdout
    metrics = json.loads((out / "result.json").read_text())["metrics"]
    assert metrics["judge"] == "judge-under-test"
    for ds in CLAIM_SETS:
        v = metrics["datasets"][ds]
        assert v["items"] == 5 and v["n"] + v["failures"] == 5
        assert (out / f"judge_confusion_{ds}.png").is_file() or v["n"] == 0
    assert len(fake.calls) == 4 * 5
    assert "Cohen's κ" in (out / "report.md").read_text()
    # --judge-llm names the judge under test directly (no reader here, so no self-judging question).
    out2 = tmp_path / "judge2"
    spec = f"openai:other-judge@{url}/v1"
    result = CliRunner().invoke(
        app,
        ["eval", "judge", "--judge-llm", spec, "--limit", "2", "--subsets", "healthver", "--out", str(out2)],
    )
    assert result.exit_code == 0, result.stderr + result.stdout
    assert json.loads((out2 / "result.json").read_text())["metrics"]["judge"] == "other-judge"
    assert fake.models()[-2:] == ["other-judge", "other-judge"]

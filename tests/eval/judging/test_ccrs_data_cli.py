"""``cometa eval ccrs --data`` end to end offline (reader and judge on a scripted OpenAI-compatible server),
self-judging refused with exit 2, and ``cometa eval compare`` merging two runs into one report."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import app
from tests._procs import serve_in_thread
from tests.eval.judging._fake_openai import FakeOpenAI

ITEMS = [
    {
        "id": i,
        "question": f"Does drug {i} reduce pain?",
        "reference_answer": f"Drug {i} reduces pain in adults.",
        "documents": [
            {
                "title": f"Trial {i}",
                "text": f"In a randomised trial, drug {i} reduced pain in adults by 30%.",
            },
            f"An observational cohort found drug {i} well tolerated.",
        ],
    }
    for i in range(1, 5)
]


def _reply(model: str, prompt: str) -> str:
    if model == "judge-70b":
        assert "Evaluate the " in prompt, "the judge only grades"
        # The RAG answer quotes the evidence; the no-retrieval one does not: 80 vs 30 on every metric.
        response = prompt.split("**Generated Response (r):**")[1][:200]
        return "On a scale of 0 to 100, I rate it 80." if "trial" in response else "30"
    if "Evaluate the " in prompt:  # the reader grading itself (only the --allow-self-judge run)
        return "30"
    if "<answer>" in prompt:
        return "<answer>I am not sure.</answer>"
    return "A randomised trial found the drug reduced pain [1]."


@pytest.fixture
def server() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(_reply)
    with serve_in_thread(fake.app) as url:
        yield fake, url


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["eval", *args])
    return result.exit_code, result.stdout, result.stderr


def test_ccrs_on_your_own_data_with_a_separate_judge_then_compare(
    server: tuple[FakeOpenAI, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = server
    monkeypatch.setenv("COMETA_LLM__BASE_URL", f"{url}/v1")
    monkeypatch.setenv("COMETA_LLM__MODEL", "reader-8b")
    data = tmp_path / "mine.jsonl"
    data.write_text("\n".join(json.dumps(it) for it in ITEMS) + "\n")
    common = ["--data", str(data), "--llm", "openai", "--param", "B=200"]

    # The reader as its own judge: refused before anything runs.
    code, _, err = _invoke("ccrs", *common, "--out", str(tmp_path / "self"))
    assert code == 2 and "--allow-self-judge" in " ".join(err.split())
    assert fake.calls == []

    judge = f"openai:judge-70b@{url}/v1"
    run1 = tmp_path / "run1"
    code, out, err = _invoke(
        "ccrs", *common, "--judge-llm", judge, "--param", 'systems=["llm_rag","llm_no_retrieval"]',
        "--out", str(run1),
    )  # fmt: skip
    assert code == 0, err + out
    result = json.loads((run1 / "result.json").read_text())
    m = result["metrics"]
    assert (m["reader"]["model"], m["judge"]["model"], m["self_judged"]) == ("reader-8b", "judge-70b", False)
    assert m["n_items"] == 4 and m["B"] == 200
    # "On a scale of 0 to 100, I rate it 80" is 80, not 0; AC = 0.3 * judge (no exact match).
    assert m["per_system"]["llm_rag"]["QR"]["mean"] == pytest.approx(0.8)
    assert m["per_system"]["llm_rag"]["AC"]["mean"] == pytest.approx(0.24)
    assert m["per_system"]["llm_no_retrieval"]["CC"]["mean"] == pytest.approx(0.3)
    assert m["per_system"]["llm_rag"]["QR"]["parse_failures"] == 0
    # Each reader answer came from the item's own documents (no retrieval): the context holds them.
    records = [json.loads(line) for line in (run1 / "items.jsonl").read_text().splitlines()]
    assert all(r["systems"]["llm_rag"]["context_chars"] > 0 for r in records)
    assert result["metadata"]["models"]["judge_llm"]["model"] == "judge-70b"
    report = (run1 / "report.md").read_text()
    assert "Reader: reader-8b. Judge: judge-70b." in report and "SELF-JUDGED" not in report
    assert (run1 / "ccrs_box_QR.png").is_file() and (run1 / "ccrs_asl.png").is_file()
    judged = [p for mdl, p in fake.calls if mdl == "judge-70b"]
    assert len(judged) == 4 * 2 * 5  # items x systems x metrics, all on the judge
    assert not any("Evaluate the " in p for mdl, p in fake.calls if mdl == "reader-8b")

    # A second run, self-judged on purpose: allowed with the flag, and marked.
    run2 = tmp_path / "run2"
    code, out, err = _invoke(
        "ccrs", *common, "--allow-self-judge", "--param", 'systems=["llm_no_retrieval"]', "--out", str(run2)
    )
    assert code == 0, err + out
    assert json.loads((run2 / "result.json").read_text())["metrics"]["self_judged"] is True
    assert "SELF-JUDGED" in (run2 / "report.md").read_text()

    # compare: one report over the three systems of both runs (the shared name is prefixed by its run).
    merged = tmp_path / "merged"
    code, out, err = _invoke(
        "compare", str(run1), str(run2), "--label", "a", "--label", "b", "--B", "500",
        "--hypothesis", "llm_rag>a/llm_no_retrieval@QR,CC", "--out", str(merged),
    )  # fmt: skip
    assert code == 0, err + out
    cm = json.loads((merged / "result.json").read_text())["metrics"]
    assert cm["system_names"] == ["llm_rag", "a/llm_no_retrieval", "b/llm_no_retrieval"]
    assert cm["tukey"]["QR"]["pairs_total"] == 3 and cm["tukey"]["QR"]["n_items"] == 4
    hyp = {h["metric"]: h for h in cm["hypotheses"]}
    assert set(hyp) == {"QR", "CC"} and all(h["diff"] == pytest.approx(0.5) for h in hyp.values())
    # Tukey p (two-sided) halved for the expected direction, then Holm over the two tests.
    raw = cm["tukey"]["QR"]["pairs"]["llm_rag vs a/llm_no_retrieval"]["p"]
    assert hyp["QR"]["p"] == pytest.approx(raw / 2)
    merged_report = (merged / "report.md").read_text()
    assert "SELF-JUDGED runs among those merged: b" in merged_report
    assert re.search(r"WARNING: the runs were graded by different judges", merged_report)
    assert (merged / "ccrs_asl.png").is_file() and (merged / "ccrs_box_AC.png").is_file()
    # A folder that is no run: exit 2.
    code, _, err = _invoke("compare", str(tmp_path), str(run1), "--out", str(tmp_path / "bad"))
    assert code == 2 and "items.jsonl" in err


def test_extractive_only_with_an_embedded_judge_fits_its_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No reader LLM: the extractive system answers from the items' documents; the (scripted) embedded judge
    sees at most (2048 - 768) * 3 = 3,840 characters of context unless a budget is set explicitly."""
    import asyncio

    import eval.judging._select as select
    from eval import RunOptions
    from eval.ccrs import run_ccrs
    from llm import LLMSettings
    from tests._fakes import ScriptedLLM

    judge = ScriptedLLM(lambda _p: {"score": 60})
    monkeypatch.setattr(select, "build_llm", lambda _s: judge)
    long_doc = "Drug 1 reduced pain in adults. " * 400  # ~12,400 characters
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps({"question": "Does drug 1 help?", "reference": "Yes.", "documents": [long_doc]})
    )
    opts = RunOptions(
        out_dir=tmp_path / "run",
        llm=LLMSettings(backend="none"),
        judge_llm=LLMSettings(backend="embedded"),
        params={"data": str(data), "B": 100},
    )
    result = asyncio.run(run_ccrs(opts))
    m = result.metrics
    assert m["system_names"] == ["extractive"] and m["context_chars"] == {"reader": 24_000, "judge": 3840}
    assert m["per_system"]["extractive"]["QR"]["mean"] == pytest.approx(0.6)  # JSON judge output (embedded)
    context = judge.seen[0][-1]["content"].split("**Retrieved Context (C):**")[1]
    # 400 sentences of 31 characters in the document; the judge saw at most 3,840 characters of them.
    assert 100 <= context.count("Drug 1 reduced pain") <= 3840 // 31 + 1
    assert any("embedded model's window (judge 3840" in n for n in result.notes)
    assert not m["self_judged"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"question": "q?"}', "reference answer"),
        ('{"question": "q?", "reference": "r", "documents": [{"text": "t", "doi": "x"}]}', "document doi"),
        (
            '{"question": "q?", "reference": "r", "documents": [{"text": "t", "pmid": "PMC1"}]}',
            "document pmid",
        ),
        ('{"question": "q?", "reference": "r", "documents": [{"title": "no text"}]}', "non-empty 'text'"),
        ('{"question": "q?", "reference": "r", "options": ["A"]}', "'options'"),
        ("not json", "not JSON"),
    ],
)
def test_bad_data_lines_are_input_errors(tmp_path: Path, line: str, message: str) -> None:
    from eval import EvalInputError
    from eval.ccrs import load_data_items

    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(EvalInputError, match=re.escape(message)):
        load_data_items(path)

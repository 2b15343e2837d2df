"""``cometa eval``: the suite commands, exit codes on bad input, and one tiny real retrieval run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from app.cli import app
from eval import ITEMS_FILE, RunOptions
from eval.cli import run_suite

SUITES = ("retrieval", "chunking", "qa", "medrgb", "ccrs", "audit", "judge", "compare", "build-cmmqa")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["eval", *args])
    return result.exit_code, result.stdout, result.stderr


def test_help_lists_every_suite() -> None:
    code, out, _ = _invoke("--help")
    assert code == 0
    for suite in SUITES:
        assert suite in out
    code, out, _ = _invoke("qa", "--help")
    assert code == 0
    for option in ("--limit", "--seed", "--out", "--llm", "--server", "--subsets", "--no-resume", "--param"):
        assert option in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["retrieval", "--param", "noequals"], "key=value"),
        (["qa", "--server", "localhost:8000"], "http(s) URL"),
        (["retrieval", "--server", "http://localhost:8000"], "in-process only"),
        (["retrieval", "--subsets", "no-such-set"], "no-such-set"),
        (["chunking", "--subsets", "seos,bogus"], "unknown segmenters"),
        (["chunking", "--param", "max_length=2"], "max_length"),
        (["chunking", "--param", "colour=blue"], "unknown chunking params"),
        (["qa", "--param", "variant=poetry", "--llm", "embedded"], "variant"),
        (["qa", "--param", 'arms=["cot","oracle"]', "--llm", "embedded"], "arms"),
    ],
)
def test_bad_input_exits_2_with_a_message(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = _invoke(*args, "--out", str(tmp_path / "run"))
    assert code == 2, err
    assert "error:" in err and message in " ".join(err.split())


def test_negative_limit_is_rejected_by_the_parser(tmp_path: Path) -> None:
    code, _, _ = _invoke("retrieval", "--limit", "-1", "--out", str(tmp_path))
    assert code == 2


def test_qa_without_a_reader_model_explains_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COMETA_LLM__BACKEND", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env from the working directory
    code, _, err = _invoke("qa", "--limit", "1", "--param", "source=mirage", "--out", str(tmp_path / "qa"))
    assert code == 2
    assert "--llm embedded" in " ".join(err.split())
    assert not (tmp_path / "qa" / ITEMS_FILE).exists()


def test_out_folder_of_another_configuration_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / ITEMS_FILE).write_text('{"key": "standard:1"}\n', encoding="utf-8")
    (out / "config.json").write_text(json.dumps({"config_hash": "0123456789ab"}), encoding="utf-8")
    code, _, err = _invoke("retrieval", "--limit", "1", "--out", str(out))
    assert code == 2 and "--no-resume" in " ".join(err.split())


def test_a_suite_that_cannot_load_fails_alone(tmp_path: Path) -> None:
    def broken() -> object:
        raise ImportError("eval.nothing is not there")

    with pytest.raises(typer.Exit) as exc:
        run_suite("nothing", broken, RunOptions(out_dir=tmp_path))  # type: ignore[arg-type]
    assert exc.value.exit_code == 1
    code, out, _ = _invoke("--help")  # the other suites are unaffected
    assert code == 0 and "retrieval" in out


def test_tiny_retrieval_run_without_the_dense_arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The Boolean systems only (no encoder to load): the fast end-to-end path through the CLI.
    monkeypatch.setenv("COMETA_DENSE__ENABLED", "false")
    out = tmp_path / "retrieval"
    code, stdout, err = _invoke(
        "retrieval", "--limit", "2", "--subsets", "standard,narrative", "--out", str(out)
    )
    assert code == 0, err
    metrics = json.loads((out / "result.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["narrative/raw E-utilities"]["hit0"] == 1.0
    assert metrics["narrative/Adapt-E (deterministic)"]["hit0"] == 0.0
    assert metrics["standard/dense (MiniLM-L6)"]["hit0"] == 1.0  # switched off: nothing retrieved
    assert all(m["n"] == 2 for m in metrics.values()) and len(metrics) == 8
    assert "| standard | Adapt-E (deterministic) | 2 |" in stdout


@pytest.mark.slow
def test_tiny_retrieval_run_end_to_end_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "retrieval"
    args = ["retrieval", "--limit", "2", "--subsets", "narrative", "--out", str(out)]
    code, stdout, err = _invoke(*args)
    assert code == 0, err
    assert "| narrative | hybrid (deterministic) | 2 |" in stdout
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    systems = result["metrics"]
    assert set(systems) == {
        "narrative/raw E-utilities",
        "narrative/Adapt-E (deterministic)",
        "narrative/dense (MiniLM-L6)",
        "narrative/hybrid (deterministic)",
    }
    assert all(s["n"] == 2 for s in systems.values())
    assert systems["narrative/raw E-utilities"]["hit0"] == 1.0  # narratives defeat raw E-utilities
    assert systems["narrative/hybrid (deterministic)"]["hit0"] == 0.0
    assert result["metadata"]["limit"] == 2 and result["metadata"]["subsets"] == ["narrative"]
    assert {"retrieval_hit10.png", "retrieval_hit0.png", "report.md", ITEMS_FILE} <= {
        p.name for p in out.iterdir()
    }
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| query set | system | n | Hit0 % |" in report and result["metadata"]["config_hash"] in report
    assert len((out / ITEMS_FILE).read_text(encoding="utf-8").splitlines()) == 2
    # Same command again: both items come back from items.jsonl, nothing is recomputed.
    code, stdout, err = _invoke(*args)
    assert code == 0, err
    assert "2 item(s) were read back" in " ".join(stdout.split())
    assert len((out / ITEMS_FILE).read_text(encoding="utf-8").splitlines()) == 2
    again = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert {k: v["hit10"] for k, v in again["metrics"].items()} == {k: v["hit10"] for k, v in systems.items()}


def test_build_cmmqa_with_a_missing_benchmark_exits_2(tmp_path: Path) -> None:
    code, _, err = _invoke("build-cmmqa", "--benchmark", str(tmp_path / "nope.json"), "--out", str(tmp_path))
    assert code == 2 and "no such benchmark file" in " ".join(err.split())
    assert not (tmp_path / "cmmqa.json").exists()


def test_calibrate_gate_prints_an_error_as_text_not_markup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import eval.answers
    from eval import EvalInputError

    async def refuse(*_args: object, **_kwargs: object) -> dict[str, object]:
        raise EvalInputError("no gold set at /data/[bold]gold[/bold]/ei.jsonl")

    monkeypatch.setattr(eval.answers, "run_calibrate_gate", refuse)
    code, _out, err = _invoke("calibrate-gate", "--out", str(tmp_path))
    assert code == 2 and "/data/[bold]gold[/bold]/ei.jsonl" in err

"""``cometa eval expected --check``: measured figures are data, and the deterministic ones are re-run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from eval import figures
from eval._runner import EvalInputError
from eval.cli import eval_app
from eval.figures import check_file, expected_files


def _report(**_: Any) -> dict[str, Any]:
    return {"urgent": {"all": {"recall": 0.98}}, "lookalike": {"rate": 0.05}}


def test_a_check_block_is_compared_within_its_tolerance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(figures.RUNNERS, "fake", _report)
    path = tmp_path / "fake.yaml"
    path.write_text(
        "check:\n  runner: fake\n  metrics:\n"
        "    urgent.all.recall: [0.979, 0.002]\n    lookalike.rate: [0.04, 0.005]\n    urgent.none: [1, 0]\n",
        encoding="utf-8",
    )
    result = check_file(path)
    assert not isinstance(result, str)
    assert [(c.metric, c.ok) for c in result] == [
        ("urgent.all.recall", True),
        ("lookalike.rate", False),  # 0.05 is 0.01 away: outside 0.005
        ("urgent.none", False),  # a path the report lacks never passes
    ]
    assert result[2].actual is None


def test_files_without_a_check_say_why_and_malformed_ones_are_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text("targets: {x: 1}\n", encoding="utf-8")
    assert "no check block" in str(check_file(plain))
    bad = tmp_path / "bad.yaml"
    bad.write_text("check: {runner: nope, metrics: {a: [1, 0]}}\n", encoding="utf-8")
    with pytest.raises(EvalInputError, match="runner"):
        check_file(bad)
    bad.write_text("check: {runner: safety, metrics: {a: 1}}\n", encoding="utf-8")
    with pytest.raises(EvalInputError, match=r"\[expected, tolerance\]"):
        check_file(bad)


def test_every_figure_file_is_yaml_with_its_command() -> None:
    files = expected_files()
    assert {p.name for p in files} >= {"safety.yaml", "relevance.yaml"}
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert isinstance(data, dict), path.name
        # pyserini style: a figure travels with the command that made it
        assert "command" in data or "commands" in data, path.name


@pytest.mark.slow
def test_the_shipped_safety_decision_reproduces_its_figures() -> None:
    result = CliRunner().invoke(eval_app, ["expected", "--check"])
    assert result.exit_code == 0, result.output
    assert "safety.yaml: urgent.all.recall" in result.output and "DIFFERS" not in result.output
    assert "relevance.yaml: not checked" in result.output

"""Measured figures as data (pyserini style): ``eval/expected/*.yaml`` hold what was measured, with the
command that measured it; a file's ``check`` block names a deterministic re-run and the figures the shipped
code must reproduce, which ``cometa eval expected --check`` runs and compares.

A ``check`` block::

    check:
      runner: safety            # one of RUNNERS
      args: {split: dev}        # the runner's keyword arguments
      metrics:                  # a dotted path into the runner's report: [expected, tolerance]
        urgent.all.recall: [0.986, 0.0]

Files without one (figures that need the offline world or minutes, e.g. ``relevance.yaml``) are listed as not
checked, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ._runner import EvalInputError

__all__ = ["EXPECTED_DIR", "RUNNERS", "Check", "check_file", "expected_files"]

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"


def _safety(split: str = "dev", answerable: bool = False) -> dict[str, Any]:
    from .safety import run_safety

    return run_safety(split, answerable=answerable)


# Runners a check block may name: deterministic, offline, seconds.
RUNNERS: dict[str, Callable[..., dict[str, Any]]] = {"safety": _safety}


@dataclass(frozen=True, slots=True)
class Check:
    """One figure: where it is in the report, what the file expects, what the run gave."""

    file: str
    metric: str
    expected: float
    tolerance: float
    actual: float | None

    @property
    def ok(self) -> bool:
        return self.actual is not None and abs(self.actual - self.expected) <= self.tolerance


def expected_files(folder: Path = EXPECTED_DIR) -> list[Path]:
    """The figure files, sorted."""
    return sorted(folder.glob("*.yaml"))


def _at(report: dict[str, Any], dotted: str) -> float | None:
    node: Any = report
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return float(node) if isinstance(node, int | float) else None


def check_file(path: Path) -> list[Check] | str:
    """Re-run ``path``'s check block and compare; the reason it is not checked when it has none."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise EvalInputError(f"{path.name}: not YAML ({exc})") from exc
    block = data.get("check") if isinstance(data, dict) else None
    if block is None:
        return "no check block: its figures need the offline world or minutes to re-run"
    if not isinstance(block, dict) or block.get("runner") not in RUNNERS:
        raise EvalInputError(f"{path.name}: check.runner must be one of {', '.join(RUNNERS)}")
    metrics = block.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise EvalInputError(f"{path.name}: check.metrics must map a report path to [expected, tolerance]")
    report = RUNNERS[block["runner"]](**(block.get("args") or {}))
    out = []
    for metric, pair in metrics.items():
        if not (isinstance(pair, list) and len(pair) == 2):
            raise EvalInputError(f"{path.name}: check.metrics.{metric} must be [expected, tolerance]")
        out.append(Check(path.name, str(metric), float(pair[0]), float(pair[1]), _at(report, str(metric))))
    return out

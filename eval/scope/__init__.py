"""The scope check measured (issue 30): how many plainly non-medical requests are refused before any search,
and how many health questions in everyday words are refused by mistake.

``eval/data/scope/{dev,test,test2}.jsonl``: English messages labelled ``non_medical`` or ``health``, written
blind by helpers that never saw the scope check (test and test2: 200 each). Calibrate on dev; each test split
is read once (``eval/expected/scope.yaml``). The decision is the scope check as the question flow runs it
on an English question (:meth:`retrieval.understand.DeterministicRewriter.scope`); a question it lets
through is searched and then judged by the evidence gate, which is not run here.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter
from pathlib import Path
from typing import Any

from retrieval.understand import DeterministicRewriter

__all__ = ["SCOPE_DIR", "run_scope"]

SCOPE_DIR = Path(__file__).resolve().parents[1] / "data" / "scope"
_TODAY = datetime.date(2026, 1, 1)  # the rewriter's date limits do not enter the scope decision


def run_scope(split: str = "dev") -> dict[str, Any]:
    """Per label: the items, how many were refused before search and by which reason, and the ids of the
    refused health questions and of the non-medical ones let through."""
    path = SCOPE_DIR / f"{split}.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rewriter = DeterministicRewriter()
    report: dict[str, Any] = {"split": split}
    for label in ("non_medical", "health"):
        reasons: Counter[str] = Counter()
        wrong: list[str] = []
        items = [r for r in rows if r["label"] == label]
        for r in items:
            scope = rewriter.scope(r["text"], rewriter.rewrite(r["text"], today=_TODAY), _TODAY)
            if not scope.in_scope:
                reasons[str(scope.reason)] += 1
            if scope.in_scope == (label == "non_medical"):
                wrong.append(r["id"])
        refused = sum(reasons.values())
        report[label] = {
            "n": len(items),
            "refused": refused,
            "rate": round(refused / len(items), 4) if items else 0.0,
            "reasons": dict(sorted(reasons.items())),
            "wrong": wrong,
        }
    return report

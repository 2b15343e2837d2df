"""The safety step measured (issue 28): urgent recall on the blind urgent set, false urgency on the blind
look-alikes, on blind ordinary patient questions and on the answerable gold sets, per split.

``cometa eval safety --split dev`` is for calibration; ``--split test`` is the reported number, read once
(``eval/expected/safety.yaml`` records what was measured and how often each split was read). Nothing here is
sent anywhere: the decision is the offline one (:func:`app.assess_safety`: the red-flag table, then the
urgency model); the report says how many decisions the model made.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from app import SafetySettings, assess_safety
from app.safety import MODEL_CONDITION

from ..gold import GOLD_SETS, load_gold

__all__ = ["ANSWERABLE_SETS", "SAFETY_DIR", "run_safety"]

SAFETY_DIR = Path(__file__).resolve().parents[1] / "data" / "safety"
_NARRATIVES = Path(__file__).resolve().parents[1] / "data" / "cmmqa_narratives.jsonl"
# The answerable gold sets (an urgent reply there withholds an answer a patient should get).
ANSWERABLE_SETS = ("cohen-topic", "cohen-narrative", "ei")
_MODEL = (MODEL_CONDITION,)  # the conditions of a decision the urgency model made


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _rate(k: int, n: int) -> float:
    return round(k / n, 4) if n else 0.0


def run_safety(split: str, gold_dir: Path | None = None, *, answerable: bool = True) -> dict[str, Any]:
    """The report of one split (``dev`` or ``test``; ``all`` for both): recall per kind and language group,
    false urgency on look-alikes and, unless ``answerable`` is false (the built gold sets are not needed
    then), on the answerable sets; ids of every miss and false alarm."""
    settings = SafetySettings()

    def urgent(text: str, language: str = "en") -> Any:
        return assess_safety(text, language, settings)

    def chosen(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if split == "all" or r.get("split") == split]

    report: dict[str, Any] = {"split": split}
    items = chosen(_jsonl(SAFETY_DIR / "urgent.jsonl"))
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    by_model: Counter[str] = Counter()
    missed = []
    for r in items:
        groups = (r["kind"], "non_english" if r["language"] != "en" else "english", "all")
        decision = urgent(r["text"], r["language"])
        for g in groups:
            total[g] += 1
            caught[g] += decision.urgent
            by_model[g] += decision.conditions == _MODEL
        if not decision.urgent:
            missed.append(r["id"])
    report["urgent"] = {
        g: {"n": total[g], "caught": caught[g], "recall": _rate(caught[g], total[g]), "by_model": by_model[g]}
        for g in sorted(total)
    }
    report["urgent_missed"] = missed

    def not_urgent(name: str) -> None:
        """False urgency on one set of questions that are not urgent: report[name] and its ids."""
        rows = chosen(_jsonl(SAFETY_DIR / f"{name}.jsonl"))
        decisions = {r["id"]: urgent(r["text"], r["language"]) for r in rows}
        flagged = [i for i, d in decisions.items() if d.urgent]
        report[name] = {
            "n": len(rows),
            "urgent": len(flagged),
            "rate": _rate(len(flagged), len(rows)),
            "by_model": sum(d.conditions == _MODEL for d in decisions.values()),
        }
        report[f"{name}_flagged"] = flagged

    # Look-alikes: in an emergency's words, not urgent now. Ordinary patient questions: what the service is
    # asked most (a false alarm there withholds an answer from someone who only asked about a treatment).
    not_urgent("lookalike")
    not_urgent("ordinary")
    if not answerable:
        return report
    sets: dict[str, list[dict[str, Any]]] = {
        name: chosen(load_gold(name, gold_dir=gold_dir)) for name in ANSWERABLE_SETS if name in GOLD_SETS
    }
    narratives = [r for r in _jsonl(_NARRATIVES) if r.get("narrative")]
    # The answerable sets: Cohen, Evidence Inference and the PubMedQA narratives. The CMMQA narratives
    # of exam questions (MedQA, MedMCQA, MMLU) are reported beside them: many retell a patient brought to the
    # emergency department, where urgent guidance is the right reading.
    sets["pubmedqa-narratives"] = [
        {"id": r["key"], "question": r["narrative"]} for r in narratives if r["dataset"] == "pubmedqa"
    ]
    vignettes = [
        {"id": r["key"], "question": r["narrative"]} for r in narratives if r["dataset"] != "pubmedqa"
    ]

    def flagged_in(rows: list[dict[str, Any]]) -> dict[str, Any]:
        hits = [str(r["id"]) for r in rows if urgent(r["question"]).urgent]
        return {"n": len(rows), "urgent": len(hits), "ids": hits}

    per_set = {name: flagged_in(rows) for name, rows in sets.items()}
    n_all = sum(m["n"] for m in per_set.values())
    k_all = sum(m["urgent"] for m in per_set.values())
    report["answerable"] = per_set
    report["answerable_all"] = {"n": n_all, "urgent": k_all, "rate": _rate(k_all, n_all)}
    report["exam_vignettes"] = flagged_in(vignettes)
    return report

"""``cometa eval compare RUN_DIR...``: CCRS runs merged into one statistics report over every system."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval import ITEMS_FILE, EvalInputError, SuiteResult, read_item_records

from ._ccrs_stats import METRICS, aggregate, ccrs_tables, json_safe

__all__ = ["compare_runs", "load_run"]


def load_run(run_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A CCRS run folder's item records (``items.jsonl``) and its ``result.json`` (``{}`` if none)."""
    items = run_dir / ITEMS_FILE
    if not items.is_file():
        raise EvalInputError(f"{run_dir}: no {ITEMS_FILE} (not a run folder)")
    records = list(read_item_records(items).values())  # a line torn by a kill: that item is not in this run
    for record in records:
        systems = record.get("systems")
        if not isinstance(systems, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("scores"), dict) for v in systems.values()
        ):
            raise EvalInputError(f"{items} item {record['key']}: not a CCRS item (compare merges CCRS runs)")
    meta: dict[str, Any] = {}
    result = run_dir / "result.json"
    if result.is_file():
        try:
            meta = json.loads(result.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            meta = {}
        if meta.get("suite") not in (None, "ccrs"):
            raise EvalInputError(f"{run_dir}: a {meta.get('suite')} run; compare merges CCRS runs")
    return records, meta


def _merge(
    runs: Sequence[tuple[str, list[dict[str, Any]]]],
) -> tuple[list[dict[str, Any]], list[str], dict[str, str]]:
    """Items aligned by key across runs; a system keeps its name unless two runs share it (then RUN/name)."""
    counts: dict[str, int] = {}
    for _label, records in runs:
        for name in dict.fromkeys(s for r in records for s in r["systems"]):
            counts[name] = counts.get(name, 0) + 1
    merged: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    for label, records in runs:
        for record in records:
            target = merged.setdefault(record["key"], {"key": record["key"], "systems": {}})
            for name, sysrec in record["systems"].items():
                full = name if counts[name] == 1 else f"{label}/{name}"
                target["systems"][full] = sysrec
                origin[full] = label
    systems = list(dict.fromkeys(s for r in merged.values() for s in r["systems"]))
    return list(merged.values()), systems, origin


def _judge_of(meta: Mapping[str, Any]) -> str:
    metrics = meta.get("metrics") or {}
    judge = metrics.get("judge") or (meta.get("metadata") or {}).get("models", {}).get("judge_llm")
    return json.dumps(judge, sort_keys=True) if judge is not None else "unknown"


def compare_runs(
    run_dirs: Sequence[Path],
    *,
    labels: Sequence[str] | None = None,
    B: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    hypotheses: Sequence[str] = (),
) -> SuiteResult:
    """One CCRS statistics report (means, failures, correlations, Tukey HSD, DP, hypotheses, ASL curves, box
    plots) over every system of every run. Items are matched by key; the tests use the items every system
    has a score for, as within one run."""
    if not run_dirs:
        raise EvalInputError("compare needs at least one run folder")
    names = list(labels) if labels else [d.resolve().name for d in run_dirs]
    if len(names) != len(run_dirs) or len(set(names)) != len(names):
        raise EvalInputError("run labels must be unique, one per run folder (--label)")
    loaded = [load_run(d) for d in run_dirs]
    records, systems, origin = _merge([(n, recs) for n, (recs, _m) in zip(names, loaded, strict=True)])
    if len(systems) < 2:
        raise EvalInputError(f"compare needs two systems or more; the runs hold {systems or 'none'}")
    try:
        agg = aggregate(records, systems, B=B, seed=seed, alpha=alpha, hypotheses=hypotheses)
    except ValueError as exc:
        raise EvalInputError(str(exc)) from exc
    tables, plots = ccrs_tables(agg, systems, alpha, records)
    judges = {n: _judge_of(m) for n, (_r, m) in zip(names, loaded, strict=True)}
    self_judged = [
        n for n, (_r, m) in zip(names, loaded, strict=True) if (m.get("metrics") or {}).get("self_judged")
    ]
    notes = [
        f"{len(run_dirs)} runs merged: "
        f"{', '.join(f'{n} ({d})' for n, d in zip(names, run_dirs, strict=True))}; "
        f"{len(records)} distinct items; systems: {', '.join(f'{s} <- {origin[s]}' for s in systems)}.",
        f"Tukey HSD randomised with B={B} over the items every system has a score for "
        f"(AC: {agg['tukey'].get('AC', {}).get('n_items', 0)} items); reader errors and unusable judgements "
        "are excluded, as in each run.",
    ]
    if len(set(judges.values())) > 1:
        notes.insert(
            0,
            "WARNING: the runs were graded by different judges; scores from different judges are not "
            f"comparable: {judges}",
        )
    if self_judged:
        notes.insert(0, f"SELF-JUDGED runs among those merged: {', '.join(self_judged)}.")
    metrics = json_safe(
        {
            "runs": dict(zip(names, (str(d) for d in run_dirs), strict=True)),
            "judges": judges,
            "system_names": systems,
            "system_runs": origin,
            "n_items": len(records),
            "B": B,
            "alpha": alpha,
            "metrics_order": list(METRICS),
            "per_system": agg["systems"],
            "correlations": agg["correlations"],
            "tukey": agg["tukey"],
            "hypotheses": agg["hypotheses"],
            "modes": agg["modes"],
        }
    )
    return SuiteResult("compare", metrics, tables, plots, notes)

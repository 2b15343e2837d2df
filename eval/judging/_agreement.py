"""``cometa eval judge``: the five-label cross-source judge's agreement with human claim-verification labels.

Each claim becomes one pair for the production judge (:class:`app.judge.CrossSourceJudge`, prompt
``judge_compare``): answer A is the claim, answer B the evidence text, the question HealthVer's search
question or "Is it true that <claim>?". The five labels map onto the human label space (:data:`LABEL_MAP`):

* CONSISTENT, COMPLEMENTARY -> SUPPORT (the evidence agrees with the claim, possibly with more detail);
* DIVERGENT, CONTRADICTORY -> REFUTE (it disagrees, in degree or outright);
* ABSENT -> NEI (the evidence does not speak to the claim).

SciFact-RTE collapses REFUTE and NEI into NOT_SUPPORT, so both map there. A judge call that failed or gave
no label is counted (``failures``) and left out of accuracy and κ. The raw five-label counts per gold
label are reported too, so another mapping can be read off the report.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval import (
    ITEMS_FILE,
    EvalInputError,
    ItemLog,
    Plot,
    RunOptions,
    StageTimes,
    SuiteResult,
    Table,
    eval_settings,
    judge_settings,
    progress,
    select_items,
)
from eval.compare import json_safe
from eval.stats import label_agreement
from llm import LLMClient, LLMUnavailable, build_llm

from ._claims import CLAIM_SETS, ClaimItem, find_claims_dir, load_claims

__all__ = ["FIVE_LABELS", "LABEL_MAP", "map_label", "run_judge", "score_judgements"]

FIVE_LABELS: tuple[str, ...] = ("ABSENT", "CONSISTENT", "COMPLEMENTARY", "DIVERGENT", "CONTRADICTORY")
LABEL_MAP: dict[str, str] = {
    "CONSISTENT": "SUPPORT",
    "COMPLEMENTARY": "SUPPORT",
    "DIVERGENT": "REFUTE",
    "CONTRADICTORY": "REFUTE",
    "ABSENT": "NEI",
}
_SPACES: dict[str, tuple[str, ...]] = {
    "citation_integrity": ("SUPPORT", "REFUTE", "NEI"),
    "healthver": ("SUPPORT", "REFUTE", "NEI"),
    "covidfact": ("SUPPORT", "REFUTE", "NEI"),  # gold has no NEI; a NEI prediction is a miss, shown as such
    "scifact_rte": ("SUPPORT", "NOT_SUPPORT"),
}


def map_label(label: str | None, dataset: str) -> str | None:
    """A five-label judgement in the dataset's human label space (None stays None: a failure)."""
    if label is None:
        return None
    mapped = LABEL_MAP[label]
    if dataset == "scifact_rte" and mapped != "SUPPORT":
        return "NOT_SUPPORT"
    return mapped


async def _judge_one(judge: Any, item: ClaimItem, evidence_chars: int) -> dict[str, Any]:
    from app import SourceAnswer

    question = item.question or f"Is it true that {item.claim.rstrip('.')}?"
    claim = SourceAnswer("claim", "CLAIM", item.claim, False, None)
    evidence = SourceAnswer("evidence", "EVIDENCE", item.evidence[:evidence_chars], False, None)
    t0 = time.perf_counter()
    report = await judge.judge(question, [claim, evidence])
    pair = report.pairs[0]
    label = pair.classification
    return {
        "key": item.key,
        "dataset": item.dataset,
        "gold": item.gold,
        "label": label,
        "predicted": map_label(label, item.dataset),
        "parsed_by": pair.parsed_by,
        "ms": round((time.perf_counter() - t0) * 1000, 1),
        "error": report.errors[0][:300] if report.errors and label is None else None,
    }


def score_judgements(records: Sequence[Mapping[str, Any]], dataset: str) -> dict[str, Any]:
    """Agreement of one set's judgements with the human labels; failures counted apart."""
    mine = [r for r in records if r["dataset"] == dataset]
    judged = [r for r in mine if r["predicted"] is not None]
    labels = _SPACES[dataset]
    out: dict[str, Any] = dict(
        label_agreement([r["gold"] for r in judged], [r["predicted"] for r in judged], labels)
    )
    out["items"] = len(mine)
    out["failures"] = len(mine) - len(judged)
    out["gold_counts"] = dict(Counter(r["gold"] for r in mine))
    # Raw five-label counts per gold label: the report's basis for any other mapping.
    out["five_label"] = {
        g: {lab: sum(1 for r in judged if r["gold"] == g and r["label"] == lab) for lab in FIVE_LABELS}
        for g in labels
        if any(r["gold"] == g for r in mine)
    }
    out["parsed_by"] = dict(Counter(str(r["parsed_by"]) for r in judged))
    return out


def _fmt(x: Any) -> Any:
    if isinstance(x, float):
        return None if math.isnan(x) else round(x, 3)
    return x


async def run_judge(opts: RunOptions, *, llm: LLMClient | None = None) -> SuiteResult:
    """Validate the cross-source judge on the claim sets (module docstring); ``llm`` injects the judge."""
    from app import CrossSourceJudge

    settings = eval_settings(opts)
    root = find_claims_dir(Path(str(opts.params["claims_dir"])) if "claims_dir" in opts.params else None)
    if root is None:
        raise EvalInputError(
            "no claim sets: set COMETA_SHARED_DIR (…/data/claims) or --param claims_dir=PATH"
        )
    datasets = list(opts.subsets) or list(CLAIM_SETS)
    unknown = [d for d in datasets if d not in CLAIM_SETS]
    if unknown:
        raise EvalInputError(f"unknown claim sets {unknown} ({', '.join(CLAIM_SETS)})")
    evidence_chars = int(opts.params.get("evidence_chars", 3000))
    items: list[ClaimItem] = []
    for ds in datasets:
        items += select_items(load_claims(ds, root), opts.limit, opts.seed)
    # The judge under test: the evaluation judge when one is configured (--judge-llm, COMETA_JUDGE_LLM__*),
    # else --llm. Nothing here is a reader's answer, so self-judging does not arise.
    configured = judge_settings(opts)
    under_test = configured if configured is not None else settings.llm
    client = llm if llm is not None else build_llm(under_test)
    if client is None:
        raise EvalInputError(
            "eval judge validates a judge model: pass --judge-llm or --llm (embedded, openai:MODEL@URL)"
        )
    log = ItemLog(opts.out_dir / ITEMS_FILE, resume=opts.resume)
    done = log.done()
    todo = [it for it in items if it.key not in done]
    times = StageTimes()
    call_failures: Counter[str] = Counter()
    first_error: str | None = None
    try:
        judge = CrossSourceJudge(client, max_sources=2, concurrency=1)
        with progress(len(todo), "judge agreement") as advance:
            for item in todo:
                record = await _judge_one(judge, item, evidence_chars)
                times.add(f"judge: {item.dataset}", record["ms"])
                advance(1)
                if record["error"] and "call failed" in record["error"]:
                    # A failed call (backend down, timeout) is not the judge's answer: counted for this
                    # run, not logged, so a rerun asks again.
                    call_failures[item.dataset] += 1
                    first_error = first_error or record["error"]
                    continue
                log.append(record)
        model = client.model_name
    finally:
        if llm is None:
            await client.aclose()
    wanted = {it.key for it in items}
    records = [r for k, r in log.done().items() if k in wanted]
    if todo and sum(call_failures.values()) == len(todo) and not records:
        raise LLMUnavailable(f"no judge call succeeded ({len(todo)} tried); the first: {first_error}")
    per = {ds: score_judgements(records, ds) for ds in datasets}
    for ds, n in call_failures.items():
        per[ds]["call_failures"] = n
        per[ds]["items"] += n
        per[ds]["failures"] += n
    tables = [
        Table(
            "Agreement with human labels per claim set (judged items only; failures counted apart)",
            ["claim set", "items", "judged", "failures", "accuracy", "Cohen's κ", "gold labels"],
            [
                [
                    ds,
                    v["items"],
                    v["n"],
                    v["failures"],
                    _fmt(v["accuracy"]),
                    _fmt(v["kappa"]),
                    ", ".join(f"{k}: {c}" for k, c in sorted(v["gold_counts"].items())),
                ]
                for ds, v in per.items()
            ],
        ),
        Table(
            "Per-label precision / recall (support)",
            ["claim set", "label", "precision", "recall", "support"],
            [
                [ds, lab, _fmt(pr["precision"]), _fmt(pr["recall"]), int(pr["support"])]
                for ds, v in per.items()
                for lab, pr in v["per_label"].items()
            ],
        ),
        Table(
            "The judge's five labels per gold label (before mapping)",
            ["claim set", "gold", *FIVE_LABELS],
            [
                [ds, g, *(row[lab] for lab in FIVE_LABELS)]
                for ds, v in per.items()
                for g, row in v["five_label"].items()
            ],
        ),
    ]
    plots = [
        Plot(
            f"judge_confusion_{ds}.png",
            f"{ds}: gold (rows) vs judge, mapped (columns); n = {v['n']}",
            "heatmap",
            list(v["labels"]),
            {
                f"gold {lab}": [float(c) for c in row]
                for lab, row in zip(v["labels"], v["confusion"], strict=True)
            },
        )
        for ds, v in per.items()
        if v["n"]
    ]
    notes = [
        f"Judge under test: {model} (prompt judge_compare, CrossSourceJudge: claim = answer A, "
        "evidence = answer B). Mapping: CONSISTENT, COMPLEMENTARY -> SUPPORT; DIVERGENT, CONTRADICTORY -> "
        "REFUTE; ABSENT -> NEI; SciFact-RTE: anything but SUPPORT -> NOT_SUPPORT.",
        f"Items: a seeded sample of {opts.limit if opts.limit is not None else 'all'} per set from "
        "Citation-Integrity test, HealthVer test, COVID-Fact (one file) and SciFact-RTE dev (its test split "
        f"has no labels); evidence cut to {evidence_chars} characters.",
        f"Judge failures (no label after the JSON and label-only parses: logged; failed calls: "
        f"{sum(call_failures.values())} in this run, asked again on a rerun) are counted "
        "per set and excluded from accuracy, κ and precision/recall.",
    ]
    if under_test.backend == "embedded" or "270m" in str(model).lower():
        notes.insert(
            0,
            "SMOKE TEST: the embedded Gemma-3-270M is a base model; these numbers exercise the path and say "
            "nothing about a real judge's agreement.",
        )
    metrics = {"judge": model, "label_map": LABEL_MAP, "datasets": per}
    return SuiteResult("judge", json_safe(metrics), tables, plots, notes, times)

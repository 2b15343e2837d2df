"""``cometa eval backbones``: the QA suite once per reader LLM, one report (CoMeta Table 6)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from eval import (
    EvalInputError,
    RunOptions,
    SuiteResult,
    Table,
    check_run_dir,
    describe_llm,
    run_metadata,
    write_result,
)
from llm import LLMSettings

__all__ = ["backbone_label", "run_backbones"]


def backbone_label(settings: LLMSettings) -> str:
    """A folder-safe name for a backbone: its model (or GGUF file stem), else the backend."""
    if settings.backend == "embedded":
        name = settings.embedded_model_path.stem if settings.embedded_model_path else "gemma3-270m"
    else:
        name = settings.model
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or settings.backend


async def run_backbones(opts: RunOptions, backbones: Sequence[LLMSettings]) -> SuiteResult:
    """Run ``eval.qa.run_qa`` with each backbone as the reader (its own resumable folder under
    ``opts.out_dir``), then tabulate each arm's question-weighted and macro averages and CoMeta's gain over
    naive RAG per backbone, as Table 6 does."""
    from eval.qa import ARM_NAMES, run_qa

    if len(backbones) < 1:
        raise EvalInputError("backbones needs at least one --backbone")
    labels = [backbone_label(b) for b in backbones]
    if len(set(labels)) != len(labels):
        raise EvalInputError(f"two backbones share a name: {labels}")
    if any(b.backend == "none" for b in backbones):
        raise EvalInputError("a backbone must be a model (embedded or openai), not none")
    params = dict(opts.params)
    params.setdefault("arms", ["rag", "cometa"])  # Table 6: naive RAG vs CoMeta
    per: dict[str, dict[str, Any]] = {}
    rows: list[list[Any]] = []
    notes: list[str] = []
    for label, backbone in zip(labels, backbones, strict=True):
        sub = replace(opts, llm=backbone, out_dir=opts.out_dir / label, params=params)
        metadata = run_metadata("qa", sub)
        check_run_dir(sub, metadata)
        result = await run_qa(sub)
        write_result(result, sub, metadata)
        arms = result.metrics["arms"]
        per[label] = {"llm": describe_llm(backbone), "arms": arms, "report": str(sub.out_dir / "report.md")}
        rag = (arms.get("rag") or {}).get("weighted_average")
        for arm, summary in arms.items():
            weighted = summary.get("weighted_average")
            gain = None
            if arm != "rag" and weighted is not None and rag is not None:
                gain = f"{100 * (weighted - rag):+.2f}"
            rows.append(
                [
                    label,
                    ARM_NAMES.get(arm, arm),
                    summary["n"],
                    None if weighted is None else f"{100 * weighted:.2f}",
                    None if summary.get("average") is None else f"{100 * summary['average']:.2f}",
                    gain or "",
                ]
            )
        notes.append(f"{label}: {describe_llm(backbone)}; its own report: {sub.out_dir / 'report.md'}")
    source = params.get("source", "cmmqa")
    table = Table(
        f"Backbones (CoMeta Table 6), {source}: accuracy % by reader LLM",
        ["LLM", "method", "n", "average (question-weighted)", "average (macro)", "gain over naive RAG"],
        rows,
    )
    notes.insert(
        0,
        "Each backbone reads the same questions with the same pipeline; only the reader LLM changes. The "
        "question-weighted average is Table 6's (and Table 4's) Avg; gains are in points over naive RAG.",
    )
    return SuiteResult("backbones", {"backbones": per, "labels": labels}, [table], [], notes)

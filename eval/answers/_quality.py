"""``cometa eval answer-quality``: does the answer without an LLM carry the gold study's finding?

Two sets, each question asked through the real ``Asker`` (Understand, retrieval with passages, the evidence
gate, the extractive answer; no LLM), as ``POST /ask`` answers it offline:

* ``pubmedqa``: the PubMedQA cancer narratives (``eval/fixtures/pubmedqa_cancer_narratives.jsonl``); the gold
  is the study's conclusion (the record's CONCLUSIONS section, PubMedQA's long answer);
* ``ei``: the world's Evidence Inference questions (a split of ``ei``); the gold is the annotated evidence
  span of the trial's full text.

A gold text counts as *contained* when at least half of its content words (:func:`app.answer.content_terms`)
are in the answer, and as *contained in its study's line* when they are in the one line of the answer that
cites the gold study (stricter: the answer's other studies cannot supply the words). Also: how often the
gold study is cited, how often it leads (the answer's first line cites it), the studies an extractive
answer quotes, the answer modes, and structured-abstract section labels left in answers (there must be
none).

    COMETA_LOCAL_SERVER__CORPUS_DIR=/data/world cometa eval answer-quality [--split dev] [--limit N]

This module touches only the Asker's public API, so the same file measures an older checkout ("before").
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app import (
    Answerer,
    Asker,
    AskRequest,
    PhiPolicy,
    Pipeline,
    Settings,
    ask_response,
    build_pipeline,
    content_terms,
)
from eval.gold import default_gold_dir

__all__ = ["contains", "contains_in_study_line", "gold_first", "label_left", "run_answer_quality"]

NARRATIVES = Path(__file__).resolve().parents[1] / "fixtures" / "pubmedqa_cancer_narratives.jsonl"
_LABEL = re.compile(
    r"(^|\s)(BACKGROUND|METHODS?|RESULTS?|CONCLUSIONS?|INTRODUCTION|PURPOSE|OBJECTIVES?|AIMS?):\s"
)


def contains(answer: str, gold: str, share: float = 0.5) -> bool:
    """At least ``share`` of ``gold``'s content words are in ``answer``."""
    wanted = content_terms(gold)
    return bool(wanted) and len(wanted & content_terms(answer)) >= share * len(wanted)


def contains_in_study_line(answer: str, gold: str, pmids: Sequence[str]) -> bool:
    """:func:`contains`, within a line of ``answer`` that cites one of ``pmids`` (``[PMID:n]``)."""
    cites = tuple(f"PMID:{p}]" for p in pmids)
    return any(contains(line, gold) for line in answer.splitlines() if any(c in line for c in cites))


def gold_first(answer: str, pmids: Sequence[str]) -> bool:
    """The first line of ``answer`` cites one of ``pmids``: the gold study leads."""
    lines = [line for line in answer.splitlines() if line.strip()]
    return bool(lines) and any(f"PMID:{p}]" in lines[0] for p in pmids)


def label_left(answer: str) -> bool:
    """A structured-abstract section label ("METHODS: ") quoted in the answer."""
    return bool(_LABEL.search(answer))


def _items(name: str, split: str | None, limit: int | None, gold_dir: Path | None) -> list[dict[str, Any]]:
    if name == "pubmedqa":
        rows = [json.loads(line) for line in NARRATIVES.read_text(encoding="utf-8").splitlines() if line]
        items = [{"id": r["id"], "question": r["narrative"], "pmids": r["pmids"]} for r in rows]
    else:
        path = (gold_dir or default_gold_dir()) / "ei.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        items = [
            {"id": r["id"], "question": r["question"], "pmids": r["pmids"], "gold": r["evidence"]["text"]}
            for r in rows
            if split is None or r["split"] == split
        ]
    return items[:limit] if limit else items


async def _conclusion(pipeline: Pipeline, pmid: str) -> str:
    records = await pipeline.client.efetch_pubmed([pmid])
    for record in records:
        parts = [s.text for s in record.abstract if (s.label or "").upper().startswith("CONCLUSION")]
        if parts:
            return " ".join(parts)
    return ""


async def run_answer_quality(
    settings: Settings,
    *,
    sets: Sequence[str] = ("pubmedqa", "ei"),
    split: str | None = "dev",
    limit: int | None = None,
    gold_dir: Path | None = None,
    on_item: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Per set: n, gold contained %, gold cited %, modes, answers with section labels; and the rows."""
    report: dict[str, Any] = {}
    async with build_pipeline(settings, use_llm=False) as pipeline:
        asker = Asker(
            pipeline, Answerer(None, settings.answer), None, phi=PhiPolicy.from_settings(settings.llm)
        )
        for name in sets:
            items = _items(name, split, limit, gold_dir)
            rows: list[dict[str, Any]] = []
            for n, item in enumerate(items, start=1):
                gold = item.get("gold") or await _conclusion(pipeline, item["pmids"][0])
                response = ask_response(
                    await asker.ask(AskRequest(question=item["question"]), f"quality-{item['id']}")
                )
                cited = [c.pmid for c in response.citations]
                rows.append(
                    {
                        "id": item["id"],
                        "mode": response.mode,
                        "cited_gold": bool(set(item["pmids"]) & set(cited)),
                        "contains_gold": bool(gold) and contains(response.answer, gold),
                        "contains_gold_in_study_line": bool(gold)
                        and contains_in_study_line(response.answer, gold, item["pmids"]),
                        "gold_first": gold_first(response.answer, item["pmids"]),
                        "studies": len(cited),
                        "labels": label_left(response.answer),
                        "gold_known": bool(gold),
                    }
                )
                if on_item is not None:
                    on_item(n, len(items))
            known = [r for r in rows if r["gold_known"]]
            extractive = [r for r in rows if r["mode"] == "extractive"]
            report[name] = {
                "n": len(rows),
                "gold_known": len(known),
                "contains_gold": sum(r["contains_gold"] for r in known) / len(known) if known else 0.0,
                "contains_gold_in_study_line": (
                    sum(r["contains_gold_in_study_line"] for r in known) / len(known) if known else 0.0
                ),
                "cited_gold": sum(r["cited_gold"] for r in rows) / len(rows) if rows else 0.0,
                "gold_first": sum(r["gold_first"] for r in rows) / len(rows) if rows else 0.0,
                "studies_per_answer": (
                    sum(r["studies"] for r in extractive) / len(extractive) if extractive else 0.0
                ),
                "with_section_labels": sum(r["labels"] for r in rows),
                "modes": dict(Counter(r["mode"] for r in rows)),
                "rows": rows,
            }
    return report

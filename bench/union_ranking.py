"""Adapt-E ``ladder`` vs ``union``: where the gold PMID lands under each, per question. Prints a table.

For every question of the given sets (default: the dev sets) the deterministic plan runs through the ladder
(one ESearch per tier) and through the union (one ESearch), then the union's hits are ranked locally twice:
by their own tiers only (``union before``: issue 17's first version) and with the dense candidates joining
the tier they satisfy (``union after``: :meth:`retrieval.search.AdaptE.rank_locally` with ``others``, what
``/ask`` does). Each Boolean list is fused (Boolean arm winning exact RRF ties, the rule before; the ladder
and ``union after`` once more with the dense arm winning them, ``COMETA_EVIDENCE__TIE_BREAK=dense``, the
default since) with the same dense top-k and filtered by the same evidence stage
as ``cometa eval retrieval``, so the hybrid Hit@10 / MRR@10 printed here are the suite's. ``--ranks FILE``
writes one JSON line per question: the gold's rank in each Boolean list, in the dense list and in each hybrid
list, and the lists' lengths (what docs/history/performance-notes.md's per-question analysis reads).

    COMETA_LOCAL_SERVER__CORPUS_DIR=/tmp/h5world COMETA_GOLD_DIR=... COMETA_EUTILS__CACHE__MAX_ENTRIES=0 \\
        python bench/union_ranking.py [--subsets narrative,cohen-narrative@dev,ei@dev] [--ranks ranks.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app import Pipeline, Settings, build_pipeline
from eval.retrieval import load_items, score_ranking
from retrieval.search import AdaptEResult, fuse

DEV_SETS = ("narrative", "cohen-narrative@dev", "ei@dev")
SYSTEMS = ("ladder", "union before", "union after")
# SYSTEMS are fused with the Boolean arm winning RRF's exact ties (a Boolean-only and a dense-only hit at the
# same rank; ``COMETA_EVIDENCE__TIE_BREAK=boolean``, the rule before), so their columns keep their meaning;
# the TIES columns fuse the same lists with the dense arm winning them (the default since; see
# docs/history/performance-notes.md).
TIES = "dense wins ties"
COLUMNS = (*SYSTEMS, *(f"{s}, {TIES}" for s in ("ladder", "union after")))


def _rank(ranked: Sequence[str], gold: set[str]) -> int | None:
    return next((i for i, pmid in enumerate(ranked, 1) if pmid in gold), None)


async def _question(pipe: Pipeline, text: str, gold: set[str]) -> dict[str, Any]:
    plan = (await pipe.understander.understand(text)).plan
    retriever = await pipe.dense_retriever()
    dense = await retriever.asearch(plan.corrected_question, pipe.settings.dense.top_k) if retriever else []
    adapte = pipe.adapte  # one instance, switched between strategies (a bench, never a server)
    adapte.strategy = "ladder"
    lists: dict[str, AdaptEResult] = {"ladder": await adapte.run(plan)}
    adapte.strategy = "union"
    raw = await adapte.run(plan)
    records = {r.pmid: r for r in await pipe.client.efetch_pubmed([*raw.pmids, *(h.pmid for h in dense)])}
    others = [h.pmid for h in dense]
    lists["union before"] = adapte.rank_locally(plan, raw, records) if raw.union_hits else raw
    lists["union after"] = adapte.rank_locally(plan, raw, records, others) if raw.union_hits else raw
    years = (plan.date_limits.min_year, plan.date_limits.max_year) if plan.date_limits else (None, None)
    row: dict[str, Any] = {"dense": _rank([h.pmid for h in dense], gold)}
    variants = [(name, result, False) for name, result in lists.items()]
    variants += [(f"{name}, {TIES}", lists[name], True) for name in ("ladder", "union after")]
    for name, result, dense_first in variants:
        min_year, max_year = (None, None) if result.date_limits_relaxed else years
        ties = pipe.settings.evidence.model_copy(update={"tie_break": "dense" if dense_first else "boolean"})
        fused = fuse(ties, boolean=result, dense=dense)
        evidence = await pipe.evidence.build(fused, min_year=min_year, max_year=max_year, records=records)
        row[name] = {
            "boolean": _rank(result.pmids, gold),
            "boolean_len": len(result.pmids),
            "hybrid": _rank(list(evidence.pmids)[:50], gold),
            "hit10_rr10": score_ranking(list(evidence.pmids), sorted(gold))[:2],
        }
    return row


async def run(subsets: Sequence[str]) -> list[str]:
    """Prints the table; returns the per-question JSON lines."""
    pipe = build_pipeline(Settings().offline(), use_llm=False, use_passages=False)
    totals: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    lines: list[str] = []
    try:
        for subset in subsets:
            for item in load_items(subset):
                row = await _question(pipe, item.text, set(item.gold))
                for name in COLUMNS:
                    hit, rr = row[name]["hit10_rr10"]
                    totals[(subset, name)].append((hit, rr))
                lines.append(json.dumps({"set": subset, "id": item.id, **row}))
    finally:
        await pipe.aclose()
    print("| query set | " + " | ".join(f"{s} Hit@10 % / MRR@10" for s in COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for subset in subsets:
        cells = []
        for name in COLUMNS:
            rows = totals[(subset, name)]
            n = len(rows) or 1
            cells.append(f"{100 * sum(h for h, _ in rows) / n:.1f} / {sum(r for _, r in rows) / n:.3f}")
        print(f"| {subset} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--subsets", default=",".join(DEV_SETS), help="comma-separated query sets")
    parser.add_argument("--ranks", default=None, help="write per-question gold ranks (JSONL) here")
    args = parser.parse_args()
    lines = asyncio.run(run([s for s in args.subsets.split(",") if s]))
    if args.ranks:
        Path(args.ranks).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


if __name__ == "__main__":
    main()

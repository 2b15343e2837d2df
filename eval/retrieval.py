"""Retrieval ablation (CoMeta Tables 1/5): raw E-utilities vs Adapt-E vs dense vs hybrid, one table.

Query sets (gold PMIDs where the set has them):

* ``standard``: the PubMedQA PQA-L test questions whose record carries a MeSH Neoplasms [C04] descriptor.
* ``narrative``: the same questions rewritten as patient narratives with the CoMeta paper's prompt (A.6),
  committed in ``eval/fixtures/pubmedqa_cancer_narratives.jsonl``.
* ``handwritten``: hand-written narratives (``eval/fixtures/handwritten_narratives.jsonl``), Hit0 only.
* any JSONL file of ``{"question": ..., "pmids": [...]}`` lines (``--questions``).

Systems: *raw E-utilities* sends the (PHI-scrubbed) text straight to ESearch, as a user of E-utilities
would; *Adapt-E* runs the Understand stage then the Boolean ladder; *dense* is the semantic arm alone on
the rewritten question; *hybrid* is what ``cometa search`` returns: both arms fused by RRF, fetched and
filtered by the metadata policy. Adapt-E and hybrid run once per rewriter (deterministic; LLM with
``--llm``). Metrics: Hit0 (share of questions with nothing retrieved), Hit@10, MRR@10, Recall@10.
Everything goes through the same ``app.pipeline.Pipeline`` code as ``/ask``, against the local
E-utilities server over the bundled corpus.

    python -m eval.retrieval [--sets standard narrative handwritten FILE.jsonl] [--limit N] [--llm embedded]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import Progress

from app.pipeline import Pipeline
from llm import LLMSettings, build_llm
from retrieval import EutilsClient, EutilsError
from retrieval._phi import scrub

__all__ = [
    "EvalItem",
    "SystemScore",
    "evaluate",
    "load_items",
    "markdown_table",
    "raw_term",
    "run_retrieval_eval",
    "score_ranking",
]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_SYNTAX = re.compile(r'["\[\]()*#]|\b(?:AND|OR|NOT)\b')
_PLACEHOLDER = re.compile(r"\[[A-Z>0-9]+\]")


@dataclass(frozen=True)
class EvalItem:
    id: str
    text: str
    gold: tuple[str, ...]


@dataclass
class SystemScore:
    system: str
    query_set: str
    n: int
    hit0: float  # share of questions whose search returned nothing at all
    hit10: float | None  # share with a gold PMID in the top 10 (None: no gold in this set)
    mrr10: float | None
    recall10: float | None
    mean_tiers: float
    mean_calls: float
    latency_ms_p50: float
    per_item: list[dict[str, Any]] = field(default_factory=list, repr=False)


def load_items(query_set: str, limit: int | None = None) -> list[EvalItem]:
    """``standard`` / ``narrative`` / ``handwritten`` or a path to a JSONL question file."""
    if query_set in {"standard", "narrative"}:
        rows = _read_jsonl(FIXTURES / "pubmedqa_cancer_narratives.jsonl")
        key = "question" if query_set == "standard" else "narrative"
        items = [EvalItem(r["id"], r[key], tuple(str(p) for p in r["pmids"])) for r in rows]
    elif query_set == "handwritten":
        rows = _read_jsonl(FIXTURES / "handwritten_narratives.jsonl")
        items = [EvalItem(r["id"], r["narrative"], ()) for r in rows]
    else:
        rows = _read_jsonl(Path(query_set))
        items = [
            EvalItem(str(r.get("id", i)), r["question"], tuple(str(p) for p in r.get("pmids", [])))
            for i, r in enumerate(rows)
        ]
    return items[:limit] if limit else items


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score_ranking(ranked: Sequence[str], gold: Sequence[str], k: int = 10) -> tuple[float, float, float]:
    """(hit@k, reciprocal rank within k, recall@k) for one question."""
    top = list(ranked[:k])
    gold_set = set(gold)
    ranks = [i for i, pmid in enumerate(top, start=1) if pmid in gold_set]
    hit = 1.0 if ranks else 0.0
    rr = 1.0 / ranks[0] if ranks else 0.0
    recall = len({p for p in top if p in gold_set}) / len(gold_set) if gold_set else 0.0
    return hit, rr, recall


def raw_term(text: str) -> str:
    """What a user pasting the question into E-utilities sends, minus PHI and characters that are syntax."""
    cleaned = _PLACEHOLDER.sub(" ", scrub(text).text)
    return " ".join(_SYNTAX.sub(" ", cleaned).split())


async def _run_raw(client: EutilsClient, item: EvalItem) -> dict[str, Any]:
    started = time.perf_counter()
    term = raw_term(item.text)
    try:
        result = await client.esearch(term, retmax=10, sort="relevance") if term else None
        ranked = list(result.ids) if result else []
        count = result.count if result else 0
    except EutilsError:
        ranked, count = [], 0
    elapsed = (time.perf_counter() - started) * 1000
    return {"ranked": ranked, "count": count, "tiers": 1, "calls": 1, "ms": elapsed}


async def _run_pipeline(pipeline: Pipeline, item: EvalItem) -> dict[str, dict[str, Any]]:
    """One item through Understand + retrieve; rows for the Adapt-E, dense and hybrid systems."""
    started = time.perf_counter()
    understanding = await pipeline.understander.understand(item.text)
    outcome = await pipeline.retrieve(understanding)
    ms = (time.perf_counter() - started) * 1000
    tiers = len(outcome.adapte.tiers)
    common = {"path": understanding.path, "fallback_reason": understanding.fallback_reason, "ms": ms}
    return {
        "adapte": {"ranked": list(outcome.adapte.pmids), "tiers": tiers, "calls": tiers, **common},
        "dense": {"ranked": [h.pmid for h in outcome.dense], "tiers": 0, "calls": 0, **common},
        "hybrid": {
            "ranked": outcome.pmids,
            "tiers": tiers,
            "calls": tiers + 1,  # + the one batched EFetch
            "ladder": understanding.plan.ladder,
            **common,
        },
    }


async def run_retrieval_eval(
    pipelines: Mapping[str, Pipeline],
    query_sets: Sequence[str],
    *,
    limit: int | None = None,
    progress: bool = True,
) -> list[SystemScore]:
    """``pipelines``: rewriter label -> Pipeline (e.g. ``{"deterministic": ..., "LLM: gemma": ...}``)."""
    first = next(iter(pipelines.values()))
    scores: list[SystemScore] = []
    with Progress(disable=not progress, transient=True) as bar:
        for query_set in query_sets:
            items = load_items(query_set, limit)
            has_gold = any(i.gold for i in items)
            columns: dict[str, list[dict[str, Any]]] = {"raw E-utilities": []}
            task = bar.add_task(f"{query_set} · raw", total=len(items))
            for item in items:
                columns["raw E-utilities"].append(await _run_raw(first.client, item))
                bar.advance(task)
            for label, pipeline in pipelines.items():
                task = bar.add_task(f"{query_set} · {label}", total=len(items))
                for item in items:
                    by_system = await _run_pipeline(pipeline, item)
                    columns.setdefault(f"Adapt-E ({label})", []).append(by_system["adapte"])
                    if pipeline is first:
                        columns.setdefault(f"dense ({_dense_name(pipeline)})", []).append(by_system["dense"])
                    columns.setdefault(f"hybrid ({label})", []).append(by_system["hybrid"])
                    bar.advance(task)
            for system, rows in columns.items():
                for item, row in zip(items, rows, strict=True):
                    row["id"] = item.id
                    if item.gold:
                        row["hit10"], row["rr10"], row["recall10"] = score_ranking(row["ranked"], item.gold)
                scores.append(_aggregate(system, query_set, rows, has_gold=has_gold))
    return scores


def _dense_name(pipeline: Pipeline) -> str:
    d = pipeline.settings.dense
    return "MedCPT" if d.encoder == "medcpt" else (d.st_model or "MiniLM-L6")


def _aggregate(system: str, query_set: str, rows: list[dict[str, Any]], *, has_gold: bool) -> SystemScore:
    n = len(rows)

    def mean(key: str) -> float:
        return sum(float(r[key]) for r in rows) / n if n else 0.0

    return SystemScore(
        system=system,
        query_set=query_set,
        n=n,
        hit0=sum(1 for r in rows if not r["ranked"]) / n if n else 0.0,
        hit10=mean("hit10") if has_gold else None,
        mrr10=mean("rr10") if has_gold else None,
        recall10=mean("recall10") if has_gold else None,
        mean_tiers=mean("tiers"),
        mean_calls=mean("calls"),
        latency_ms_p50=statistics.median(r["ms"] for r in rows) if rows else 0.0,
        per_item=rows,
    )


def markdown_table(scores: Sequence[SystemScore]) -> str:
    def pct(v: float | None) -> str:
        return "—" if v is None else f"{100 * v:.1f}"

    lines = [
        "| query set | system | n | Hit0 % | Hit@10 % | MRR@10 | Recall@10 % | tiers/q | p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        mrr = "—" if s.mrr10 is None else f"{s.mrr10:.3f}"
        lines.append(
            f"| {s.query_set} | {s.system} | {s.n} | {pct(s.hit0)} | {pct(s.hit10)} | {mrr} | "
            f"{pct(s.recall10)} | {s.mean_tiers:.2f} | {s.latency_ms_p50:.1f} |"
        )
    return "\n".join(lines)


def save(scores: Sequence[SystemScore], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "retrieval.json").write_text(
        json.dumps([asdict(s) for s in scores], indent=1), encoding="utf-8"
    )
    (out_dir / "retrieval.md").write_text(markdown_table(scores) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - thin CLI wrapper
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", nargs="+", default=["standard", "narrative", "handwritten"])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--llm", choices=["none", "embedded", "openai"], default="none", help="add the LLM rewriter rows"
    )
    args = parser.parse_args(argv)
    scores = asyncio.run(evaluate(args.sets, llm_backend=args.llm, limit=args.limit))
    print(markdown_table(scores))
    if args.out:
        save(scores, args.out)


async def evaluate(
    query_sets: Sequence[str], *, llm_backend: str = "none", limit: int | None = None
) -> list[SystemScore]:
    """The offline-default pipelines (bundled corpus, MiniLM dense arm), deterministic and optionally LLM."""
    from app.settings import Settings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # offline run: never wait on a hub lookup
    settings = Settings().offline()
    det = Pipeline(settings, use_llm=False)
    pipelines: dict[str, Pipeline] = {"deterministic": det}
    llm = build_llm(LLMSettings.model_validate({"backend": llm_backend}))
    if llm is not None:
        pipelines[f"LLM: {llm.model_name}"] = Pipeline(
            settings, client=det.client, llm=llm, dense=await det.dense_retriever()
        )
    try:
        return await run_retrieval_eval(pipelines, query_sets, limit=limit)
    finally:
        await det.aclose()
        if llm is not None:
            await llm.aclose()


if __name__ == "__main__":  # pragma: no cover
    main()

"""Retrieval ablation (CoMeta Tables 1/5): raw E-utilities vs Adapt-E vs dense vs hybrid, one table.

Query sets (gold PMIDs where the set has them):

* ``standard``: the PubMedQA PQA-L test questions whose record carries a MeSH Neoplasms [C04] descriptor.
* ``narrative``: the same questions rewritten as patient narratives with the CoMeta paper's prompt (A.6),
  committed in ``eval/fixtures/pubmedqa_cancer_narratives.jsonl``.
* ``handwritten``: hand-written narratives (``eval/fixtures/handwritten_narratives.jsonl``), Hit0 only.
* the world's gold sets (:mod:`eval.gold`, built by ``cometa eval build-gold``): ``cohen-topic``,
  ``cohen-narrative``, ``ei``, ``unanswerable`` (no gold: Hit0 only), each optionally one split
  (``ei@dev``, ``unanswerable@test``). Their gold PMIDs are in the world corpus, not the bundled one.
* any JSONL file of ``{"question": ..., "pmids": [...]}`` lines (``--questions``).

Systems: *raw E-utilities* sends the (PHI-scrubbed) text straight to ESearch, as a user of E-utilities
would; *Adapt-E* runs the Understand stage then the Boolean ladder; *dense* is the semantic arm alone on
the rewritten question; *hybrid* is what ``cometa search`` returns: both arms fused by RRF, fetched and
filtered by the metadata policy. Adapt-E and hybrid run once per rewriter (deterministic; LLM with
``--llm``). Metrics: Hit0 (share of questions with nothing retrieved), Hit@10, MRR@10, Recall@10 and
Recall@50 (each system's top 50: raw ESearch asks for 50, Adapt-E keeps up to ``retmax`` per tier, the dense
arm its ``top_k``, hybrid the fused, fetched and filtered list). On ``cohen-topic`` the gold is every final
include of the review, so Recall@50 is the share of the review's included studies in the top 50.
Everything goes through the same ``app.pipeline.Pipeline`` code as ``/ask``, against the local
E-utilities server over the bundled corpus.

    cometa eval retrieval [--subsets standard,narrative,handwritten,cohen-narrative,ei@test,FILE.jsonl]
                          [--limit N] [--llm embedded]
    python -m eval.retrieval [--sets standard narrative handwritten FILE.jsonl] [--limit N] [--llm embedded]

Both run :func:`run_retrieval` and write ``result.json``, ``report.md`` and Hit@10/Hit0 bar plots; a killed
run resumes from its ``items.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app import Pipeline, build_pipeline
from core import OnProgress
from llm import LLMSettings, build_llm
from retrieval import EutilsClient, EutilsError
from retrieval.understand import scrub

from ._runner import (
    ITEMS_FILE,
    EvalInputError,
    ItemLog,
    Plot,
    RunOptions,
    StageTimes,
    SuiteResult,
    Table,
    check_run_dir,
    default_out_dir,
    eval_settings,
    progress,
    run_metadata,
    select_items,
    write_result,
)
from .gold import GOLD_SETS, load_gold

__all__ = [
    "EvalItem",
    "SystemScore",
    "evaluate",
    "load_items",
    "markdown_table",
    "raw_term",
    "recall_at",
    "results_table",
    "run_retrieval",
    "run_retrieval_eval",
    "score_ranking",
    "scores_from_records",
]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DEPTH = 50  # ranks kept per system and question: Recall@50
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
    recall50: float | None  # None also for records written before Recall@50 existed (a resumed old run)
    mean_tiers: float
    mean_calls: float
    latency_ms_p50: float
    per_item: list[dict[str, Any]] = field(default_factory=list, repr=False)


def load_items(query_set: str, limit: int | None = None) -> list[EvalItem]:
    """``standard`` / ``narrative`` / ``handwritten``, a gold set of :data:`eval.gold.GOLD_SETS` (``NAME`` or
    ``NAME@dev|test``) or a path to a JSONL question file."""
    name, _, split = query_set.partition("@")
    if name in GOLD_SETS:
        rows = load_gold(name, split or None)
        items = [EvalItem(r["id"], r["question"], tuple(str(p) for p in r["pmids"])) for r in rows]
    elif query_set in {"standard", "narrative"}:
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
    """(hit@k, reciprocal rank within k, recall@k) for one question; :func:`recall_at` for another depth."""
    top = list(ranked[:k])
    gold_set = set(gold)
    ranks = [i for i, pmid in enumerate(top, start=1) if pmid in gold_set]
    hit = 1.0 if ranks else 0.0
    rr = 1.0 / ranks[0] if ranks else 0.0
    recall = len({p for p in top if p in gold_set}) / len(gold_set) if gold_set else 0.0
    return hit, rr, recall


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of the gold PMIDs in the top ``k`` (0 without gold)."""
    gold_set = set(gold)
    return len(gold_set.intersection(ranked[:k])) / len(gold_set) if gold_set else 0.0


def raw_term(text: str) -> str:
    """What a user pasting the question into E-utilities sends, minus PHI and characters that are syntax."""
    cleaned = _PLACEHOLDER.sub(" ", scrub(text).text)
    return " ".join(_SYNTAX.sub(" ", cleaned).split())


async def _run_raw(client: EutilsClient, item: EvalItem) -> dict[str, Any]:
    started = time.perf_counter()
    term = raw_term(item.text)
    try:
        result = await client.esearch(term, retmax=DEPTH, sort="relevance") if term else None
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
    understand_ms = (time.perf_counter() - started) * 1000
    outcome = await pipeline.retrieve(understanding)
    ms = (time.perf_counter() - started) * 1000
    tiers = len(outcome.adapte.tiers)
    common = {"path": understanding.path, "fallback_reason": understanding.fallback_reason, "ms": ms}
    stages = {
        "understand": round(understand_ms, 2),
        **{k: round(v, 2) for k, v in outcome.timings_ms.items()},
    }
    tokens = understanding.prompt_tokens + understanding.completion_tokens
    return {
        "adapte": {"ranked": list(outcome.adapte.pmids), "tiers": tiers, "calls": tiers, **common},
        "dense": {"ranked": [h.pmid for h in outcome.dense], "tiers": 0, "calls": 0, **common},
        "hybrid": {
            "ranked": outcome.pmids,
            "tiers": tiers,
            # Requests actually sent (ESearch tiers, EFetch, ELink, PMC EFetch; cache hits send none).
            "calls": outcome.eutils.total_calls if outcome.eutils is not None else tiers + 1,
            "ladder": understanding.plan.ladder,
            "stages_ms": stages,
            "tokens": tokens,
            **common,
        },
    }


async def _item_record(pipelines: Mapping[str, Pipeline], query_set: str, item: EvalItem) -> dict[str, Any]:
    """Every system on one item: ``{"key", "set", "id", "systems": {name: row}}``, rows scored."""
    first = next(iter(pipelines.values()))
    systems: dict[str, dict[str, Any]] = {"raw E-utilities": await _run_raw(first.client, item)}
    for label, pipeline in pipelines.items():
        by_system = await _run_pipeline(pipeline, item)
        systems[f"Adapt-E ({label})"] = by_system["adapte"]
        if pipeline is first:
            systems[f"dense ({_dense_name(pipeline)})"] = by_system["dense"]
        systems[f"hybrid ({label})"] = by_system["hybrid"]
    for row in systems.values():
        row["ranked"] = [str(p) for p in row["ranked"][:DEPTH]]  # scores look at the top 50 at most
        if item.gold:
            row["hit10"], row["rr10"], row["recall10"] = score_ranking(row["ranked"], item.gold)
            row["recall50"] = recall_at(row["ranked"], item.gold, DEPTH)
    return {
        "key": f"{query_set}:{item.id}",
        "set": query_set,
        "id": item.id,
        "gold": bool(item.gold),
        "systems": systems,
    }


def scores_from_records(records: Sequence[Mapping[str, Any]]) -> list[SystemScore]:
    """Per (query set, system) aggregates, in first-seen order of sets and systems."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    gold_sets: set[str] = set()
    for record in records:
        if record.get("gold"):
            gold_sets.add(record["set"])
        for system, row in record["systems"].items():
            grouped.setdefault((record["set"], system), []).append({"id": record["id"], **row})
    return [
        _aggregate(system, query_set, rows, has_gold=query_set in gold_sets)
        for (query_set, system), rows in grouped.items()
    ]


async def run_retrieval_eval(
    pipelines: Mapping[str, Pipeline],
    query_sets: Sequence[str],
    *,
    limit: int | None = None,
    on_progress: OnProgress | None = None,
) -> list[SystemScore]:
    """``pipelines``: rewriter label -> Pipeline (e.g. ``{"deterministic": ..., "LLM: gemma": ...}``);
    ``on_progress(done, total)`` after each question."""
    records: list[dict[str, Any]] = []
    todo = [(query_set, item) for query_set in query_sets for item in load_items(query_set, limit)]
    for done, (query_set, item) in enumerate(todo, start=1):
        records.append(await _item_record(pipelines, query_set, item))
        if on_progress is not None:
            on_progress(done, len(todo))
    return scores_from_records(records)


def _dense_name(pipeline: Pipeline) -> str:
    d = pipeline.settings.dense
    return "MedCPT" if d.encoder == "medcpt" else (d.st_model or "MiniLM-L6")


def _aggregate(system: str, query_set: str, rows: list[dict[str, Any]], *, has_gold: bool) -> SystemScore:
    n = len(rows)

    def mean(key: str) -> float:
        return sum(float(r.get(key, 0.0)) for r in rows) / n if n else 0.0

    has_recall50 = has_gold and all("recall50" in r for r in rows)

    return SystemScore(
        system=system,
        query_set=query_set,
        n=n,
        hit0=sum(1 for r in rows if not r["ranked"]) / n if n else 0.0,
        hit10=mean("hit10") if has_gold else None,
        mrr10=mean("rr10") if has_gold else None,
        recall10=mean("recall10") if has_gold else None,
        recall50=mean("recall50") if has_recall50 else None,
        mean_tiers=mean("tiers"),
        mean_calls=mean("calls"),
        latency_ms_p50=statistics.median(r["ms"] for r in rows) if rows else 0.0,
        per_item=rows,
    )


def markdown_table(scores: Sequence[SystemScore]) -> str:
    return results_table(scores).markdown()


def results_table(scores: Sequence[SystemScore]) -> Table:
    """Hit0/Hit@10/Recall@10/Recall@50 in %, MRR@10 as a fraction; None (no gold in the set) prints as —."""

    def pct(v: float | None) -> str:
        return "—" if v is None else f"{100 * v:.1f}"

    rows: list[list[Any]] = [
        [
            s.query_set,
            s.system,
            s.n,
            pct(s.hit0),
            pct(s.hit10),
            "—" if s.mrr10 is None else f"{s.mrr10:.3f}",
            pct(s.recall10),
            pct(s.recall50),
            f"{s.mean_tiers:.2f}",
            f"{s.mean_calls:.2f}",
            f"{s.latency_ms_p50:.1f}",
        ]
        for s in scores
    ]
    header = [
        *("query set", "system", "n", "Hit0 %", "Hit@10 %", "MRR@10", "Recall@10 %", "Recall@50 %"),
        *("tiers/q", "calls/q", "p50 ms"),
    ]
    return Table("Retrieval ablation (CoMeta Tables 1/5)", header, rows)


DEFAULT_SETS = ("standard", "narrative", "handwritten")


async def _close_pipelines(pipelines: Mapping[str, Pipeline]) -> None:
    """The pipelines share the first one's E-utilities client and dense arm; each may own an LLM."""
    first = next(iter(pipelines.values()))
    for pipeline in pipelines.values():
        if pipeline is not first and pipeline.llm is not None:
            await pipeline.llm.aclose()
    await first.aclose()


async def _pipelines(opts: RunOptions) -> dict[str, Pipeline]:
    """The deterministic pipeline, plus an LLM-rewriter pipeline sharing its client and dense arm."""
    settings = eval_settings(opts)
    det = build_pipeline(settings, use_llm=False, use_passages=False)
    pipelines: dict[str, Pipeline] = {"deterministic": det}
    llm = build_llm(settings.llm)
    if llm is not None:
        pipelines[f"LLM: {llm.model_name}"] = build_pipeline(
            settings, client=det.client, llm=llm, dense=await det.dense_retriever(), use_passages=False
        )
    return pipelines


async def run_retrieval(opts: RunOptions) -> SuiteResult:
    """The suite behind ``cometa eval retrieval``: resumable per item (``items.jsonl``).

    ``opts.subsets``: query sets (default standard, narrative, handwritten; a JSONL path works too);
    ``opts.llm`` with a backend adds the LLM-rewriter rows.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # offline run: never wait on a hub lookup
    if opts.server_url:
        # The metrics need the pipeline's internals (per-arm rankings), which /ask does not expose.
        raise EvalInputError("retrieval runs in-process only; --server is for the answer suites (qa, medrgb)")
    query_sets = opts.subsets or DEFAULT_SETS
    planned: list[tuple[str, EvalItem]] = []
    for query_set in query_sets:
        try:
            items = load_items(query_set)
        except (OSError, KeyError, json.JSONDecodeError) as exc:
            raise EvalInputError(
                f"query set {query_set!r}: not one of {', '.join(DEFAULT_SETS + GOLD_SETS)} nor a readable "
                f'JSONL file of {{"question": ..., "pmids": [...]}} lines ({type(exc).__name__})'
            ) from exc
        planned += [(query_set, item) for item in select_items(items, opts.limit, opts.seed)]
    log = ItemLog(opts.out_dir / ITEMS_FILE, resume=opts.resume)
    done = log.done()
    todo = [(s, i) for s, i in planned if f"{s}:{i.id}" not in done]
    if todo:
        pipelines = await _pipelines(opts)
        try:
            with progress(len(todo), "retrieval") as advance:
                for query_set, item in todo:
                    log.append(await _item_record(pipelines, query_set, item))
                    advance(1)
        finally:
            await _close_pipelines(pipelines)
    records = log.done()
    ordered = [records[f"{s}:{i.id}"] for s, i in planned]
    return _suite_result(ordered, resumed=len(planned) - len(todo))


def _suite_result(records: Sequence[Mapping[str, Any]], *, resumed: int) -> SuiteResult:
    scores = scores_from_records(records)
    stage_times = StageTimes()
    for record in records:
        for system, row in record["systems"].items():
            if system == "raw E-utilities":
                stage_times.add("raw esearch", float(row["ms"]))
            elif system.startswith("hybrid ("):
                label = system[len("hybrid (") : -1]
                for stage, ms in (row.get("stages_ms") or {}).items():
                    stage_times.add(
                        f"{label}: {stage}",
                        float(ms),
                        int(row.get("tokens", 0)) if stage == "understand" else 0,
                    )
    sets = list(dict.fromkeys(s.query_set for s in scores))
    systems = list(dict.fromkeys(s.system for s in scores))
    by = {(s.query_set, s.system): s for s in scores}

    def series(attr: str, only_gold: bool) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for query_set in sets:
            values = [
                getattr(by[(query_set, sys)], attr) if (query_set, sys) in by else None for sys in systems
            ]
            if only_gold and all(v is None for v in values):
                continue
            out[query_set] = [100 * v if v is not None else 0.0 for v in values]
        return out

    plots = [
        Plot(
            "retrieval_hit10.png",
            "Hit@10 by system and query set",
            "bar",
            systems,
            series("hit10", True),
            "Hit@10 %",
        ),
        Plot(
            "retrieval_hit0.png",
            "Hit0 (nothing retrieved) by system and query set",
            "bar",
            systems,
            series("hit0", False),
            "Hit0 %",
        ),
    ]
    metrics = {
        f"{s.query_set}/{s.system}": {
            "n": s.n,
            "hit0": s.hit0,
            "hit10": s.hit10,
            "mrr10": s.mrr10,
            "recall10": s.recall10,
            "recall50": s.recall50,
            "mean_tiers": s.mean_tiers,
            "latency_ms_p50": s.latency_ms_p50,
        }
        for s in scores
    }
    notes = [
        "Hit0 = share of questions whose search returned nothing; Hit@10/MRR@10/Recall@10/Recall@50 against "
        "the gold PMIDs (— for a set without gold, e.g. handwritten narratives). On cohen-topic the gold is "
        "the review's included set, so Recall@10 is small by construction; Recall@50 is its coverage.",
        "p50 ms is per question for the whole pipeline call (Understand + both arms + fetch), shared by the "
        "Adapt-E, dense and hybrid rows of one rewriter.",
    ]
    if resumed:
        notes.append(f"{resumed} item(s) were read back from an earlier partial run (items.jsonl).")
    return SuiteResult("retrieval", metrics, [results_table(scores)], plots, notes, stage_times)


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - thin CLI wrapper
    """``python -m eval.retrieval``: the same suite as ``cometa eval retrieval``."""
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", nargs="+", default=list(DEFAULT_SETS))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--llm", choices=["none", "embedded", "openai"], default=None, help="add the LLM rewriter rows"
    )
    args = parser.parse_args(argv)
    llm = LLMSettings.model_validate({"backend": args.llm}) if args.llm else None
    opts = RunOptions(out_dir=Path("."), limit=args.limit, subsets=tuple(args.sets), llm=llm)
    opts = replace(opts, out_dir=args.out or default_out_dir("retrieval", opts))
    metadata = run_metadata("retrieval", opts)
    check_run_dir(opts, metadata)
    result = asyncio.run(run_retrieval(opts))
    print(result.tables[0].markdown())
    for path in write_result(result, opts, metadata):
        print(path)


async def evaluate(
    query_sets: Sequence[str], *, llm_backend: str = "none", limit: int | None = None
) -> list[SystemScore]:
    """The offline-default pipelines (bundled corpus, MiniLM dense arm), deterministic and optionally LLM."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    opts = RunOptions(out_dir=Path("."), llm=LLMSettings.model_validate({"backend": llm_backend}))
    pipelines = await _pipelines(opts)
    try:
        return await run_retrieval_eval(pipelines, query_sets, limit=limit)
    finally:
        await _close_pipelines(pipelines)


if __name__ == "__main__":  # pragma: no cover
    main()

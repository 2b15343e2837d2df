"""``cometa eval chunking`` / ``python -m eval.chunking``: the suite run, its report and its command line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from core import Encoder, Reranker, TokenCounter
from retrieval.embed import BI_ENCODER, RerankSettings, SentenceTransformerEncoder, load_reranker
from segmentation import Segmenter

from .._runner import (
    ITEMS_FILE,
    EvalInputError,
    ItemLog,
    Plot,
    RunOptions,
    StageTimes,
    SuiteResult,
    check_run_dir,
    default_out_dir,
    eval_settings,
    progress,
    run_metadata,
    select_items,
    write_result,
)
from ._core import (
    ABSTRACTS_ONLY,
    CANDIDATES,
    SCOPES,
    SEGMENTERS,
    EvalDoc,
    GoldQuery,
    K,
    Row,
    build_segmenters,
    evaluate_segmenter,
    results_table,
)
from ._fixture import load_eval_corpus, load_queries
from ._world import EI_SOURCES, load_ei_queries, load_world_docs

__all__ = ["DEPTHS", "SOURCES", "Models", "main", "run_chunking"]

SOURCES = ("fixture", *EI_SOURCES)
DEPTHS = ("fulltext", "abstract", "both")
_PARAMS = ("reranker", "max_length", "source", "depth", "scope")

Models = Callable[[Mapping[str, Any]], tuple[Encoder, TokenCounter, Reranker | None]]


def _encoder_and_reranker(params: Mapping[str, Any]) -> tuple[Encoder, TokenCounter, Reranker | None]:
    from segmentation import counter_for

    max_length = params.get("max_length", 512)
    if not isinstance(max_length, int) or max_length < 8:
        raise EvalInputError(f"max_length must be an integer >= 8, got {max_length!r}")
    name = str(params.get("reranker", BI_ENCODER))
    encoder = SentenceTransformerEncoder(None, max_length=max_length, device="cpu")
    counter = counter_for(encoder)
    reranker = None if name == "none" else load_reranker(RerankSettings(model=name), encoder=encoder)
    return encoder, counter, reranker


def _choice(params: Mapping[str, Any], key: str, allowed: Sequence[str], default: str) -> str:
    value = str(params.get(key, default))
    if value not in allowed:
        raise EvalInputError(f"{key} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _plan(opts: RunOptions) -> tuple[str, str, tuple[str, ...], list[str]]:
    """(source, depth, scopes, row names) from the options, every input checked before anything loads."""
    unknown_params = sorted(set(opts.params) - set(_PARAMS))
    if unknown_params:
        raise EvalInputError(f"unknown chunking params {unknown_params}; known: {', '.join(_PARAMS)}")
    source = _choice(opts.params, "source", SOURCES, "fixture")
    depth = _choice(opts.params, "depth", DEPTHS, "fulltext")
    # The fixture's pool is one shared corpus (its historical table); an Evidence Inference question is
    # asked of its own article (the passage stage after document retrieval) and of the pool of articles.
    scope = _choice(opts.params, "scope", (*SCOPES, "both"), "pool" if source == "fixture" else "both")
    scopes = SCOPES if scope == "both" else (scope,)
    names = list(opts.subsets or SEGMENTERS)
    bad = [n for n in names if n not in SEGMENTERS]
    if bad:
        raise EvalInputError(f"unknown segmenters {bad}; choose from {', '.join(SEGMENTERS)}")
    if depth == "abstract":
        names = [ABSTRACTS_ONLY]
    elif depth == "both":
        names = [ABSTRACTS_ONLY, *names]
    return source, depth, scopes, names


def _load(
    source: str, opts: RunOptions, queries: Sequence[GoldQuery] | None = None
) -> tuple[list[GoldQuery], list[EvalDoc] | None, str]:
    """The (sampled) queries, their documents when asked for (``queries`` given), and a description."""
    if source == "fixture":
        if queries is None:
            return select_items(load_queries(), opts.limit, opts.seed), None, ""
        return list(queries), load_eval_corpus(queries), "the committed fixture over the bundled corpus"
    world = eval_settings(opts).local_server.corpus_dir
    if world is None:  # checked before the gold set is read and the models load
        raise EvalInputError(
            f"source={source} reads the world's PMC full texts: set COMETA_LOCAL_SERVER__CORPUS_DIR to a "
            "folder built by `cometa corpus build`"
        )
    if queries is None:
        return select_items(load_ei_queries(source), opts.limit, opts.seed), None, ""
    docs = load_world_docs(world, queries)
    return list(queries), docs, f"Evidence Inference ({source}) over the world's PMC full texts in {world}"


async def run_chunking(opts: RunOptions, *, models: Models | None = None) -> SuiteResult:
    """``cometa eval chunking``: resumable per segmenter (``items.jsonl`` holds one record per segmenter).

    ``opts.subsets``: segmenter names (default all :data:`SEGMENTERS`); ``opts.limit``: a seeded sample of
    the queries; ``opts.params``: ``reranker`` ('bi-encoder', 'none', a hub id or folder), ``max_length``,
    ``source`` (:data:`SOURCES`), ``depth`` (:data:`DEPTHS`: ``abstract`` = the abstracts-only row alone,
    ``both`` = that row then the segmenters), ``scope`` (``pool``, ``article`` or ``both``). ``models``
    replaces the encoder/reranker loader (tests).
    """
    if opts.server_url:
        # The metrics need the pipeline's internals (per-arm rankings), which /ask does not expose.
        raise EvalInputError("chunking runs in-process only; --server is for the answer suites (qa, medrgb)")
    source, depth, scopes, names = _plan(opts)
    queries, _, _ = _load(source, opts)
    log = ItemLog(opts.out_dir / ITEMS_FILE, resume=opts.resume)
    todo = [n for n in names if n not in log.done()]
    if todo:
        encoder, counter, reranker = await asyncio.to_thread(models or _encoder_and_reranker, opts.params)
        _, docs, described = await asyncio.to_thread(_load, source, opts, queries)
        assert docs is not None
        segmenters: dict[str, Segmenter | None] = {ABSTRACTS_ONLY: None} if ABSTRACTS_ONLY in todo else {}
        segmenters.update(build_segmenters(encoder, counter, [n for n in todo if n != ABSTRACTS_ONLY]))
        meta = {
            "documents": len(docs),
            "source": described,
            "encoder": encoder.name,
            "reranker": reranker.name if reranker else None,
            "rerank_note": reranker.note if reranker else None,
        }
        with progress(len(todo), "chunking") as advance:
            for name in todo:
                timings: dict[str, float] = {}
                rows = await asyncio.to_thread(
                    evaluate_segmenter,
                    name,
                    segmenters[name],
                    docs,
                    queries,
                    encoder,
                    counter,
                    reranker,
                    timings,
                    scopes,
                )
                log.append(
                    {
                        "key": name,
                        "rows": [asdict(r) for r in rows],
                        "timings_s": {k: round(v, 3) for k, v in timings.items()},
                        **meta,
                    }
                )
                advance(1)
    done = log.done()
    records = [done[n] for n in names]
    rows = [Row(**r) for rec in records for r in rec["rows"]]
    return _result(rows, records, names, scopes, queries, opts, depth, resumed=len(names) - len(todo))


def _result(
    rows: Sequence[Row],
    records: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    scopes: Sequence[str],
    queries: Sequence[GoldQuery],
    opts: RunOptions,
    depth: str,
    *,
    resumed: int,
) -> SuiteResult:
    stage_times = StageTimes()
    for rec in records:
        for stage, seconds in rec.get("timings_s", {}).items():
            stage_times.add(stage, 1000 * float(seconds))
    first = records[0] if records else {}
    in_abstract = sum(1 for q in queries if q.unit == "abstract")
    notes = [
        f"{len(queries)} queries over {first.get('documents', '?')} documents "
        f"({first.get('source') or 'the committed fixture over the bundled corpus'}); encoder "
        f"{first.get('encoder', '?')} (max length {opts.params.get('max_length', 512)}); reranker "
        f"{first.get('reranker')} ({first.get('rerank_note') or 'as configured'}).",
        "Hit@5 / MRR@5 in %: a passage is a hit when it holds at least half of the gold span's characters "
        f"in the gold unit (k={K}, rerank candidates={CANDIDATES}).",
        f"{in_abstract} of {len(queries)} gold spans lie in the abstract: the most an abstracts-only "
        f"context (depth=abstract) can find is {100 * in_abstract / max(1, len(queries)):.1f} %.",
        "Scopes: 'pool' ranks every passage of every document; 'article' only the gold article's passages.",
        "Stage times are per segmenter: 'segment' builds the passage pool, the others rank all queries.",
    ]
    if depth != "fulltext":
        notes.append(f"depth={depth}: the '{ABSTRACTS_ONLY}' row puts no body section in the pool.")
    if resumed:
        notes.append(f"{resumed} segmenter(s) were read back from an earlier partial run.")
    retrievers = list(dict.fromkeys(r.retriever for r in rows))
    by = {(r.segmenter, r.retriever, r.scope): r for r in rows}
    tables, plots = [], []
    for scope in scopes:
        mine = [r for r in rows if r.scope == scope]
        where = "within the gold article" if scope == "article" else "over the whole pool"
        tables.append(
            results_table(mine, f"Passage retrieval by segmentation strategy, {where} (CoMeta Table 3)")
        )
        prefix = "chunking_" if scope == "pool" else f"chunking_{scope}_"
        for metric, label in (("hit_at_5", "Hit@5"), ("mrr_at_5", "MRR@5")):
            series = {ret: [100 * getattr(by[(n, ret, scope)], metric) for n in names] for ret in retrievers}
            plots.append(
                Plot(
                    f"{prefix}{metric}.png",
                    f"{label} by segmenter and retriever, {where}",
                    "bar",
                    list(names),
                    series,
                    f"{label} %",
                )
            )
    metrics = {
        f"{r.segmenter}/{r.retriever}" + ("" if r.scope == "pool" else f"@{r.scope}"): asdict(r) for r in rows
    }
    return SuiteResult("chunking", metrics, tables, plots, notes, stage_times)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m eval.chunking``: the same suite as ``cometa eval chunking``."""
    ap = argparse.ArgumentParser(prog="python -m eval.chunking", description="CoMeta Table 3 analogue")
    ap.add_argument("--out", type=Path, help="output folder (default var/eval/chunking-<config hash>)")
    ap.add_argument("--limit", type=int, help="a seeded sample of N queries")
    ap.add_argument("--segmenters", nargs="+", choices=SEGMENTERS, help="default: all")
    ap.add_argument(
        "--reranker", default=BI_ENCODER, help="'bi-encoder' (offline), 'none', a hub id or folder"
    )
    ap.add_argument("--max-length", type=int, default=512, help="dense encoder input limit (tokens)")
    ap.add_argument("--source", choices=SOURCES, default="fixture", help="query set (ei: the world's)")
    ap.add_argument("--depth", choices=DEPTHS, default="fulltext", help="abstracts only, full text or both")
    ap.add_argument("--scope", choices=(*SCOPES, "both"), help="default: pool (fixture), both (ei)")
    args = ap.parse_args(argv)
    params: dict[str, Any] = {
        "reranker": args.reranker,
        "max_length": args.max_length,
        "source": args.source,
        "depth": args.depth,
    }
    if args.scope:
        params["scope"] = args.scope
    opts = RunOptions(
        out_dir=Path("."), limit=args.limit, subsets=tuple(args.segmenters or ()), params=params
    )
    opts = replace(opts, out_dir=args.out or default_out_dir("chunking", opts))
    metadata = run_metadata("chunking", opts)
    check_run_dir(opts, metadata)
    result = asyncio.run(run_chunking(opts))
    for table in result.tables:
        print(table.markdown())
    for path in write_result(result, opts, metadata):
        print(path, file=sys.stderr)
    return 0

"""Passage retrieval by segmentation strategy (CoMeta Table 3, with Figure 4's Hit@5/MRR@5), one command.

    cometa eval chunking [--out DIR] [--limit N] [--subsets seos,fixed-512-0,...]
                         [--param reranker=bi-encoder|ncbi/MedCPT-Cross-Encoder|PATH] [--param max_length=512]
    python -m eval.chunking [--out DIR] [--limit N] [--segmenters seos fixed-512-0 ...]
                            [--reranker bi-encoder|ncbi/MedCPT-Cross-Encoder|PATH] [--max-length 512]

Both run :func:`run_chunking` and write ``result.json``, ``report.md`` and Hit@5/MRR@5 bar plots.

**Query set** (``eval/fixtures/passage_queries.jsonl``, 62 lines). Generated once from the shipped
corpus and committed: the 4 PMC full texts (``retrieval/corpus/pmc/*.xml`` parsed with
``retrieval.ncbi.parse_pmc_articles``: 51 questions, over body sections and their abstracts) and 11
PubMedQA abstracts (``retrieval/corpus/pubmed/pubmedqa_pqal.xml``). The questions were *written by the
development session's assistant LLM, one question per selected evidence sentence, gold = verbatim
span*: the model read each section sentence by sentence, picked an answer-bearing sentence (or clause),
copied it verbatim as ``gold`` and wrote a natural, patient-style question it answers, paraphrasing
rather than copying its words. Offsets were then computed mechanically: ``start`` is the position of
the (unique) occurrence of ``gold`` in the parsed text of the unit (``unit``: the section index in
``PmcArticle.sections``, or ``"abstract"`` for the abstract text), ``end = start + len(gold)``;
``tests/test_eval_chunking.py`` re-checks every span against the parser's output. Each line:
``{"id", "question", "doc_id", "unit", "heading", "start", "end", "gold", "generator"}``.

**Retrieval pool** (per query, so chunking matters): every passage of every document of the corpus
above plus the distractor abstracts in :data:`DISTRACTOR_PMIDS` (cancer-related PubMedQA abstracts):
abstracts are single passages (as in production, :mod:`retrieval.passages._passages`), body sections are
segmented by the segmenter under test.

**Hit rule**: a retrieved passage is a hit when it comes from the gold unit (same document, same
section or abstract) and contains at least half of the gold span's characters
(``overlap(passage, gold) >= 0.5 * len(gold)``, offsets in the unit text). Hit@5: share of queries with
a hit in the top 5; MRR@5: mean of 1/rank of the first hit in the top 5 (0 without one).

**Systems**: segmenters SEOS, fixed 512 tokens with overlap 0/32/128, sentence window (3 sentences),
TextTiling; retrievers BM25 (``bm25s``, English stopwords), dense (the offline encoder: the bundled
all-MiniLM-L6-v2, ``max_length`` 512 so "512-token" chunks are encoded whole) and dense+rerank (dense
top-30 reranked; offline this is the bi-encoder fallback — the same encoder, so it can only reorder
ties — unless ``--reranker`` names a cross-encoder that can load). Token counts use the encoder's own
tokenizer.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from core import Encoder, Reranker, TokenCounter
from retrieval.embed import BI_ENCODER, RerankSettings, SentenceTransformerEncoder, load_reranker
from retrieval.ncbi import iter_pubmed_articles, parse_pmc_articles
from segmentation import Segmenter, SourceSection, SourceText

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
    progress,
    run_metadata,
    select_items,
    write_result,
)

__all__ = [
    "DISTRACTOR_PMIDS",
    "FIXTURE",
    "HIT_OVERLAP",
    "SEGMENTERS",
    "EvalDoc",
    "GoldQuery",
    "Passage",
    "Row",
    "bm25_rankings",
    "build_passages",
    "build_segmenters",
    "dense_rankings",
    "evaluate",
    "evaluate_segmenter",
    "hit_and_rr",
    "is_hit",
    "load_eval_corpus",
    "load_queries",
    "main",
    "markdown_table",
    "rerank_rankings",
    "results_table",
    "run_chunking",
]

FIXTURE = Path(__file__).parent / "fixtures" / "passage_queries.jsonl"
_CORPUS = Path(__file__).resolve().parent.parent / "retrieval" / "corpus"
HIT_OVERLAP = 0.5
K = 5
CANDIDATES = 30

# Cancer-related PubMedQA abstracts under 1,800 characters, in file order: the abstract-side distractors.
DISTRACTOR_PMIDS: tuple[str, ...] = tuple(
    (
        "8165771 8738894 8847047 9191526 9278754 9427037 9569972 9582182 9616411 9745063 10781708 10927144 "
        "11034241 11296674 11759976 11799314 11888773 11955750 12090319 12095973 12607120 12630042 12769830 "
        "12913878 12947068 14599616 14692023 14713788 15065192 15466981 15483019 15528969 15530261 15597845 "
        "15708048 16776337 16909975 16968876 17008699 17054994"
    ).split()
)

Unit = int | Literal["abstract"]


@dataclass(frozen=True, slots=True)
class GoldQuery:
    id: str
    question: str
    doc_id: str
    unit: Unit
    heading: str
    start: int
    end: int
    gold: str


@dataclass(frozen=True, slots=True)
class EvalDoc:
    doc_id: str  # "PMC..." for full texts, "PMID:..." for abstracts
    abstract: str
    sections: tuple[SourceSection, ...]  # index = PmcArticle.sections index (the fixture's ``unit``)


@dataclass(frozen=True, slots=True)
class Passage:
    doc_id: str
    unit: Unit
    start: int
    end: int
    text: str
    token_count: int


@dataclass(frozen=True, slots=True)
class Row:
    segmenter: str
    retriever: str
    hit_at_5: float
    mrr_at_5: float
    chunks: int  # passages in the pool (section chunks + abstracts)
    section_chunks: int
    mean_chunk_tokens: float  # over section chunks
    queries: int


def load_queries(path: Path = FIXTURE) -> list[GoldQuery]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        o = json.loads(line)
        unit: Unit = "abstract" if o["unit"] == "abstract" else int(o["unit"])
        out.append(
            GoldQuery(
                o["id"], o["question"], o["doc_id"], unit, o["heading"], o["start"], o["end"], o["gold"]
            )
        )
    return out


def load_eval_corpus(
    queries: Sequence[GoldQuery] = (), distractors: Sequence[str] = DISTRACTOR_PMIDS, corpus: Path = _CORPUS
) -> list[EvalDoc]:
    """The 4 PMC full texts, then the PubMedQA abstracts the queries or the distractor list name."""
    docs: list[EvalDoc] = []
    for path in sorted((corpus / "pmc").glob("*.xml")):
        for art in parse_pmc_articles(path.read_bytes()):
            sections = tuple(
                SourceSection(s.text, s.heading, tuple(h for h in (*s.path, s.heading) if h.strip()))
                for s in art.sections
            )
            docs.append(EvalDoc(art.pmcid, art.abstract_text, sections))
    wanted = {q.doc_id for q in queries if q.doc_id.startswith("PMID:")} | {f"PMID:{p}" for p in distractors}
    for rec in iter_pubmed_articles(corpus / "pubmed" / "pubmedqa_pqal.xml"):
        key = f"PMID:{rec.pmid}"
        if key in wanted and rec.abstract_text.strip():
            docs.append(EvalDoc(key, rec.abstract_text, ()))
            wanted.discard(key)
    return docs


def build_passages(segmenter: Segmenter, docs: Sequence[EvalDoc], counter: TokenCounter) -> list[Passage]:
    """Abstracts whole; body sections through ``segmenter`` (one SourceText per document)."""
    out: list[Passage] = []
    for d in docs:
        if d.abstract.strip():
            out.append(
                Passage(d.doc_id, "abstract", 0, len(d.abstract), d.abstract, counter.count(d.abstract))
            )
        if d.sections:
            for c in segmenter.segment(SourceText(d.doc_id, d.sections)):
                out.append(Passage(d.doc_id, c.section_index, c.start, c.end, c.text, c.token_count))
    return out


def is_hit(p: Passage, q: GoldQuery, threshold: float = HIT_OVERLAP) -> bool:
    if p.doc_id != q.doc_id or p.unit != q.unit:
        return False
    overlap = min(p.end, q.end) - max(p.start, q.start)
    return overlap > 0 and overlap >= threshold * (q.end - q.start)


def hit_and_rr(ranked: Sequence[Passage], q: GoldQuery, k: int = K) -> tuple[bool, float]:
    for rank, p in enumerate(ranked[:k], start=1):
        if is_hit(p, q):
            return True, 1.0 / rank
    return False, 0.0


def _top(scores: Sequence[float] | np.ndarray, k: int) -> list[int]:
    # Ties broken by pool order so every run ranks identically.
    return sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))[:k]


def bm25_rankings(passages: Sequence[Passage], questions: Sequence[str], k: int = K) -> list[list[int]]:
    bm25s: Any = importlib.import_module("bm25s")  # untyped library: one dynamic import, no mypy override
    index = bm25s.BM25()
    index.index(
        bm25s.tokenize([p.text for p in passages], stopwords="en", show_progress=False), show_progress=False
    )
    # String tokens (not ids): get_scores maps them through the index's own vocabulary.
    tokens = bm25s.tokenize(list(questions), stopwords="en", return_ids=False, show_progress=False)
    return [_top(index.get_scores(list(t)), k) for t in tokens]


def dense_rankings(
    encoder: Encoder, passages: Sequence[Passage], questions: Sequence[str], k: int = K
) -> tuple[list[list[int]], np.ndarray]:
    """Top-k passage indexes per question, and the full (questions x passages) inner-product matrix."""
    docs = encoder.encode_documents([("", p.text) for p in passages], batch_size=32)
    qs = encoder.encode_queries(list(questions), batch_size=32)
    scores = np.asarray(qs @ docs.T, dtype=np.float64)
    return [_top(row, k) for row in scores], scores


def rerank_rankings(
    reranker: Reranker,
    passages: Sequence[Passage],
    questions: Sequence[str],
    dense_scores: np.ndarray,
    k: int = K,
    candidates: int = CANDIDATES,
) -> list[list[int]]:
    out = []
    for qi, question in enumerate(questions):
        cands = _top(dense_scores[qi], candidates)
        scores = reranker.rerank(question, [passages[i].text for i in cands])
        out.append([cands[j] for j in _top(scores, k)])
    return out


def build_segmenters(
    encoder: Encoder, counter: TokenCounter, names: Sequence[str] | None = None
) -> dict[str, Segmenter]:
    from segmentation import FixedTokenSegmenter, SentenceWindowSegmenter, SEOSSegmenter, TextTilingSegmenter

    factories: dict[str, Callable[[], Segmenter]] = {
        "seos": lambda: SEOSSegmenter(encoder, counter),
        "fixed-512-0": lambda: FixedTokenSegmenter(counter, 512, 0),
        "fixed-512-32": lambda: FixedTokenSegmenter(counter, 512, 32),
        "fixed-512-128": lambda: FixedTokenSegmenter(counter, 512, 128),
        "sentence-window-3": lambda: SentenceWindowSegmenter(counter, 3),
        "texttiling": lambda: TextTilingSegmenter(counter),
    }
    chosen = list(names) if names else list(factories)
    unknown = [n for n in chosen if n not in factories]
    if unknown:
        raise ValueError(f"unknown segmenters {unknown}; choose from {list(factories)}")
    return {n: factories[n]() for n in chosen}


SEGMENTERS = ("seos", "fixed-512-0", "fixed-512-32", "fixed-512-128", "sentence-window-3", "texttiling")


def _score(
    rankings: Sequence[Sequence[int]], passages: Sequence[Passage], queries: Sequence[GoldQuery]
) -> tuple[float, float]:
    hits, rrs = [], []
    for ranked, q in zip(rankings, queries, strict=True):
        hit, rr = hit_and_rr([passages[i] for i in ranked], q)
        hits.append(1.0 if hit else 0.0)
        rrs.append(rr)
    return statistics.fmean(hits), statistics.fmean(rrs)


def evaluate_segmenter(
    name: str,
    seg: Segmenter,
    docs: Sequence[EvalDoc],
    queries: Sequence[GoldQuery],
    encoder: Encoder,
    counter: TokenCounter,
    reranker: Reranker | None,
    timings: dict[str, float] | None = None,
) -> list[Row]:
    """One segmenter's rows (BM25, dense, dense+rerank); ``timings`` collects seconds per step."""
    questions = [q.question for q in queries]
    clock = timings if timings is not None else {}
    t0 = time.perf_counter()
    passages = build_passages(seg, docs, counter)
    clock["segment"] = time.perf_counter() - t0
    section = [p for p in passages if p.unit != "abstract"]
    mean_tokens = statistics.fmean(p.token_count for p in section) if section else 0.0
    stats = dict(chunks=len(passages), section_chunks=len(section), mean_chunk_tokens=round(mean_tokens, 1))
    t0 = time.perf_counter()
    systems: list[tuple[str, list[list[int]]]] = [("bm25", bm25_rankings(passages, questions))]
    clock["bm25"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    dense, scores = dense_rankings(encoder, passages, questions)
    clock["dense"] = time.perf_counter() - t0
    systems.append(("dense", dense))
    if reranker is not None:
        t0 = time.perf_counter()
        systems.append(("dense+rerank", rerank_rankings(reranker, passages, questions, scores)))
        clock["rerank"] = time.perf_counter() - t0
    rows: list[Row] = []
    for retriever, rankings in systems:
        hit, mrr = _score(rankings, passages, queries)
        rows.append(Row(name, retriever, round(hit, 4), round(mrr, 4), queries=len(queries), **stats))  # type: ignore[arg-type]
    return rows


def evaluate(
    segmenters: Mapping[str, Segmenter],
    docs: Sequence[EvalDoc],
    queries: Sequence[GoldQuery],
    encoder: Encoder,
    counter: TokenCounter,
    reranker: Reranker | None,
    *,
    log: Callable[[str], None] = lambda _: None,
) -> list[Row]:
    rows: list[Row] = []
    for name, seg in segmenters.items():
        t0 = time.perf_counter()
        mine = evaluate_segmenter(name, seg, docs, queries, encoder, counter, reranker)
        rows += mine
        log(f"{name}: {mine[0].chunks} passages, {time.perf_counter() - t0:.1f}s")
    return rows


def markdown_table(rows: Sequence[Row]) -> str:
    retrievers = list(dict.fromkeys(r.retriever for r in rows))
    head = ["Segmenter", "Chunks", "Mean tokens"]
    for r in retrievers:
        head += [f"{r} Hit@5", f"{r} MRR@5"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for seg in dict.fromkeys(r.segmenter for r in rows):
        mine = {r.retriever: r for r in rows if r.segmenter == seg}
        first = next(iter(mine.values()))
        cells = [seg, str(first.section_chunks), f"{first.mean_chunk_tokens:.0f}"]
        for ret in retrievers:
            row = mine.get(ret)
            cells += [f"{100 * row.hit_at_5:.1f}", f"{100 * row.mrr_at_5:.1f}"] if row else ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def results_table(rows: Sequence[Row]) -> Table:
    """The markdown table's content as a report :class:`Table` (percentages, one decimal)."""
    lines = markdown_table(rows).splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    return Table("Passage retrieval by segmentation strategy (CoMeta Table 3 analogue)", header, body)


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


async def run_chunking(opts: RunOptions) -> SuiteResult:
    """``cometa eval chunking``: resumable per segmenter (``items.jsonl`` holds one record per segmenter).

    ``opts.subsets``: segmenter names (default all :data:`SEGMENTERS`); ``opts.limit``: a seeded sample of
    the queries; ``opts.params``: ``reranker`` ('bi-encoder', 'none', a hub id or folder), ``max_length``.
    """
    if opts.server_url:
        # The metrics need the pipeline's internals (per-arm rankings), which /ask does not expose.
        raise EvalInputError("chunking runs in-process only; --server is for the answer suites (qa, medrgb)")
    unknown_params = sorted(set(opts.params) - {"reranker", "max_length"})
    if unknown_params:
        raise EvalInputError(f"unknown chunking params {unknown_params}; known: reranker, max_length")
    names = list(opts.subsets or SEGMENTERS)
    bad = [n for n in names if n not in SEGMENTERS]
    if bad:
        raise EvalInputError(f"unknown segmenters {bad}; choose from {', '.join(SEGMENTERS)}")
    queries = select_items(load_queries(), opts.limit, opts.seed)
    log = ItemLog(opts.out_dir / ITEMS_FILE, resume=opts.resume)
    todo = [n for n in names if n not in log.done()]
    stage_times = StageTimes()
    meta: dict[str, Any] = {}
    if todo:
        encoder, counter, reranker = await asyncio.to_thread(_encoder_and_reranker, opts.params)
        docs = load_eval_corpus(queries)
        segmenters = build_segmenters(encoder, counter, todo)
        meta = {
            "documents": len(docs),
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
    for rec in records:
        for stage, seconds in rec.get("timings_s", {}).items():
            stage_times.add(stage, 1000 * float(seconds))
    first = records[0] if records else {}
    notes = [
        f"{len(queries)} queries over {first.get('documents', '?')} documents; encoder "
        f"{first.get('encoder', '?')} (max length {opts.params.get('max_length', 512)}); reranker "
        f"{first.get('reranker')} ({first.get('rerank_note') or 'as configured'}).",
        "Hit@5 / MRR@5 in %: a passage is a hit when it holds at least half of the gold span's characters "
        f"in the gold unit (k={K}, rerank candidates={CANDIDATES}).",
        "Stage times are per segmenter: 'segment' builds the passage pool, the others rank all queries.",
    ]
    if len(todo) < len(names):
        notes.append(f"{len(names) - len(todo)} segmenter(s) were read back from an earlier partial run.")
    retrievers = list(dict.fromkeys(r.retriever for r in rows))
    by = {(r.segmenter, r.retriever): r for r in rows}
    plots = [
        Plot(
            f"chunking_{metric}.png",
            f"{label} by segmenter and retriever",
            "bar",
            names,
            {ret: [100 * getattr(by[(n, ret)], metric) for n in names] for ret in retrievers},
            f"{label} %",
        )
        for metric, label in (("hit_at_5", "Hit@5"), ("mrr_at_5", "MRR@5"))
    ]
    metrics = {f"{r.segmenter}/{r.retriever}": asdict(r) for r in rows}
    return SuiteResult("chunking", metrics, [results_table(rows)], plots, notes, stage_times)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m eval.chunking``: the same suite as ``cometa eval chunking``."""
    ap = argparse.ArgumentParser(
        prog="python -m eval.chunking", description=__doc__.split("\n")[0] if __doc__ else None
    )
    ap.add_argument("--out", type=Path, help="output folder (default var/eval/chunking-<config hash>)")
    ap.add_argument("--limit", type=int, help="a seeded sample of N queries")
    ap.add_argument("--segmenters", nargs="+", choices=SEGMENTERS, help="default: all")
    ap.add_argument(
        "--reranker", default=BI_ENCODER, help="'bi-encoder' (offline), 'none', a hub id or folder"
    )
    ap.add_argument("--max-length", type=int, default=512, help="dense encoder input limit (tokens)")
    args = ap.parse_args(argv)
    opts = RunOptions(
        out_dir=Path("."),
        limit=args.limit,
        subsets=tuple(args.segmenters or ()),
        params={"reranker": args.reranker, "max_length": args.max_length},
    )
    opts = replace(opts, out_dir=args.out or default_out_dir("chunking", opts))
    metadata = run_metadata("chunking", opts)
    check_run_dir(opts, metadata)
    result = asyncio.run(run_chunking(opts))
    print(result.tables[0].markdown())
    for path in write_result(result, opts, metadata):
        print(path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

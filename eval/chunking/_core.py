"""The chunking suite's mechanics: passage pools, the hit rule, the three rankers, rows per segmenter."""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

import numpy as np

from core import Encoder, Reranker, TokenCounter
from retrieval.ncbi import PmcArticle
from segmentation import Segmenter, SourceSection, SourceText

from .._runner import Table

__all__ = [
    "ABSTRACTS_ONLY",
    "CANDIDATES",
    "HIT_OVERLAP",
    "SCOPES",
    "SEGMENTERS",
    "EvalDoc",
    "GoldQuery",
    "K",
    "Passage",
    "Row",
    "bm25_scores",
    "build_passages",
    "build_segmenters",
    "eval_doc",
    "evaluate",
    "evaluate_segmenter",
    "hit_and_rr",
    "is_hit",
    "markdown_table",
    "rank",
    "rerank_rankings",
    "results_table",
]

HIT_OVERLAP = 0.5
K = 5
CANDIDATES = 30
# The depth=abstract row: every document contributes its abstract only, no body section (no segmenter).
ABSTRACTS_ONLY = "abstracts only"
# "pool": each question ranks every passage of every document; "article": only its gold document's passages
# (the passage stage after document retrieval found the right article).
SCOPES = ("pool", "article")

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
    scope: str = "pool"  # "pool": ranked over every passage; "article": over the gold article's passages


def eval_doc(article: PmcArticle) -> EvalDoc:
    """A parsed JATS article as an evaluation document: its abstract and its body sections, each section
    with its heading path (the section index is :class:`GoldQuery`'s ``unit``)."""
    sections = tuple(
        SourceSection(s.text, s.heading, tuple(h for h in (*s.path, s.heading) if h.strip()))
        for s in article.sections
    )
    return EvalDoc(article.pmcid, article.abstract_text, sections)


def build_passages(
    segmenter: Segmenter | None, docs: Sequence[EvalDoc], counter: TokenCounter
) -> list[Passage]:
    """Abstracts whole; body sections through ``segmenter`` (one SourceText per document); ``None``: the
    abstracts only (depth=abstract)."""
    out: list[Passage] = []
    for d in docs:
        if d.abstract.strip():
            out.append(
                Passage(d.doc_id, "abstract", 0, len(d.abstract), d.abstract, counter.count(d.abstract))
            )
        if d.sections and segmenter is not None:
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


def _top(scores: Sequence[float] | np.ndarray, k: int, allowed: Sequence[int] | None = None) -> list[int]:
    # Ties broken by pool order so every run ranks identically.
    pool = range(len(scores)) if allowed is None else allowed
    return sorted(pool, key=lambda i: (-float(scores[i]), i))[:k]


def rank(
    scores: np.ndarray, allowed: Sequence[Sequence[int] | None] | None = None, k: int = K
) -> list[list[int]]:
    """Top-k passage indexes per row of a (questions x passages) score matrix, each row restricted to its
    ``allowed`` passages when given (the article scope)."""
    return [_top(row, k, allowed[qi] if allowed is not None else None) for qi, row in enumerate(scores)]


def bm25_scores(passages: Sequence[Passage], questions: Sequence[str]) -> np.ndarray:
    """(questions x passages) BM25 scores over the whole pool (its statistics: IDF, mean length)."""
    bm25s: Any = importlib.import_module("bm25s")  # untyped library: one dynamic import, no mypy override
    index = bm25s.BM25()
    index.index(
        bm25s.tokenize([p.text for p in passages], stopwords="en", show_progress=False), show_progress=False
    )
    # String tokens (not ids): get_scores maps them through the index's own vocabulary.
    tokens = bm25s.tokenize(list(questions), stopwords="en", return_ids=False, show_progress=False)
    return np.asarray([index.get_scores(list(t)) for t in tokens], dtype=np.float64).reshape(
        len(questions), len(passages)
    )


def _encode(
    encoder: Encoder, passages: Sequence[Passage], questions: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(question vectors, passage vectors); passages as documents with an empty title, as production."""
    docs = encoder.encode_documents([("", p.text) for p in passages], batch_size=32)
    return encoder.encode_queries(list(questions), batch_size=32), docs


class _ScoresVectors(Protocol):
    def score(self, query_vector: Any, passage_vectors: Sequence[Any]) -> list[float]: ...


def _vector_scorer(reranker: Reranker, encoder: Encoder | None) -> _ScoresVectors | None:
    """The reranker when it is the bi-encoder over ``encoder``: it would re-encode the very passages the
    dense step encoded, so its scores are computed from those vectors (as ``retrieval.passages`` does)."""
    same = encoder is not None and getattr(reranker, "encoder", None) is encoder
    if same and getattr(reranker, "kind", None) == "bi-encoder" and hasattr(reranker, "score"):
        return cast(_ScoresVectors, reranker)
    return None


def rerank_rankings(
    reranker: Reranker,
    passages: Sequence[Passage],
    questions: Sequence[str],
    dense_scores: np.ndarray,
    k: int = K,
    candidates: int = CANDIDATES,
    allowed: Sequence[Sequence[int] | None] | None = None,
    vectors: tuple[np.ndarray, np.ndarray, Encoder] | None = None,
) -> list[list[int]]:
    """The dense top ``candidates`` (within ``allowed`` when given) reranked; top k. ``vectors``: the dense
    step's (question vectors, passage vectors, encoder), reused by a bi-encoder reranker over that encoder."""
    scorer = _vector_scorer(reranker, vectors[2]) if vectors is not None else None
    out = []
    for qi, question in enumerate(questions):
        cands = _top(dense_scores[qi], candidates, allowed[qi] if allowed is not None else None)
        if scorer is not None and vectors is not None:
            scores = scorer.score(vectors[0][qi], [vectors[1][i] for i in cands])
        else:
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


def _article_masks(passages: Sequence[Passage], queries: Sequence[GoldQuery]) -> list[Sequence[int] | None]:
    by_doc: dict[str, list[int]] = {}
    for i, p in enumerate(passages):
        by_doc.setdefault(p.doc_id, []).append(i)
    return [by_doc.get(q.doc_id, []) for q in queries]


def evaluate_segmenter(
    name: str,
    seg: Segmenter | None,
    docs: Sequence[EvalDoc],
    queries: Sequence[GoldQuery],
    encoder: Encoder,
    counter: TokenCounter,
    reranker: Reranker | None,
    timings: dict[str, float] | None = None,
    scopes: Sequence[str] = ("pool",),
) -> list[Row]:
    """One segmenter's rows (BM25, dense, dense+rerank) per scope of :data:`SCOPES`; ``seg`` None: the
    abstracts only. ``timings`` collects seconds per step. The passages are encoded once for every scope."""
    questions = [q.question for q in queries]
    clock = timings if timings is not None else {}
    t0 = time.perf_counter()
    passages = build_passages(seg, docs, counter)
    clock["segment"] = time.perf_counter() - t0
    section = [p for p in passages if p.unit != "abstract"]
    mean_tokens = statistics.fmean(p.token_count for p in section) if section else 0.0
    stats = dict(chunks=len(passages), section_chunks=len(section), mean_chunk_tokens=round(mean_tokens, 1))
    t0 = time.perf_counter()
    lexical = bm25_scores(passages, questions)
    clock["bm25"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    qvecs, pvecs = _encode(encoder, passages, questions)
    dense = np.asarray(qvecs @ pvecs.T, dtype=np.float64)
    clock["dense"] = time.perf_counter() - t0
    masks = _article_masks(passages, queries)
    rows: list[Row] = []
    for scope in scopes:
        allowed = masks if scope == "article" else None
        systems: list[tuple[str, list[list[int]]]] = [
            ("bm25", rank(lexical, allowed)),
            ("dense", rank(dense, allowed)),
        ]
        if reranker is not None:
            t0 = time.perf_counter()
            systems.append(
                (
                    "dense+rerank",
                    rerank_rankings(
                        reranker, passages, questions, dense, allowed=allowed, vectors=(qvecs, pvecs, encoder)
                    ),
                )
            )
            clock[f"rerank ({scope})"] = time.perf_counter() - t0
        for retriever, rankings in systems:
            hit, mrr = _score(rankings, passages, queries)
            rows.append(
                Row(name, retriever, round(hit, 4), round(mrr, 4), queries=len(queries), scope=scope, **stats)  # type: ignore[arg-type]
            )
    return rows


def evaluate(
    segmenters: Mapping[str, Segmenter | None],
    docs: Sequence[EvalDoc],
    queries: Sequence[GoldQuery],
    encoder: Encoder,
    counter: TokenCounter,
    reranker: Reranker | None,
    *,
    scopes: Sequence[str] = ("pool",),
    log: Callable[[str], None] = lambda _: None,
) -> list[Row]:
    rows: list[Row] = []
    for name, seg in segmenters.items():
        t0 = time.perf_counter()
        mine = evaluate_segmenter(name, seg, docs, queries, encoder, counter, reranker, scopes=scopes)
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


def results_table(rows: Sequence[Row], title: str = "") -> Table:
    """The markdown table's content as a report :class:`Table` (percentages, one decimal)."""
    lines = markdown_table(rows).splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    return Table(
        title or "Passage retrieval by segmentation strategy (CoMeta Table 3 analogue)", header, body
    )

"""The passage stage of `/ask` before and after the passage cache and vector reuse. Prints markdown.

    .venv/bin/python bench/passages.py [--questions 10]

Runs the real offline :class:`~app.pipeline.Pipeline` (bundled corpus behind the in-process local E-utilities
server, MiniLM dense arm, SEOS, bi-encoder rerank, no LLM) over the first ``--questions`` fixture narratives
(``eval/fixtures/handwritten_narratives.jsonl`` first), twice in a row: **cold** (a fresh pipeline, nothing
cached) and **warm** (the same questions again, same process). Two configurations, each in a fresh pipeline:

* **before** — ``cache_documents=0`` and the reranker hidden behind a wrapper that only exposes ``rerank``,
  so every question segments and encodes its documents again and the rerank encodes its candidates again
  (the pre-cache behaviour; the reranker's own per-text cache still works, as it did).
* **after** — the defaults: per-document passage cache, rerank scores the dense stage's vectors.

The passage-stage time is the pipeline's own ``timings_ms["passages"]``. Encoder work is counted by wrapping
(not replacing) the encoder's ``encode_documents``: calls and texts, split by who asked (SEOS group
embeddings, passage scoring, rerank). The last line checks that both configurations select the same
passages in the same ranks, and gives the largest score difference (float32 batching noise: the 'before'
rerank encodes its candidates in a batch of their own, and 'after' reuses vectors encoded with an earlier
question).

``--batching-ab`` measures instead the micro-batcher of query-time encodes (``EncodeBatcher``):
``--concurrency`` requests (default 10), each a fixture question with its evidence documents (only questions
whose evidence has a PMC full text), are scored at once on one event loop, as the API serves them (the loop's
default executor runs the CPU work), by a fresh passage stage with no passage store and a cold cache, so every
full-text chunk is encoded at query time; segmentation is done beforehand, untimed, so the time is passage
scoring + rerank. Batching off (``encode_batch_window_ms=0``) and on (the default window) alternate
``--repeats`` times; the table gives the wall time of the whole burst, the encoder calls made for scoring and
whether every request got the same passages in the same ranks.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, load_questions, machine_line, markdown_table, percentile

from app import Settings, build_dense_retriever, build_pipeline
from retrieval.embed import load_reranker
from retrieval.evidence import EvidenceDoc
from retrieval.passages import PassageContext, PassageRetriever

_stage = threading.local()  # which passage sub-stage the current worker thread is in


class _Opaque:
    """Exposes a reranker's Reranker interface only: PassageRetriever cannot reuse vectors through it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name, self.kind, self.note = inner.name, inner.kind, inner.note

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        _stage.name = "rerank"
        try:
            return list(self._inner.rerank(query, texts))
        finally:
            _stage.name = None


def _instrument(encoder: Any, counts: Counter[str]) -> Any:
    """Count ``encoder.encode_documents`` calls by sub-stage; returns the function that undoes it."""
    original = encoder.encode_documents

    def counted(docs: Sequence[tuple[str, str]], *args: Any, **kwargs: Any) -> Any:
        who = getattr(_stage, "name", None) or "other"
        counts[f"{who}:calls"] += 1
        counts[f"{who}:texts"] += len(docs)
        return original(docs, *args, **kwargs)

    encoder.encode_documents = counted

    def undo() -> None:
        encoder.encode_documents = original

    return undo


def _tag_stages() -> None:
    items, dense = PassageRetriever._items, PassageRetriever._dense

    def tagged(method: Any, name: str) -> Any:
        def run(self: Any, *args: Any) -> Any:
            _stage.name = name
            try:
                return method(self, *args)
            finally:
                _stage.name = None

        return run

    PassageRetriever._items = tagged(items, "seos")  # type: ignore[method-assign]
    PassageRetriever._dense = tagged(dense, "scoring")  # type: ignore[method-assign]


async def _run(
    settings: Settings, dense: Any, questions: list[str], before: bool
) -> tuple[dict[str, dict[str, Any]], list[PassageContext | None]]:
    out: dict[str, dict[str, Any]] = {}
    contexts: list[PassageContext | None] = []
    async with build_pipeline(settings, use_llm=False, dense=dense) as pipeline:
        retriever = await pipeline.passage_retriever()
        assert retriever is not None, "passages unavailable: is the MiniLM model installed?"
        if before:
            retriever.reranker = _Opaque(retriever.reranker)
        for phase in ("cold", "warm"):
            counts: Counter[str] = Counter()
            undo = _instrument(retriever.encoder, counts)
            ms: list[float] = []
            started = time.perf_counter()
            for q in questions:
                outcome = await pipeline.search(q)
                ms.append(outcome.timings_ms.get("passages", 0.0))
                if phase == "cold":
                    contexts.append(outcome.context)
            wall = time.perf_counter() - started
            undo()
            st = retriever.cache.stats
            out[phase] = {"ms": ms, "counts": counts, "wall": wall, "load": load_average(), "cache": st}
    return out, contexts


def _compare(a: PassageContext | None, b: PassageContext | None) -> tuple[bool, float]:
    """(same passages in the same ranks, largest score difference) between two contexts."""
    if a is None or b is None:
        return a is b, 0.0
    ids = [(p.chunk_id, p.rank, p.expanded_from, sorted(p.scores)) for p in a.passages]
    if ids != [(p.chunk_id, p.rank, p.expanded_from, sorted(p.scores)) for p in b.passages]:
        return False, float("nan")
    diffs = [
        abs(p.scores[k] - r.scores[k]) for p, r in zip(a.passages, b.passages, strict=True) for k in p.scores
    ]
    return True, max(diffs, default=0.0)


async def _full_text_requests(
    settings: Settings, dense: Any, questions: list[str], want: int
) -> list[tuple[str, list[EvidenceDoc]]]:
    """(corrected question, evidence documents) of the first ``want`` questions with a full text."""
    out: list[tuple[str, list[EvidenceDoc]]] = []
    async with build_pipeline(settings, use_llm=False, dense=dense, use_passages=False) as pipeline:
        for q in questions:
            outcome = await pipeline.search(q)
            docs = list(outcome.evidence.docs)
            if any(d.depth_used == "fulltext" for d in docs):
                out.append((outcome.understanding.plan.corrected_question, docs))
            if len(out) == want:
                break
    return out


def _batching_ab(settings: Settings, dense: Any, concurrency: int, repeats: int) -> None:
    from segmentation import SEOSSegmenter, counter_for

    questions = load_questions()
    requests = asyncio.run(_full_text_requests(settings, dense, questions, concurrency))
    texts = sum(d.depth_used == "fulltext" for _, docs in requests for d in docs)
    print(f"{len(requests)} concurrent requests, {texts} full texts among their evidence documents\n")
    encoder = dense.encoder
    counter = counter_for(encoder)
    reranker = load_reranker(settings.rerank, encoder=encoder)
    window_on = settings.passages.encode_batch_window_ms

    def fresh(window_ms: float) -> PassageRetriever:
        ps = settings.passages.model_copy(update={"encode_batch_window_ms": window_ms})
        seg = SEOSSegmenter(encoder, counter)
        return PassageRetriever(seg, encoder, reranker, ps, counter=counter, vectors=dense)

    async def burst(retriever: PassageRetriever) -> tuple[float, list[Any]]:
        t = time.perf_counter()
        contexts = await asyncio.gather(*(retriever.retrieve(q, docs) for q, docs in requests))
        return time.perf_counter() - t, [_summary(c) for c in contexts]

    results: dict[str, list[tuple[float, int, int, str]]] = {"off": [], "on": []}
    reference: list[Any] | None = None
    same = True
    for _ in range(repeats):
        for arm, window in (("off", 0.0), ("on", window_on)):
            retriever = fresh(window)
            for _, docs in requests:
                retriever._items(docs)  # segment now: the burst times scoring, not SEOS
            wall, summaries = asyncio.run(burst(retriever))
            reference = reference or summaries
            same = same and _same(reference, summaries)
            st = retriever.batcher.stats
            results[arm].append((wall, st.model_calls, st.texts, load_average()))
    rows = []
    for arm in ("off", "on"):
        walls = [w for w, *_ in results[arm]]
        _, calls, n_texts, _ = results[arm][-1]
        rows.append(
            [
                f"batching {arm}" + (f" ({window_on:g} ms window)" if arm == "on" else " (window 0)"),
                " / ".join(f"{w:.2f}" for w in walls),
                f"{statistics.median(walls):.2f}",
                f"{calls} / {n_texts}",
                " | ".join(load for *_, load in results[arm]),
            ]
        )
    header = ["configuration", "burst wall s (each run)", "median s", "scoring encoder calls / texts", "load"]
    print(markdown_table(header, rows))
    off = statistics.median(w for w, *_ in results["off"])
    on = statistics.median(w for w, *_ in results["on"])
    print(f"\non / off median wall: {on / off:.2f}; same passages in the same ranks in every run: {same}")


def _summary(ctx: PassageContext) -> list[tuple[str, str, float]]:
    return [(p.pmid, p.chunk_id, p.scores.get("rerank", p.scores.get("dense", 0.0))) for p in ctx.passages]


def _same(a: list[Any], b: list[Any]) -> bool:
    """Same passages in the same order with scores equal up to float32 batching noise."""
    return all(
        [x[:2] for x in ra] == [x[:2] for x in rb]
        and all(abs(x[2] - y[2]) < 1e-4 for x, y in zip(ra, rb, strict=True))
        for ra, rb in zip(a, b, strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--batching-ab", action="store_true", help="A/B the query-time encode micro-batcher")
    parser.add_argument("--concurrency", type=int, default=10, help="--batching-ab: requests at once")
    parser.add_argument("--repeats", type=int, default=3, help="--batching-ab: runs per arm, alternating")
    args = parser.parse_args()
    if args.batching_ab:
        print(machine_line())
        print(f"\nload average at the start: {load_average()}\n")
        offline = Settings().offline()
        _batching_ab(offline, build_dense_retriever(offline), args.concurrency, args.repeats)
        print(f"load average at the end: {load_average()}")
        return
    questions = load_questions(args.questions)
    print(machine_line())
    print(f"\nload average at the start: {load_average()}\n")
    settings = Settings().offline()
    dense = build_dense_retriever(settings)  # the dense arm's index, shared: not part of the passage stage
    _tag_stages()
    before_settings = settings.model_copy(
        update={"passages": settings.passages.model_copy(update={"cache_documents": 0})}
    )
    before, ctx_before = asyncio.run(_run(before_settings, dense, questions, before=True))
    after, ctx_after = asyncio.run(_run(settings, dense, questions, before=False))

    rows = []
    for label, res in (
        ("before (no cache, rerank re-encodes)", before),
        ("after (cache + vector reuse)", after),
    ):
        for phase in ("cold", "warm"):
            r = res[phase]
            ms, c, st = r["ms"], r["counts"], r["cache"]

            def cnt(who: str, c: Counter[str] = c) -> str:
                return f"{c[f'{who}:calls']} / {c[f'{who}:texts']}"

            rows.append(
                [
                    label,
                    phase,
                    f"{statistics.median(ms):.0f}",
                    f"{percentile(ms, 95):.0f}",
                    f"{statistics.fmean(ms):.0f}",
                    f"{sum(ms) / 1000:.1f}",
                    cnt("seos"),
                    cnt("scoring"),
                    cnt("rerank"),
                    f"{st.vector_hits} / {st.vector_misses}" if st.capacity else "off",
                    r["load"],
                ]
            )
    print(
        markdown_table(
            [
                "configuration",
                "pass",
                "passages p50 ms",
                "p95 ms",
                "mean ms",
                "total s",
                "SEOS encode calls / texts",
                "scoring encode calls / texts",
                "rerank encode calls / texts",
                "doc-vector cache hits / misses (cumulative)",
                "load after",
            ],
            rows,
        )
    )
    compared = [_compare(a, b) for a, b in zip(ctx_before, ctx_after, strict=True)]
    same = sum(ok for ok, _ in compared)
    worst = max((d for ok, d in compared if ok), default=0.0)
    print(
        f"\nbefore vs after (cold pass): same passages in the same ranks for {same}/{len(questions)} "
        f"questions; largest score difference {worst:.2e}"
    )
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()

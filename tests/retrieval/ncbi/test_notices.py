"""Publication notices (PubMed's CommentsCorrections): parsed from EFetch XML, written back by the record
writer the local server serves, and the retraction flag kept consistent with them."""

from __future__ import annotations

import gzip

import pytest
from lxml import etree

from retrieval.ncbi import (
    PubmedNotice,
    PubmedRecord,
    parse_pubmed_articles,
    pubmed_article_xml,
    pubmed_articleset,
)
from tests._paths import JATS_SAMPLES, SHARED
from tests.retrieval.ncbi.test_corpus import DTD, _pubmed_dtd

# One record with every kind of link PubMed gives: the notices and the kinds that are not notices.
NOTICES_XML = b"""<?xml version="1.0" ?>
<PubmedArticleSet><PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">500</PMID>
<Article PubModel="Print"><Journal><JournalIssue CitedMedium="Print"><PubDate><Year>2015</Year></PubDate>
</JournalIssue><Title>J Test</Title></Journal><ArticleTitle>A review</ArticleTitle></Article>
<MedlineJournalInfo><MedlineTA>J Test</MedlineTA></MedlineJournalInfo><CitationSubset>IM</CitationSubset>
<CommentsCorrectionsList>
<CommentsCorrections RefType="CommentIn"><RefSource>J Test. 2016;1:2</RefSource><PMID Version="1">601</PMID>
</CommentsCorrections>
<CommentsCorrections RefType="ExpressionOfConcernIn"><RefSource>J Test. 2017;2:3</RefSource>
<PMID Version="1">602</PMID></CommentsCorrections>
<CommentsCorrections RefType="ErratumIn"><RefSource>J Test 2016 Jan;1(1):9</RefSource>
<Note>Doe J [corrected to Roe J]</Note></CommentsCorrections>
<CommentsCorrections RefType="UpdateIn"><RefSource>J Test. 2020;(2):CD1</RefSource>
<PMID Version="1">603</PMID></CommentsCorrections>
<CommentsCorrections RefType="UpdateOf"><RefSource>J Test. 2010;(1):CD1</RefSource>
<PMID Version="1">604</PMID></CommentsCorrections>
<CommentsCorrections RefType="PartialRetractionIn"><RefSource>J Test. 2021;3:4</RefSource>
<PMID Version="1">605</PMID></CommentsCorrections>
<CommentsCorrections RefType="RetractedandRepublishedIn"><RefSource>J Test. 2022;4:5</RefSource>
<PMID Version="1">606</PMID></CommentsCorrections>
<CommentsCorrections RefType="ReprintIn"><RefSource>Other J. 2016;7:8</RefSource></CommentsCorrections>
<CommentsCorrections RefType="Cites"><RefSource>Cited J. 2001;1:1</RefSource><PMID Version="1">607</PMID>
</CommentsCorrections>
</CommentsCorrectionsList></MedlineCitation><PubmedData><ArticleIdList>
<ArticleId IdType="pubmed">500</ArticleId></ArticleIdList></PubmedData></PubmedArticle>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">501</PMID><Article>
<Journal><JournalIssue><PubDate><Year>2014</Year></PubDate></JournalIssue></Journal><ArticleTitle>T</ArticleTitle>
</Article><CommentsCorrectionsList><CommentsCorrections RefType="RetractionIn">
<RefSource>J Test. 2015;5:6</RefSource><PMID Version="1">608</PMID></CommentsCorrections>
</CommentsCorrectionsList></MedlineCitation></PubmedArticle></PubmedArticleSet>"""


def test_the_notices_are_parsed_and_comments_reprints_and_citations_are_not() -> None:
    review, retracted = parse_pubmed_articles(NOTICES_XML)
    assert review.notices == (
        PubmedNotice("ExpressionOfConcernIn", "J Test. 2017;2:3", "602"),
        PubmedNotice("ErratumIn", "J Test 2016 Jan;1(1):9", None),
        PubmedNotice("UpdateIn", "J Test. 2020;(2):CD1", "603"),
        PubmedNotice("PartialRetractionIn", "J Test. 2021;3:4", "605"),
        PubmedNotice("RetractedandRepublishedIn", "J Test. 2022;4:5", "606"),
    )
    assert [n.type for n in review.notices] == [
        "expression_of_concern",
        "erratum",
        "update",
        "partial_retraction",
        "republished",
    ]
    assert not review.retracted  # a partial retraction withdraws part of it, not the study
    assert retracted.retracted and [n.type for n in retracted.notices] == ["retraction"]


def test_a_retraction_notice_retracts_the_record_however_it_was_built() -> None:
    built = PubmedRecord(pmid="1", title="t", notices=(PubmedNotice("RetractionIn", "x", "2"),))
    assert built.retracted
    assert not PubmedRecord(pmid="1", title="t", notices=(PubmedNotice("ErratumIn", "x"),)).retracted
    with pytest.raises(ValueError, match="CommentIn"):
        PubmedNotice("CommentIn", "x")


def test_the_writer_round_trips_the_notices() -> None:
    records = parse_pubmed_articles(NOTICES_XML)
    written = [pubmed_article_xml(r) for r in records]
    back = parse_pubmed_articles(pubmed_articleset(written))
    assert [(r.notices, r.retracted) for r in back] == [(r.notices, r.retracted) for r in records]
    # In the DTD's place, with PubMed's own element names: what a client of NCBI expects.
    cc = etree.fromstring(written[0]).find("MedlineCitation/CommentsCorrectionsList/CommentsCorrections")
    assert cc is not None and cc.get("RefType") == "ExpressionOfConcernIn"
    assert [(c.tag, c.text, dict(c.attrib)) for c in cc] == [
        ("RefSource", "J Test. 2017;2:3", {}),
        ("PMID", "602", {"Version": "1"}),
    ]
    # A record without notices writes no empty list (the DTD requires one entry at least).
    assert b"CommentsCorrectionsList" not in pubmed_article_xml(PubmedRecord(pmid="9", title="t"))


@pytest.mark.skipif(not DTD.is_file(), reason="shared DTD not available")
def test_the_written_notices_are_valid_against_pubmed_250101_dtd() -> None:
    (review, _) = parse_pubmed_articles(NOTICES_XML)
    # PartialRetractionIn is newer than the 2025 DTD; every other notice type is declared there.
    dated = [n for n in review.notices if n.ref_type != "PartialRetractionIn"]
    record = PubmedRecord(pmid="500", title="A review", notices=(*dated, PubmedNotice("RetractionIn", "r")))
    dtd = _pubmed_dtd()
    assert dtd.validate(etree.fromstring(pubmed_article_xml(record))), str(dtd.error_log)[:500]


# --- real records from the shared data (skipped without it) ---------------------------------------------

MEDSAMP = SHARED / "data" / "medline_samples" / "medsamp2014.xml.gz"


@pytest.mark.skipif(not MEDSAMP.is_file(), reason=f"shared MEDLINE sample not found at {MEDSAMP}")
def test_real_medline_records_carry_their_notices() -> None:
    # A MedlineCitationSet (2014 DTD): each citation wrapped as EFetch would return it.
    root = etree.fromstring(gzip.decompress(MEDSAMP.read_bytes()))
    articles = [
        b"<PubmedArticle>" + etree.tostring(mc) + b"</PubmedArticle>" for mc in root.iter("MedlineCitation")
    ]
    records = {r.pmid: r for r in parse_pubmed_articles(pubmed_articleset(articles))}
    # Two Cochrane reviews, each updated by the next: 11034741 -> 11406024 -> 14973981.
    assert records["11034741"].notices == (
        PubmedNotice("UpdateIn", "Cochrane Database Syst Rev. 2001;(2):CD002020", "11406024"),
    )
    assert [n.pmid for n in records["11406024"].notices] == ["14973981"]
    # Errata often cite no PMID; both of this record's are kept.
    assert [(n.type, n.pmid) for n in records["11237011"].notices] == [("erratum", None), ("erratum", None)]
    retracted = {p for p, r in records.items() if r.retracted}
    assert retracted == {"11543891", "8655018", "8863847"}
    assert all(any(n.type == "retraction" for n in records[p].notices) for p in retracted)
    kinds = [n.type for r in records.values() for n in r.notices]
    assert (kinds.count("erratum"), kinds.count("update"), kinds.count("retraction")) == (13, 3, 3)
    # The writer keeps them: the local server serves these records as NCBI does.
    back = parse_pubmed_articles(pubmed_articleset(pubmed_article_xml(r) for r in records.values()))
    assert [r.notices for r in back] == [r.notices for r in records.values()]


@pytest.mark.skipif(not JATS_SAMPLES.is_dir(), reason="shared samples not available")
def test_a_real_record_with_comments_only_has_no_notices() -> None:
    (record,) = parse_pubmed_articles((JATS_SAMPLES / "pubmed-29768149.xml").read_bytes())
    assert record.notices == () and not record.retracted  # two CommentIn: comments are not notices

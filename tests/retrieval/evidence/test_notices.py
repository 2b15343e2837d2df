"""Publication notices on the evidence: each study carries what PubMed says happened to it since, in plain
words; a review whose newer version is also in the evidence is dropped for it.

Against the real local E-utilities server over a small corpus written to ``tmp_path`` by the record writer,
so the notices also make the round trip the offline mode depends on (writer -> EFetch -> parser).
"""

from __future__ import annotations

import dataclasses

import pytest

from retrieval import LocalServerSettings
from retrieval.evidence import (
    DROP_OUT_OF_WINDOW,
    DROP_RETRACTED,
    DROP_SUPERSEDED,
    Dropped,
    EvidenceBuilder,
    EvidenceSettings,
    Notice,
)
from retrieval.ncbi import PubmedNotice, PubmedRecord, pubmed_article_xml, pubmed_articleset
from tests.retrieval.evidence.test_evidence import REVIEW, boolean_arm, doc, local, make_record

OLD, NEW = "91000001", "91000002"  # a review and its update
ORPHAN = "91000003"  # a review whose update the corpus does not hold
CONCERN = "91000004"  # an expression of concern and an erratum
PARTIAL = "91000005"  # partly retracted
RETRACTED = "91000006"  # a RetractionIn notice, no "Retracted Publication" type
CHAIN = ("91000007", "91000008", "91000009")  # each updated by the next
LOOP = ("91000010", "91000011")  # each names the other as its update: a data error
DATED_OLD, DATED_NEW = "91000012", "91000013"  # the update is outside the date window
ABSENT = "91999999"


def record(pmid: str, *notices: PubmedNotice, year: int = 2015) -> PubmedRecord:
    return dataclasses.replace(make_record(pmid, REVIEW, year=year), notices=notices)


def update(pmid: str) -> PubmedNotice:
    return PubmedNotice("UpdateIn", "Cochrane Database Syst Rev. 2020;(1):CD1", pmid)


RECORDS = (
    record(OLD, update(NEW), year=2010),
    record(NEW, year=2020),
    record(ORPHAN, update(ABSENT)),
    record(
        CONCERN,
        PubmedNotice("ExpressionOfConcernIn", "J Test. 2019;2:3", "91999998"),
        PubmedNotice("ErratumIn", "J Test 2016 Jan;1(1):9"),
    ),
    record(PARTIAL, PubmedNotice("PartialRetractionIn", "J Test. 2021;3:4", "91999997")),
    record(RETRACTED, PubmedNotice("RetractionIn", "J Test. 2016;5:6", "91999996")),
    record(CHAIN[0], update(CHAIN[1]), year=2005),
    record(CHAIN[1], update(CHAIN[2]), year=2010),
    record(CHAIN[2], year=2018),
    record(LOOP[0], update(LOOP[1])),
    record(LOOP[1], update(LOOP[0])),
    record(DATED_OLD, update(DATED_NEW), year=2012),
    record(DATED_NEW, year=2024),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> LocalServerSettings:
    root = tmp_path_factory.mktemp("notices_corpus")
    (root / "pubmed").mkdir()
    (root / "pmc").mkdir()
    (root / "pubmed" / "records.xml").write_bytes(pubmed_articleset(pubmed_article_xml(r) for r in RECORDS))
    return LocalServerSettings(corpus_dir=root)


async def test_a_review_and_its_update_keep_the_update_in_the_older_ones_place(
    server: LocalServerSettings,
) -> None:
    client, _ = local(server)
    result = await EvidenceBuilder(client).build(boolean_arm(OLD, ORPHAN, CONCERN, PARTIAL, NEW))
    assert result.pmids == (NEW, ORPHAN, CONCERN, PARTIAL)
    assert list(result.dropped) == [Dropped(OLD, DROP_SUPERSEDED, NEW)]
    newer = doc(result, NEW)
    assert newer.fused_rank == 5 and newer.notices == ()  # its own rank and score: only its place moved
    # Off: both stay, in fused order, and the older one says where its newer version is.
    both = await EvidenceBuilder(client, EvidenceSettings(prefer_updates=False)).build(boolean_arm(OLD, NEW))
    assert both.pmids == (OLD, NEW) and both.dropped == ()
    assert doc(both, OLD).notices == (
        Notice("update", NEW, f"A newer version of this review exists: PMID {NEW}."),
    )
    await client.aclose()


async def test_each_study_carries_its_notices_in_plain_words(server: LocalServerSettings) -> None:
    client, _ = local(server)
    result = await EvidenceBuilder(client).build(boolean_arm(ORPHAN, CONCERN, PARTIAL))
    orphan, concern, partial = result.docs
    assert orphan.notices == (
        Notice(
            "update",
            ABSENT,
            f"A newer version of this review exists: PMID {ABSENT}. "
            "It is not among the studies found for this question.",
        ),
    )
    assert concern.notices == (
        Notice(
            "expression_of_concern",
            "91999998",
            "An expression of concern was published about this study (PMID 91999998).",
        ),
        Notice("erratum", None, "A correction was published for this study."),
    )
    assert partial.notices == (
        Notice("partial_retraction", "91999997", "Part of this study was retracted (PMID 91999997)."),
    )
    # What the evidence verdict may read later: a concern, not a correction or a newer version.
    assert (orphan.concern, concern.concern, partial.concern) == (False, True, True)
    await client.aclose()


async def test_a_retraction_notice_drops_the_study_as_retracted(server: LocalServerSettings) -> None:
    client, _ = local(server)
    result = await EvidenceBuilder(client).build(boolean_arm(RETRACTED, CONCERN))
    assert result.pmids == (CONCERN,) and list(result.dropped) == [Dropped(RETRACTED, DROP_RETRACTED)]
    kept = await EvidenceBuilder(client, EvidenceSettings(exclude_retracted=False)).build(
        boolean_arm(RETRACTED)
    )
    assert kept.docs[0].notices == (
        Notice("retraction", "91999996", "This study was retracted (PMID 91999996)."),
    )
    await client.aclose()


async def test_a_chain_of_updates_keeps_the_newest_and_a_loop_replaces_nothing(
    server: LocalServerSettings,
) -> None:
    client, _ = local(server)
    result = await EvidenceBuilder(client).build(boolean_arm(*CHAIN, *LOOP))
    assert result.pmids == (CHAIN[2], *LOOP)
    assert list(result.dropped) == [
        Dropped(CHAIN[0], DROP_SUPERSEDED, CHAIN[2]),
        Dropped(CHAIN[1], DROP_SUPERSEDED, CHAIN[2]),
    ]
    await client.aclose()


async def test_an_update_outside_the_date_window_leaves_the_older_review_in(
    server: LocalServerSettings,
) -> None:
    client, _ = local(server)
    result = await EvidenceBuilder(client).build(boolean_arm(DATED_OLD, DATED_NEW), max_year=2020)
    assert result.pmids == (DATED_OLD,)
    assert list(result.dropped) == [Dropped(DATED_NEW, DROP_OUT_OF_WINDOW)]
    (notice,) = doc(result, DATED_OLD).notices
    assert notice.type == "update" and notice.pmid == DATED_NEW and "not among the studies" in notice.text
    await client.aclose()

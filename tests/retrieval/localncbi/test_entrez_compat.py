"""Bio.Entrez, the client most users have, against the local E-utilities server.

The server runs over the bundled corpus on a loopback port (uvicorn in a thread); Bio.Entrez keeps NCBI's
URLs and the request layer swaps NCBI's host for ours, for the E-utilities and for the DTDs Biopython
downloads (``esummary_pubmed.dtd``, which it does not bundle). Each everyday call is read back with
``Entrez.read`` / ``Entrez.parse`` (validating against Biopython's DTDs) and compared with NCBI's recorded
responses where one exists (``eutils_samples/biopython_Tests_Entrez``).
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.request import Request

import pytest

from retrieval.localncbi import create_eutils_app
from retrieval.ncbi import Corpus, PubmedRecord, load_corpus, pubmed_abstract_text, pubmed_medline_text
from retrieval.understand import spell_correct
from tests._paths import BIOPYTHON_SAMPLES, JATS_SAMPLES, SHARED
from tests._procs import serve_in_thread

Entrez = pytest.importorskip("Bio.Entrez")
Medline = pytest.importorskip("Bio.Medline")
EntrezParser = pytest.importorskip("Bio.Entrez.Parser")

NCBI = "https://eutils.ncbi.nlm.nih.gov/"
PMID = "21045829"  # Br J Cancer 2010;103(11):1755-9, with a PMC full text (PMC2994229) in the corpus
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared data folder not available")

# NCBI's MEDLINE tag order (NBK3827 and the recorded displays, e.g. Biopython's Tests/Medline files).
MEDLINE_ORDER = (
    "PMID OWN STAT DCOM LR IS VI IP DP TI PG LID AB CI FAU AU AUID AD CN LA GR PT DEP PL TA JT JID RN SB "
    "MH PMC OTO OT COIS EDAT MHDA PMCR CRDT PHST AID PST SO"
).split()


def _words(rec: PubmedRecord) -> set[str]:
    return set(re.findall(r"[a-z]{4,}", f"{rec.title} {rec.abstract_text}".lower()))


def _word_overlap(corpus: Corpus) -> Any:
    """A stand-in for the dense index: Jaccard overlap of title and abstract words."""
    words = {pmid: _words(rec) for pmid, rec in corpus.records.items()}

    async def similar(rec: PubmedRecord, n: int) -> Sequence[tuple[str, float]]:
        mine = words[rec.pmid]
        scored = [(p, len(mine & w) / len(mine | w)) for p, w in words.items() if mine | w]
        return sorted(scored, key=lambda s: -s[1])[: n + 1]

    return similar


@contextmanager
def _serve(app: Any) -> Iterator[str]:
    """The server's E-utilities base URL (with the slash Bio.Entrez's URLs are joined to)."""
    with serve_in_thread(app) as base:
        yield base + "/"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus()


def _point_entrez_at(mp: pytest.MonkeyPatch, url: str) -> None:
    """Bio.Entrez keeps NCBI's URLs; its requests and DTD downloads reach ``url`` instead."""
    build, fetch = Entrez._build_request, EntrezParser.urlopen

    def build_request(cgi: str, *args: Any, **kwargs: Any) -> Request:
        return build(cgi.replace(NCBI, url), *args, **kwargs)

    def urlopen(target: str, *args: Any, **kwargs: Any) -> Any:
        return fetch(target.replace(NCBI, url), *args, **kwargs)

    mp.setattr(Entrez, "_build_request", build_request)
    mp.setattr(EntrezParser, "urlopen", urlopen)
    mp.setattr(Entrez, "email", "entrez-compat@example.org")
    mp.setattr(Entrez, "api_key", "local")  # Bio.Entrez then paces at 10 requests/s, not 3


@pytest.fixture(scope="module")
def base(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Our server as NCBI for Bio.Entrez; the DTDs it downloads are cached in a temporary folder."""
    app = create_eutils_app(corpus=corpus, speller=spell_correct, similar=_word_overlap(corpus))
    with _serve(app) as url, pytest.MonkeyPatch.context() as mp:
        _point_entrez_at(mp, url)
        mp.setattr(EntrezParser.DataHandler, "local_dtd_dir", str(tmp_path_factory.mktemp("dtds")))
        yield url


def _sample(name: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with (BIOPYTHON_SAMPLES / name).open("rb") as fh:
            return Entrez.read(fh)


def _shape(value: Any) -> Any:
    """The parsed structure without values: dict keys and the shape of list items."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


# ---- EInfo ------------------------------------------------------------------------------------------


def test_einfo_lists_the_databases(base: str) -> None:
    record = Entrez.read(Entrez.einfo())
    assert list(record["DbList"]) == ["pubmed", "pmc"]


@needs_shared
def test_einfo_pubmed_has_ncbis_shape(base: str, corpus: Corpus) -> None:
    ours = Entrez.read(Entrez.einfo(db="pubmed"))["DbInfo"][0]
    ncbi = _sample("einfo2.xml")["DbInfo"][0]
    assert _shape(ours) == _shape(ncbi)
    assert [f["Name"] for f in ours["FieldList"]] == [f["Name"] for f in ncbi["FieldList"]]
    assert [dict(link) for link in ours["LinkList"]] == [dict(link) for link in ncbi["LinkList"]]
    assert ours["Count"] == str(len(corpus.records))


# ---- ESearch, EPost, ESummary ------------------------------------------------------------------------


@needs_shared
def test_esearch_with_history(base: str) -> None:
    record = Entrez.read(Entrez.esearch(db="pubmed", term="breast cancer", retmax=5, usehistory="y"))
    assert set(_sample("esearch2.xml")) <= set(record) | {"ErrorList", "WarningList"}
    assert int(record["Count"]) > 5 and len(record["IdList"]) == 5 and record["RetMax"] == "5"
    assert record["WebEnv"].startswith("MCID_") and record["QueryKey"] == "1"
    fetched = Entrez.read(
        Entrez.esummary(db="pubmed", webenv=record["WebEnv"], query_key=record["QueryKey"], retmax=5)
    )
    assert [d["Id"] for d in fetched] == list(record["IdList"])


def test_epost_then_summaries_from_history(base: str) -> None:
    posted = Entrez.read(Entrez.epost("pubmed", id=f"{PMID},23149571"))
    assert posted["QueryKey"] == "1" and posted["WebEnv"].startswith("MCID_")
    summaries = Entrez.read(Entrez.esummary(db="pubmed", webenv=posted["WebEnv"], query_key="1"))
    assert [d["Id"] for d in summaries] == [PMID, "23149571"]


@needs_shared
def test_esummary_default_matches_the_recorded_items(base: str, corpus: Corpus) -> None:
    (ours,) = Entrez.read(Entrez.esummary(db="pubmed", id=PMID))
    (ncbi, *_) = _sample("esummary1.xml")
    assert list(ours) == list(ncbi)  # the same Items, in NCBI's order
    assert ours["Title"] == corpus.records[PMID].title and ours["Source"] == "Br J Cancer"
    streamed = list(Entrez.parse(Entrez.esummary(db="pubmed", id=f"{PMID},23149571")))
    assert [d["Id"] for d in streamed] == [PMID, "23149571"]


def test_esummary_v2_parses_with_the_dtd_biopython_downloads(base: str, corpus: Corpus) -> None:
    record = Entrez.read(Entrez.esummary(db="pubmed", id=f"{PMID},23149571", version="2.0"))
    docs = record["DocumentSummarySet"]["DocumentSummary"]
    assert docs[0].attributes["uid"] == PMID and docs[0]["Title"] == corpus.records[PMID].title
    assert docs[0]["Authors"][0]["Name"] == "Tsilidis KK" and "Journal Article" in docs[0]["PubType"]
    assert {"IdType": "pmc", "IdTypeN": "8", "Value": "PMC2994229"} in [
        dict(a) for a in docs[0]["ArticleIds"]
    ]
    assert docs[1].attributes["uid"] == "23149571"
    with pytest.raises(RuntimeError, match="cannot get document summary"):  # an unknown uid, as at NCBI
        Entrez.read(Entrez.esummary(db="pubmed", id="1", version="2.0"))
    # Biopython fetched the DTD from the DOCTYPE's NCBI address (our server) and cached it like NCBI's.
    assert (Path(EntrezParser.DataHandler.local_dtd_dir) / "esummary_pubmed.dtd").is_file()
    pmc = Entrez.read(Entrez.esummary(db="pmc", id="2994229", version="2.0"))
    assert pmc["DocumentSummarySet"]["DocumentSummary"][0]["Title"].startswith("Oral contraceptives")


# ---- EFetch --------------------------------------------------------------------------------------------


def test_efetch_pubmed_xml(base: str) -> None:
    record = Entrez.read(Entrez.efetch(db="pubmed", id=PMID, retmode="xml"))
    article = record["PubmedArticle"][0]["MedlineCitation"]
    assert article["PMID"] == PMID and article["Article"]["Journal"]["ISOAbbreviation"] == "Br J Cancer"


def test_efetch_medline_text(base: str, corpus: Corpus) -> None:
    handle = Entrez.efetch(db="pubmed", id=f"{PMID},23149571", rettype="medline", retmode="text")
    text = handle.read()
    assert isinstance(text, str) and text.startswith("\nPMID- ")  # plain text: Bio.Entrez decoded it
    records = list(Medline.parse(io.StringIO(text)))
    assert [r["PMID"] for r in records] == [PMID, "23149571"]
    rec = corpus.records[PMID]
    assert records[0]["TI"] == rec.title and records[0]["AU"][0] == "Tsilidis KK"
    assert records[0]["PMC"] == "PMC2994229" and records[0]["TA"] == "Br J Cancer"
    assert records[0]["SO"].startswith("Br J Cancer. 2010 Nov;103(11):1755-")
    _assert_medline_layout(text)


def test_efetch_abstract_text(base: str, corpus: Corpus) -> None:
    text = Entrez.efetch(db="pubmed", id=PMID, rettype="abstract", retmode="text").read()
    assert isinstance(text, str) and text.startswith("1. Br J Cancer. 2010 Nov;103(11):1755-")
    blocks = text.strip("\n").split("\n\n")
    assert " ".join(blocks[1].split()) == corpus.records[PMID].title
    assert blocks[2].startswith("Tsilidis KK, Allen NE, ") and blocks[2].endswith("Riboli E.")
    assert blocks[-1].splitlines()[-2:] == ["PMCID: PMC2994229", f"PMID: {PMID}"]
    assert all(len(line.rstrip(" ")) <= 80 for line in text.splitlines())


def test_efetch_pmc(base: str) -> None:
    (article,) = Entrez.read(Entrez.efetch(db="pmc", id="2994229"))
    assert {"front", "body", "back"} <= set(article)  # the full text, through Biopython's JATS DTDs


# ---- ELink -----------------------------------------------------------------------------------------------


def test_elink_pubmed_pmc(base: str) -> None:
    (linkset,) = Entrez.read(Entrez.elink(dbfrom="pubmed", db="pmc", linkname="pubmed_pmc", id=PMID))
    assert linkset["IdList"] == [PMID]
    assert [(d["LinkName"], [link["Id"] for link in d["Link"]]) for d in linkset["LinkSetDb"]] == [
        ("pubmed_pmc", ["2994229"])
    ]


def test_elink_similar_articles(base: str, corpus: Corpus) -> None:
    sets = Entrez.read(
        Entrez.elink(dbfrom="pubmed", db="pubmed", cmd="neighbor_score", id=[PMID, "23149571"])
    )
    assert [s["IdList"] for s in sets] == [[PMID], ["23149571"]]  # one LinkSet per id=, as NCBI
    dbs = {d["LinkName"]: d["Link"] for d in sets[0]["LinkSetDb"]}
    links = dbs["pubmed_pubmed"]
    assert links[0] == {"Id": PMID, "Score": "2147483647"}  # NCBI lists the source first
    scores = [int(link["Score"]) for link in links]
    assert scores == sorted(scores, reverse=True) and len(links) == 101
    assert all(link["Id"] in corpus.records for link in links)
    assert [link["Id"] for link in dbs["pubmed_pubmed_five"]] == [link["Id"] for link in links[:5]]


def test_elink_similar_articles_without_a_provider_is_an_empty_linkset(corpus: Corpus) -> None:
    app = create_eutils_app(corpus=corpus)
    with _serve(app) as url, pytest.MonkeyPatch.context() as mp:
        _point_entrez_at(mp, url)
        (linkset,) = Entrez.read(Entrez.elink(dbfrom="pubmed", db="pubmed", cmd="neighbor_score", id=PMID))
        spelled = Entrez.read(Entrez.espell(db="pubmed", term="brest cancr"))
    assert linkset["IdList"] == [PMID] and linkset["LinkSetDb"] == []
    assert spelled["CorrectedQuery"] == "brest cancr"


# ---- ESpell, ECitMatch ---------------------------------------------------------------------------------


@needs_shared
def test_espell_corrects(base: str) -> None:
    record = Entrez.read(Entrez.espell(db="pubmed", term="brest cancr"))
    assert record["Query"] == "brest cancr" and record["CorrectedQuery"] == "breast cancer"
    assert set(record) == set(_sample("espell.xml"))
    fine = Entrez.read(Entrez.espell(db="pubmed", term="breast cancer"))
    assert fine["CorrectedQuery"] == "breast cancer"


def test_ecitmatch(base: str) -> None:
    def cite(**fields: str) -> dict[str, str]:
        default = {"journal_title": "br j cancer", "year": "2010", "volume": "103", "first_page": "1755"}
        return {**default, "author_name": "tsilidis kk", **fields}

    bdata = [
        cite(key="full"),
        cite(key="journal title", journal_title="British journal of cancer", author_name=""),
        cite(key="wrong page", first_page="1"),
        cite(key="unknown journal", journal_title="journal of nothing"),
    ]
    text = Entrez.ecitmatch(db="pubmed", bdata=bdata).read()
    assert isinstance(text, str)
    assert [line.split("|")[-2:] for line in text.splitlines()] == [
        ["full", PMID],
        ["journal title", PMID],
        ["wrong page", "NOT_FOUND"],
        ["unknown journal", "NOT_FOUND;INVALID_JOURNAL"],
    ]
    assert text.splitlines()[0] == f"br j cancer|2010|103|1755|tsilidis kk|full|{PMID}"


# ---- The text formats on a recorded NCBI record ------------------------------------------------------


def _assert_medline_layout(text: str) -> None:
    """NCBI's MEDLINE layout: ``TAG - `` (tag padded to 4), six-space continuation lines, wrapped lines at
    most 88 characters with their trailing space, tags in NCBI's order."""
    tags: list[str] = []
    for line in text.splitlines():
        if not line:
            tags.append("")
            continue
        assert len(line) <= 88 and (line[:4].rstrip() or line.startswith("      ")), line
        if not line.startswith("      "):
            assert line[4:6] == "- ", line
            tags.append(line[:4].rstrip())
    author = MEDLINE_ORDER.index("FAU")  # FAU AU AUID AD repeat per author, CN stands in for one
    group = {t: author for t in ("FAU", "AU", "AUID", "AD", "CN")}
    for record in " ".join(tags).split("  "):
        order = [group.get(t, MEDLINE_ORDER.index(t)) for t in record.split()]
        assert order == sorted(order), record


@needs_shared
def test_medline_of_a_recorded_record() -> None:
    raw = (JATS_SAMPLES / "pubmed-29768149.xml").read_bytes()
    article = re.search(rb"<PubmedArticle>.*</PubmedArticle>", raw, re.DOTALL)
    assert article is not None
    text = pubmed_medline_text([article.group(0)])
    _assert_medline_layout(text)
    (rec,) = Medline.parse(io.StringIO(text))
    xml = Entrez.read(io.BytesIO(raw))["PubmedArticle"][0]
    cit = xml["MedlineCitation"]
    assert rec["TI"] == cit["Article"]["ArticleTitle"]
    assert rec["AB"].startswith("BACKGROUND: ")
    assert len(rec["AU"]) == len(cit["Article"]["AuthorList"]) and rec["DP"] == "2018 May 17"
    assert rec["PT"] == [str(p) for p in cit["Article"]["PublicationTypeList"]]
    assert len(rec["MH"]) == len(cit["MeshHeadingList"]) and rec["LID"] == "10.1056/NEJMoa1715274 [doi]"
    assert rec["SO"] == "N Engl J Med. 2018 May 17;378(20):1865-1876. doi: 10.1056/NEJMoa1715274."
    abstract = pubmed_abstract_text([article.group(0)])
    assert abstract.startswith("1. N Engl J Med. 2018 May 17;378(20):1865-1876. doi: 10.1056/NEJMoa1715274.")
    assert f"PMID: 29768149{' [Indexed for MEDLINE]' if rec['STAT'] == 'MEDLINE' else ''}\n" in abstract


@pytest.mark.slow  # loads MiniLM and the bundled dense index (built on first use when not cached)
def test_similar_articles_from_the_dense_index(corpus: Corpus) -> None:
    from app.factories import Models, similar_articles
    from app.settings import get_settings

    app = create_eutils_app(corpus=corpus, similar=similar_articles(Models(get_settings().offline())))
    with _serve(app) as url, pytest.MonkeyPatch.context() as mp:
        _point_entrez_at(mp, url)
        (linkset,) = Entrez.read(Entrez.elink(dbfrom="pubmed", db="pubmed", cmd="neighbor_score", id=PMID))
    links = {d["LinkName"]: d["Link"] for d in linkset["LinkSetDb"]}["pubmed_pubmed"]
    assert links[0] == {"Id": PMID, "Score": "2147483647"} and 50 < len(links) <= 101
    scores = [int(link["Score"]) for link in links[1:]]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] < scores[0] < 100_000_000

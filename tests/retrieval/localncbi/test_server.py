"""The local E-utilities server against the recorded NCBI samples and the EUTILS.md §14 checklist."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from lxml import etree

from retrieval.localncbi import (
    FaultSettings,
    HistoryServer,
    LocalServerSettings,
    create_eutils_app,
    eutils_transport,
)
from retrieval.localncbi._server import _RateLimiter
from retrieval.ncbi import (
    PMC_RESTRICTED_COMMENT,
    Corpus,
    MalformedResponse,
    load_corpus,
    parse_einfo,
    parse_elink_pubmed_pmc,
    parse_esearch,
    parse_esummary,
    parse_pmc_articles,
    parse_pubmed_articles,
)
from tests._paths import BIOPYTHON_SAMPLES, KLORTHO_SAMPLES, SHARED

BASE = "http://local/entrez/eutils/"
JATS_PMIDS = {"23149571": "3574550", "21045829": "2994229", "23029536": "3460867", "34527728": "8435807"}

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared data folder not available")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = create_eutils_app()
    async with httpx.AsyncClient(transport=eutils_transport(app), base_url=BASE) as c:
        c.app = app  # type: ignore[attr-defined]
        yield c


def _client(settings: LocalServerSettings) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=eutils_transport(create_eutils_app(settings)), base_url=BASE)


def _root(body: bytes) -> etree._Element:
    return etree.fromstring(body, etree.XMLParser(load_dtd=False, no_network=True, resolve_entities=False))


def _sample(path: Path) -> etree._Element:
    return _root(path.read_bytes())


def _paths(el: etree._Element, prefix: str = "") -> set[str]:
    """Every element path under ``el``: the structure without values or repetition."""
    here = f"{prefix}/{el.tag}" if prefix else str(el.tag)
    out = {here}
    for child in el:
        if isinstance(child.tag, str):
            out |= _paths(child, here)
    return out


def _prolog(body: bytes) -> bytes:
    return b"\n".join(body.split(b"\n")[:2])


def _keys(obj: Any) -> Any:
    """JSON structure: dict key sets (recursively, lists merged), values dropped."""
    if isinstance(obj, dict):
        return {k: _keys(v) for k, v in obj.items()}
    if isinstance(obj, list):
        merged: dict[str, Any] = {}
        for item in obj:
            if isinstance(item, dict):
                merged.update(_keys(item))
        return [merged] if merged else []
    return None


def _klortho(name: str) -> Any:
    return json.loads((KLORTHO_SAMPLES / name).read_text(encoding="utf-8"))


# ---- §14.1-3: paths, methods, defaults, prologs ----------------------------------------------------------


async def test_get_and_post_are_the_same(client: httpx.AsyncClient) -> None:
    params: list[tuple[str, str | int | float | bool | None]] = [
        ("db", "pubmed"),
        ("term", "cancer"),
        ("retmax", "5"),
        ("unknown_param", "x"),
        ("tool", "t"),
    ]
    get = await client.get("esearch.fcgi", params=params)
    post = await client.post("esearch.fcgi", data=dict(params))
    assert get.status_code == post.status_code == 200
    assert get.content == post.content
    assert get.headers["content-type"].startswith("text/xml")


async def test_post_keeps_repeated_ids(client: httpx.AsyncClient) -> None:
    body = "dbfrom=pubmed&db=pmc&linkname=pubmed_pmc&id=23149571&id=21645374"
    r = await client.post(
        "elink.fcgi", content=body, headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert len(_root(r.content).findall("LinkSet")) == 2


async def test_esearch_defaults(client: httpx.AsyncClient, corpus: Corpus) -> None:
    r = await client.get("esearch.fcgi", params={"term": "cancer"})  # no db: pubmed
    root = _root(r.content)
    ids = [e.text for e in root.iterfind("IdList/Id")]
    assert root.findtext("RetMax") == "20" and root.findtext("RetStart") == "0" and len(ids) == 20
    assert int(root.findtext("Count") or 0) > 20
    assert ids == sorted(ids, key=lambda i: -int(i or 0))  # descending PMID without sort (esearch1.xml)
    assert all(i in corpus.records for i in ids)
    capped = _root((await client.get("esearch.fcgi", params={"term": "cancer", "retmax": "99999"})).content)
    assert capped.findtext("RetMax") == capped.findtext("Count")


@needs_shared
@pytest.mark.parametrize(
    ("path", "params", "sample"),
    [
        ("esearch.fcgi", {"term": "cancer"}, "esearch1.xml"),
        ("esummary.fcgi", {"id": "12091962"}, "esummary1.xml"),
        ("elink.fcgi", {"id": "23149571", "db": "pmc"}, "elink1.xml"),
        ("einfo.fcgi", {"db": "pubmed"}, "einfo2.xml"),
        ("einfo.fcgi", {}, "einfo1.xml"),
        ("efetch.fcgi", {"id": "12091962", "retmode": "xml"}, "pubmed1.xml"),
        ("efetch.fcgi", {"db": "pmc", "id": "8435807"}, "efetch_pmc.xml"),
        ("epost.fcgi", {"id": "12091962"}, "epost1.xml"),
        ("espell.fcgi", {"term": "biopython"}, "espell.xml"),
    ],
)
async def test_prologs_are_the_2025_recordings(
    client: httpx.AsyncClient, path: str, params: dict[str, str], sample: str
) -> None:
    body = (await client.get(path, params=params)).content
    assert _prolog(body) == _prolog((BIOPYTHON_SAMPLES / sample).read_bytes())


# ---- §14.4 ESearch -----------------------------------------------------------------------------------------


@needs_shared
async def test_esearch_shape_matches_esearch1(client: httpx.AsyncClient) -> None:
    # A quoted phrase skips ATM, so like esearch1.xml the TranslationSet stays empty.
    body = (await client.get("esearch.fcgi", params={"term": '"cold chain"'})).content
    assert _paths(_root(body)) == _paths(_sample(BIOPYTHON_SAMPLES / "esearch1.xml"))
    parsed = parse_esearch(body)
    assert parsed.count > 0 and parsed.query_translation == '"cold chain"[All Fields]'


@needs_shared
async def test_zero_hits_is_exactly_esearch8(client: httpx.AsyncClient) -> None:
    body = (await client.get("esearch.fcgi", params={"db": "pubmed", "term": "abcXYZ"})).content
    assert body == (BIOPYTHON_SAMPLES / "esearch8.xml").read_bytes()


@needs_shared
async def test_esearch_json_shapes(client: httpx.AsyncClient) -> None:
    hist = (
        await client.get("esearch.fcgi", params={"term": "cancer", "usehistory": "y", "retmode": "json"})
    ).json()
    sample = _klortho("esearch.pubmed.json")
    assert set(hist) == set(sample) == {"header", "esearchresult"}
    assert hist["header"] == sample["header"]
    # 2025 PubMed responses carry no TranslationStack (§5.2); everything else matches the prototype.
    assert set(hist["esearchresult"]) == set(sample["esearchresult"]) - {"translationstack"}
    res = hist["esearchresult"]
    assert all(isinstance(res[k], str) for k in ("count", "retmax", "retstart", "querykey", "webenv"))
    assert re.fullmatch(r"MCID_[0-9a-f]{24}", res["webenv"])

    partial = (
        await client.get("esearch.fcgi", params={"term": "neoplasms[mh] OR fleegle[mh]", "retmode": "json"})
    ).json()
    sample = _klortho("esearch.error.json")["esearchresult"]
    assert set(partial["esearchresult"]) == set(sample) - {
        "translationstack"
    }  # E7: errorlist, no warninglist
    assert partial["esearchresult"]["errorlist"] == {"phrasesnotfound": ["fleegle[mh]"], "fieldsnotfound": []}

    # §5.4 [3P] live not-found shape, key for key.
    live: dict[str, Any] = {
        "header": {"type": "esearch", "version": "0.3"},
        "esearchresult": {
            "count": "0",
            "retmax": "0",
            "retstart": "0",
            "idlist": [],
            "translationset": [],
            "querytranslation": "(TB03JUN2009E__Contig_2000[All Fields])",
            "errorlist": {"phrasesnotfound": ["TB03JUN2009E__Contig_2000"], "fieldsnotfound": []},
            "warninglist": {
                "phrasesignored": [],
                "quotedphrasesnotfound": [],
                "outputmessages": ["No items found."],
            },
        },
    }
    miss = (
        await client.get("esearch.fcgi", params={"term": "TB03JUN2009E__Contig_2000", "retmode": "json"})
    ).json()
    assert _keys(miss) == _keys(live)
    assert miss["esearchresult"]["errorlist"] == live["esearchresult"]["errorlist"]
    assert miss["esearchresult"]["warninglist"] == live["esearchresult"]["warninglist"]

    quoted = (
        await client.get(
            "esearch.fcgi", params={"term": '"Nonexistent Termxyz Qwerty"[mh]', "retmode": "json"}
        )
    ).json()["esearchresult"]
    assert "errorlist" not in quoted  # E8
    assert quoted["warninglist"]["quotedphrasesnotfound"] and quoted["warninglist"]["outputmessages"]

    bad = (
        await client.get("esearch.fcgi", params={"db": "fleegle", "term": "cat", "retmode": "json"})
    ).json()
    assert bad == _klortho("esearch.baderror.json")


async def test_atm_translation_for_cancer(client: httpx.AsyncClient) -> None:
    parsed = parse_esearch((await client.get("esearch.fcgi", params={"term": "cancer"})).content)
    assert parsed.translations and parsed.translations[0][0] == "cancer"
    assert '"neoplasms"[MeSH Terms]' in parsed.translations[0][1]
    assert '"cancer"[All Fields]' in parsed.translations[0][1]


async def test_neoplasms_mesh_and_date_range(client: httpx.AsyncClient, corpus: Corpus) -> None:
    descriptors = json.loads((corpus.path / "mesh" / "mesh_c04_neoplasms.json").read_text())["descriptors"]  # type: ignore[operator]
    c04 = {d["name"] for d in descriptors} | {d["name_2019"] for d in descriptors if d["name_2019"]}
    expected = sorted(
        (
            r.pmid
            for r in corpus.records.values()
            if r.year is not None and 2010 <= r.year <= 2015 and any(m.descriptor in c04 for m in r.mesh)
        ),
        key=int,
        reverse=True,
    )
    body = (
        await client.get(
            "esearch.fcgi", params={"term": "neoplasms[mh] AND 2010:2015[dp]", "retmax": "10000"}
        )
    ).content
    parsed = parse_esearch(body)
    assert parsed.count == len(expected) > 0
    assert list(parsed.ids) == expected


async def test_date_parameters_are_rendered(client: httpx.AsyncClient) -> None:
    r = await client.get("esearch.fcgi", params={"term": "cancer", "mindate": "2010", "maxdate": "2015/06"})
    translation = parse_esearch(r.content).query_translation or ""
    # The day of the upper bound is the query engine's business (_index); the rendering is ours.
    assert re.search(r" AND 2010/01/01:2015/06/\d\d\[Date - Publication\]$", translation)
    r = await client.get("esearch.fcgi", params={"term": "cancer", "reldate": "60", "datetype": "edat"})
    assert "[Date - Entry]" in (parse_esearch(r.content).query_translation or "")


async def test_paging_and_count(client: httpx.AsyncClient) -> None:
    full = parse_esearch(
        (await client.get("esearch.fcgi", params={"term": "cancer", "retmax": "10000"})).content
    )
    pages: list[str] = []
    for start in range(0, full.count, 50):
        page = parse_esearch(
            (
                await client.get(
                    "esearch.fcgi", params={"term": "cancer", "retstart": str(start), "retmax": "50"}
                )
            ).content
        )
        assert page.retstart == start and page.count == full.count
        pages += page.ids
    assert pages == list(full.ids)
    beyond = _root(
        (await client.get("esearch.fcgi", params={"term": "cancer", "retstart": "100000"})).content
    )
    assert beyond.findtext("RetMax") == "0" and beyond.find("IdList") is not None

    count = (await client.get("esearch.fcgi", params={"term": "cancer", "rettype": "count"})).content
    assert [el.tag for el in _root(count).iter()] == ["eSearchResult", "Count"]
    assert _root(count).findtext("Count") == str(full.count)
    count_json = (
        await client.get("esearch.fcgi", params={"term": "cancer", "rettype": "count", "retmode": "json"})
    ).json()
    assert count_json["esearchresult"] == {"count": str(full.count)}


async def test_query_syntax_error_is_an_error_body(client: httpx.AsyncClient) -> None:
    r = await client.get("esearch.fcgi", params={"term": "(cancer AND"})
    assert r.status_code == 200
    root = _root(r.content)
    assert root.tag == "eSearchResult" and root.findtext("ERROR")
    r = await client.get("esearch.fcgi", params={"db": "pubmed"})
    assert _root(r.content).findtext("ERROR") == "Empty term and query_key - nothing todo"


async def test_pmc_search_returns_pmc_uids(client: httpx.AsyncClient) -> None:
    parsed = parse_esearch(
        (await client.get("esearch.fcgi", params={"db": "pmc", "term": "colorectal"})).content
    )
    assert "2994229" in parsed.ids


# ---- History ----------------------------------------------------------------------------------------------


async def test_history_round_trip(client: httpx.AsyncClient) -> None:
    first = parse_esearch(
        (
            await client.get("esearch.fcgi", params={"term": "cancer", "usehistory": "y", "retmax": "5"})
        ).content
    )
    assert first.query_key == "1" and first.webenv and re.fullmatch(r"MCID_[0-9a-f]{24}", first.webenv)
    hist = {"query_key": first.query_key, "WebEnv": first.webenv}

    fetched = parse_pubmed_articles(
        (
            await client.get("efetch.fcgi", params={**hist, "retmode": "xml", "retstart": "0", "retmax": "5"})
        ).content
    )
    assert [r.pmid for r in fetched] == list(first.ids)
    summaries = parse_esummary((await client.get("esummary.fcgi", params={**hist, "retmax": "5"})).content)
    assert [s.uid for s in summaries] == list(first.ids)
    second_page = parse_pubmed_articles(
        (await client.get("efetch.fcgi", params={**hist, "retstart": "5", "retmax": "3"})).content
    )
    assert len(second_page) == 3 and second_page[0].pmid not in first.ids

    # A second search in the same WebEnv gets key 2; "#1 AND term" and query_key+term both AND the sets.
    second = parse_esearch(
        (
            await client.get(
                "esearch.fcgi", params={"term": "#1 AND screening", "WebEnv": first.webenv, "usehistory": "y"}
            )
        ).content
    )
    assert second.query_key == "2" and second.webenv == first.webenv
    direct = parse_esearch(
        (await client.get("esearch.fcgi", params={"term": "cancer AND screening"})).content
    )
    assert second.count == direct.count > 0
    keyed = parse_esearch(
        (await client.get("esearch.fcgi", params={"term": "screening", **hist, "usehistory": "y"})).content
    )
    assert keyed.count == direct.count

    bad = await client.get("efetch.fcgi", params={"query_key": "9", "WebEnv": first.webenv})
    assert _root(bad.content).tag == "eFetchResult" and _root(bad.content).findtext("ERROR")


async def test_epost_then_fetch(client: httpx.AsyncClient) -> None:
    root = _root((await client.get("epost.fcgi", params={"id": "12091962,9997"})).content)
    key, webenv = root.findtext("QueryKey"), root.findtext("WebEnv")
    assert key == "1" and webenv and webenv.startswith("MCID_")
    recs = parse_pubmed_articles(
        (await client.get("efetch.fcgi", params={"query_key": key, "WebEnv": webenv})).content
    )
    assert [r.pmid for r in recs] == ["12091962", "9997"]
    err = _root((await client.get("epost.fcgi", params={"db": "nothing", "id": "1"})).content)
    assert [e.text for e in err.iterfind("ERROR")] == ["Invalid db name specified: nothing"]  # E2, epost2.xml
    err = _root((await client.get("epost.fcgi", params={"id": "x"})).content)
    assert len(err.findall("ERROR")) == 2  # E11, epost3.xml


def test_history_server_is_bounded() -> None:
    history = HistoryServer(max_envs=2, max_keys=2)
    _k1, env1 = history.store("pubmed", ["1"])
    _k2, env2 = history.store("pubmed", ["2"])
    history.store("pubmed", ["3"])
    assert env1 not in history and env2 in history
    history.store("pubmed", ["4"], env2)
    k, _ = history.store("pubmed", ["5"], env2)
    assert k == "3" and history.get(env2, "1") is None and history.get(env2, "3") == ("pubmed", ("5",))


# ---- §14.5-6 EFetch ---------------------------------------------------------------------------------------


@needs_shared
async def test_efetch_pubmed_returns_recorded_records(client: httpx.AsyncClient) -> None:
    body = (
        await client.get(
            "efetch.fcgi", params={"id": "12091962,9997", "retmode": "xml", "rettype": "abstract"}
        )
    ).content
    assert body == (BIOPYTHON_SAMPLES / "pubmed1.xml").read_bytes()  # byte-identical to the recording
    as_json = (await client.get("efetch.fcgi", params={"id": "12091962,9997", "retmode": "json"})).content
    assert as_json == body  # EFetch has no JSON


@needs_shared
async def test_efetch_element_vocabulary(client: httpx.AsyncClient) -> None:
    recorded: set[str] = set()
    for i in (1, 2, 4, 5):
        recorded |= {
            str(e.tag) for e in _sample(BIOPYTHON_SAMPLES / f"pubmed{i}.xml").iter() if isinstance(e.tag, str)
        }
    body = (await client.get("efetch.fcgi", params={"id": "21645374,1571683,23149571,34527728"})).content
    ours = {str(e.tag) for e in _root(body).iter() if isinstance(e.tag, str)}
    assert ours <= recorded
    records = parse_pubmed_articles(body)
    assert [r.pmid for r in records] == ["21645374", "1571683", "23149571", "34527728"]
    assert records[2].pmcid == "PMC3574550"


async def test_efetch_edge_cases(client: httpx.AsyncClient) -> None:
    empty = await client.get("efetch.fcgi", params={"id": "1,2", "retmode": "xml"})
    assert (
        empty.status_code == 200
        and _root(empty.content).tag == "PubmedArticleSet"
        and len(_root(empty.content)) == 0
    )
    none = _root((await client.get("efetch.fcgi", params={"db": "pubmed"})).content)
    assert none.tag == "eFetchResult" and none.findtext("ERROR") == "Empty id list - nothing todo"
    invalid = _root((await client.get("efetch.fcgi", params={"db": "fleegle", "id": "1"})).content)
    assert invalid.findtext("ERROR") == "Invalid db name specified: fleegle"
    uilist = await client.get(
        "efetch.fcgi", params={"id": "9997,1,12091962", "rettype": "uilist", "retmode": "text"}
    )
    assert uilist.text == "9997\n12091962\n"
    docsum = _root((await client.get("efetch.fcgi", params={"id": "9997", "rettype": "docsum"})).content)
    assert docsum.tag == "eSummaryResult" and docsum.findtext("DocSum/Id") == "9997"


@needs_shared
async def test_efetch_pmc(client: httpx.AsyncClient) -> None:
    body = (await client.get("efetch.fcgi", params={"db": "pmc", "id": "8435807"})).content
    assert body == (BIOPYTHON_SAMPLES / "efetch_pmc.xml").read_bytes()  # byte-identical to the recording
    prefixed = (await client.get("efetch.fcgi", params={"db": "pmc", "id": "PMC8435807"})).content
    assert prefixed == body
    both = parse_pmc_articles(
        (await client.get("efetch.fcgi", params={"db": "pmc", "id": "PMC3574550,2994229"})).content
    )
    assert [a.pmcid for a in both] == ["PMC3574550", "PMC2994229"]
    assert all(a.sections and not a.body_withheld for a in both)
    assert _paths(_root(body)) == _paths(_sample(BIOPYTHON_SAMPLES / "efetch_pmc.xml"))


async def test_restricted_pmc_article_has_no_body() -> None:
    async with _client(LocalServerSettings(restricted_pmcids=("PMC3574550",))) as c:
        body = (await c.get("efetch.fcgi", params={"db": "pmc", "id": "3574550,3460867"})).content
    assert body.count(PMC_RESTRICTED_COMMENT) == 1
    assert b"</front>" + PMC_RESTRICTED_COMMENT in body
    restricted, open_ = parse_pmc_articles(body)
    assert restricted.body_withheld and not restricted.sections and restricted.abstract
    assert not open_.body_withheld and open_.sections


# ---- §14.7 ESummary ---------------------------------------------------------------------------------------


@needs_shared
async def test_esummary_v1_matches_esummary1(client: httpx.AsyncClient) -> None:
    body = (await client.get("esummary.fcgi", params={"id": "12091962,9997"})).content
    ours = _root(body).find("DocSum")
    sample = _sample(BIOPYTHON_SAMPLES / "esummary1.xml").find("DocSum")
    assert ours is not None and sample is not None
    assert [(i.get("Name"), i.get("Type")) for i in ours.iterfind("Item")] == [
        (i.get("Name"), i.get("Type")) for i in sample.iterfind("Item")
    ]
    summaries = parse_esummary(body)
    assert [s.uid for s in summaries] == ["12091962", "9997"]
    assert summaries[0].title == "The treatment of AIDS behind the walls of correctional facilities."
    assert "Review" in summaries[0].pubtypes


@needs_shared
async def test_esummary_json_and_v2_shapes(client: httpx.AsyncClient) -> None:
    got = (await client.get("esummary.fcgi", params={"id": "12091962,1", "retmode": "json"})).json()
    sample = _klortho("esummary.pubmed.json")
    assert set(got) == set(sample) and got["header"] == sample["header"]
    assert got["result"]["uids"] == ["12091962", "1"]
    assert set(got["result"]["12091962"]) == set(sample["result"]["5683731"])
    err_sample = _klortho("esummary.pmcerror.json")["result"]["1"]
    assert got["result"]["1"] == err_sample  # E10

    pmc = (
        await client.get("esummary.fcgi", params={"db": "pmc", "id": "3574550,1", "retmode": "json"})
    ).json()
    pmc_sample = _klortho("esummary.pmcerror.json")["result"]
    assert set(pmc["result"]["3574550"]) == set(pmc_sample["254085"])
    assert {"idtype": "pmcid", "value": "PMC3574550"} in pmc["result"]["3574550"]["articleids"]
    assert pmc["result"]["1"] == pmc_sample["1"]

    v2 = _root((await client.get("esummary.fcgi", params={"id": "12091962", "version": "2.0"})).content)
    v2_sample = etree.parse(str(KLORTHO_SAMPLES / "esummary.pubmed.xml")).getroot()
    ours_ds, sample_ds = (
        v2.find("DocumentSummarySet/DocumentSummary"),
        v2_sample.find("DocumentSummarySet/DocumentSummary"),
    )
    assert ours_ds is not None and sample_ds is not None
    assert [c.tag for c in ours_ds] == [c.tag for c in sample_ds]
    v2_pmc = _root(
        (await client.get("esummary.fcgi", params={"db": "pmc", "id": "3574550,1", "version": "2.0"})).content
    )
    pmc_xml = etree.parse(str(KLORTHO_SAMPLES / "esummary.pmcerror.xml")).getroot()
    # DbBuild came after the prototype samples (NCBI sends it since the 20160808 DTDs)
    assert _paths(v2_pmc) == _paths(pmc_xml) | {"eSummaryResult/DocumentSummarySet/DbBuild"}
    assert parse_esummary(etree.tostring(v2_pmc))[0].pmcid == "PMC3574550"


@needs_shared
async def test_esummary_errors(client: httpx.AsyncClient) -> None:
    body = (await client.get("esummary.fcgi", params={"db": "pubmed"})).content
    sample = (BIOPYTHON_SAMPLES / "esummary8.xml").read_bytes()
    assert _prolog(body) == _prolog(sample) and _paths(_root(body)) == _paths(_root(sample))
    assert _root(body).findtext("ERROR") == "Neither query_key nor id specified"  # E9
    bad = (await client.get("esummary.fcgi", params={"db": "fleegle", "id": "1", "retmode": "json"})).json()
    assert bad == _klortho("esummary.error.json")  # E3: an array, not an object
    bad_xml = _root((await client.get("esummary.fcgi", params={"db": "fleegle", "id": "1"})).content)
    assert bad_xml.findtext("ERROR") == "Invalid db name specified: fleegle"


# ---- §14.8 ELink ------------------------------------------------------------------------------------------


@needs_shared
async def test_elink_pubmed_pmc_one_to_one(client: httpx.AsyncClient) -> None:
    params: list[tuple[str, str | int | float | bool | None]] = [
        ("dbfrom", "pubmed"),
        ("db", "pmc"),
        ("linkname", "pubmed_pmc"),
    ]
    params += [("id", p) for p in [*JATS_PMIDS, "21645374", "27797938"]]
    body = (await client.get("elink.fcgi", params=params)).content
    root = _root(body)
    assert len(root.findall("LinkSet")) == 6  # one LinkSet per id= parameter
    mapping = parse_elink_pubmed_pmc(body)
    for pmid, pmc in JATS_PMIDS.items():
        assert mapping[pmid] == f"PMC{pmc}"
    assert mapping.get("21645374") is None  # E16: no PMC copy, no LinkSetDb
    assert mapping.get("27797938") is None  # PMC5442267 is not in the local pmc db
    no_link = next(ls for ls in root.iterfind("LinkSet") if ls.findtext("IdList/Id") == "21645374")
    assert no_link.find("LinkSetDb") is None
    sample_paths = _paths(_sample(BIOPYTHON_SAMPLES / "elink1.xml"))
    assert _paths(root) <= sample_paths and "eLinkResult/LinkSet/LinkSetDb/Link/Id" in _paths(root)


async def test_elink_batch_and_link_names(client: httpx.AsyncClient, corpus: Corpus) -> None:
    cited = next(iter(sorted(corpus.cited_in_pmc)))
    params = {"dbfrom": "pubmed", "db": "pmc", "id": f"23149571,{cited}"}
    root = _root((await client.get("elink.fcgi", params=params)).content)
    linksets = root.findall("LinkSet")
    assert len(linksets) == 1  # a comma list is one batched LinkSet
    assert [e.text for e in linksets[0].iterfind("IdList/Id")] == ["23149571", cited]
    names = [d.findtext("LinkName") for d in linksets[0].iterfind("LinkSetDb")]
    assert names == ["pubmed_pmc", "pubmed_pmc_refs"]  # several LinkSetDb without linkname, kept distinct
    assert {d.findtext("DbTo") for d in linksets[0].iterfind("LinkSetDb")} == {"pmc"}
    only_refs = _root(
        (await client.get("elink.fcgi", params={**params, "linkname": "pubmed_pmc_refs"})).content
    )
    assert [d.findtext("LinkName") for d in only_refs.iterfind("LinkSet/LinkSetDb")] == ["pubmed_pmc_refs"]

    js = (await client.get("elink.fcgi", params={**params, "retmode": "json"})).json()
    assert js["header"]["type"] == "elink"
    assert js["linksets"][0]["ids"] == ["23149571", cited]
    assert [d["linkname"] for d in js["linksets"][0]["linksetdbs"]] == ["pubmed_pmc", "pubmed_pmc_refs"]
    none = (await client.get("elink.fcgi", params={"db": "pmc", "id": "21645374", "retmode": "json"})).json()
    assert "linksetdbs" not in none["linksets"][0]

    back = _root(
        (await client.get("elink.fcgi", params={"dbfrom": "pmc", "db": "pubmed", "id": "PMC3574550"})).content
    )
    assert back.findtext("LinkSet/LinkSetDb/LinkName") == "pmc_pubmed"
    assert back.findtext("LinkSet/LinkSetDb/Link/Id") == "23149571"


async def test_elink_neighbor_history(client: httpx.AsyncClient) -> None:
    params = {"dbfrom": "pubmed", "db": "pmc", "id": "23149571,21045829", "cmd": "neighbor_history"}
    root = _root((await client.get("elink.fcgi", params=params)).content)
    key, webenv = root.findtext("LinkSet/LinkSetDbHistory/QueryKey"), root.findtext("LinkSet/WebEnv")
    articles = parse_pmc_articles(
        (await client.get("efetch.fcgi", params={"db": "pmc", "query_key": key, "WebEnv": webenv})).content
    )
    assert {a.pmcid for a in articles} == {"PMC3574550", "PMC2994229"}


# ---- §14.9-10 EInfo and errors -----------------------------------------------------------------------------


@needs_shared
async def test_einfo(client: httpx.AsyncClient, corpus: Corpus) -> None:
    dblist = _root((await client.get("einfo.fcgi")).content)
    assert [e.text for e in dblist.iterfind("DbList/DbName")] == ["pubmed", "pmc"]
    body = (await client.get("einfo.fcgi", params={"db": "pubmed"})).content
    ours, sample = _root(body), _sample(BIOPYTHON_SAMPLES / "einfo2.xml")
    assert _paths(ours) == _paths(sample)
    assert [f.findtext("Name") for f in ours.iterfind("DbInfo/FieldList/Field")] == [
        f.findtext("Name") for f in sample.iterfind("DbInfo/FieldList/Field")
    ]
    assert ours.findtext("DbInfo/Count") == str(len(corpus.records))
    info = parse_einfo(body).info
    assert info is not None and info.count == len(corpus.records)
    assert {"pubmed_pmc", "pubmed_pmc_refs"} <= {link.name for link in info.links}
    pmc = parse_einfo((await client.get("einfo.fcgi", params={"db": "pmc"})).content).info
    assert pmc is not None and pmc.count == len(corpus.pmc)
    js = (await client.get("einfo.fcgi", params={"db": "pubmed", "retmode": "json"})).json()
    assert js["einforesult"]["dbinfo"][0]["count"] == str(len(corpus.records))
    bad = (await client.get("einfo.fcgi", params={"db": "fleegle", "retmode": "json"})).json()
    assert bad == _klortho("einfo.error.json")  # E4
    bad_xml = _root((await client.get("einfo.fcgi", params={"db": "fleegle"})).content)
    assert bad_xml.findtext("ERROR") == "Can not retrieve DbInfo for db=fleegle"


@pytest.mark.parametrize(
    ("endpoint", "root_tag"),
    [
        ("esearch", "eSearchResult"),
        ("esummary", "eSummaryResult"),
        ("efetch", "eFetchResult"),
        ("elink", "eLinkResult"),
        ("epost", "ePostResult"),
    ],
)
async def test_invalid_db_per_endpoint(client: httpx.AsyncClient, endpoint: str, root_tag: str) -> None:
    r = await client.get(f"{endpoint}.fcgi", params={"db": "fleegle", "id": "1", "term": "cat"})
    assert r.status_code == 200
    root = _root(r.content)
    assert root.tag == root_tag and root.findtext("ERROR") == "Invalid db name specified: fleegle"


# ---- §14.11 rate limiting ---------------------------------------------------------------------------------


async def test_429_body_headers_and_keys() -> None:
    app = create_eutils_app(LocalServerSettings(rate_limit=True))
    async with httpx.AsyncClient(transport=eutils_transport(app), base_url=BASE) as c:
        responses = [await c.get("einfo.fcgi") for _ in range(5)]
        keyed = [await c.get("einfo.fcgi", params={"api_key": "K"}) for _ in range(11)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in responses] == ["2", "1", "0", "0", "0"]
    limited = responses[3]
    assert limited.headers["X-RateLimit-Limit"] == "3"
    assert "retry-after" not in limited.headers
    assert limited.headers["content-type"].startswith("application/json")
    assert limited.json() == {
        "error": "API rate limit exceeded",
        "api-key": "127.0.0.1",
        "count": "4",
        "limit": "3",
    }
    assert list(limited.json()) == ["error", "api-key", "count", "limit"]
    assert [r.status_code for r in keyed] == [200] * 10 + [429]
    assert keyed[-1].json()["api-key"] == "K" and keyed[-1].json()["limit"] == "10"
    log = list(app.state.request_log)
    assert len(log) == 16 and {e.endpoint for e in log} == {"einfo"}
    assert [e.key for e in log].count("K") == 11
    assert all(b.time >= a.time for a, b in itertools.pairwise(log))


def test_sliding_window() -> None:
    limiter = _RateLimiter()
    assert [limiter.hit("k", 3, t)[0] for t in (0.0, 0.1, 0.2, 0.3)] == [True, True, True, False]
    assert limiter.hit("k", 3, 0.99)[0] is False
    assert limiter.hit("k", 3, 1.05)[0] is True  # the request at t=0.0 left the window
    assert limiter.hit("k", 3, 1.06)[0] is False
    assert limiter.hit("other", 3, 1.06)[0] is True  # keys are independent


def test_sliding_window_at_a_fractional_rate_holds_no_more_than_it_in_any_second() -> None:
    limiter = _RateLimiter()
    # 2.5/s: 2 in any one second (a 0.8 s window, 2 / 2.5, let 4 through between 0 and 0.85).
    assert [limiter.hit("k", 2.5, t)[0] for t in (0.0, 0.0, 0.8, 0.85)] == [True, True, False, False]
    assert limiter.hit("k", 2.5, 1.0)[0] is True
    # Below 1/s: one request per 1 / rate seconds.
    assert [limiter.hit("slow", 0.5, t)[0] for t in (0.0, 1.5, 2.0)] == [True, False, True]


async def test_rate_limit_off_by_default(client: httpx.AsyncClient) -> None:
    statuses = [(await client.get("einfo.fcgi")).status_code for _ in range(10)]
    assert statuses == [200] * 10
    assert len(client.app.state.request_log) == 10  # type: ignore[attr-defined]


# ---- §14.12 faults ----------------------------------------------------------------------------------------


async def test_fault_500() -> None:
    async with _client(LocalServerSettings(faults=FaultSettings(error_500_rate=1))) as c:
        r = await c.get("esearch.fcgi", params={"term": "cancer"})
    assert r.status_code == 500 and r.text.startswith("<html>")


async def test_fault_html_page() -> None:
    async with _client(LocalServerSettings(faults=FaultSettings(html_rate=1))) as c:
        r = await c.get("efetch.fcgi", params={"id": "12091962"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.text.startswith(
        "<html><head><title>PmFetch response</title></head><body>\n<pre>\nPubmed-entry ::= {"
    )
    assert "pmid 12091962," in r.text
    with pytest.raises(MalformedResponse):
        parse_pubmed_articles(r.content)


async def test_fault_truncated_xml(client: httpx.AsyncClient) -> None:
    full = (await client.get("einfo.fcgi", params={"db": "pubmed"})).content
    async with _client(LocalServerSettings(faults=FaultSettings(truncated_rate=1))) as c:
        cut = (await c.get("einfo.fcgi", params={"db": "pubmed"})).content
    assert full.startswith(cut) and len(cut) == len(full) // 2
    with pytest.raises(etree.XMLSyntaxError):
        _root(cut)


async def test_fault_ratelimit_with_200() -> None:
    async with _client(LocalServerSettings(faults=FaultSettings(ratelimit_2xx_rate=1))) as c:
        r = await c.get("esearch.fcgi", params={"term": "cancer"})
    assert r.status_code == 200 and r.json()["error"] == "API rate limit exceeded"


async def test_fault_latency_and_stall() -> None:
    async with _client(LocalServerSettings(faults=FaultSettings(latency_ms_min=50, latency_ms_max=60))) as c:
        t0 = time.monotonic()
        assert (await c.get("einfo.fcgi")).status_code == 200
        assert time.monotonic() - t0 >= 0.05
    async with _client(LocalServerSettings(faults=FaultSettings(stall_rate=1, stall_s=0.2))) as c:
        t0 = time.monotonic()
        assert (await c.get("einfo.fcgi")).status_code == 200
        assert time.monotonic() - t0 >= 0.2
    async with _client(LocalServerSettings(faults=FaultSettings(stall_rate=1, stall_s=30))) as c:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(c.get("einfo.fcgi"), timeout=0.1)


async def test_esearch_faults_find_nothing_and_say_why_as_ncbi_would() -> None:
    term = '"Glioma"[mh] AND cancer NOT gliomas[tiab]'
    cases = {
        "errors": FaultSettings(esearch_not_found_rate=1),
        "warnings": FaultSettings(esearch_quoted_not_found_rate=1),
        "none": FaultSettings(esearch_empty_rate=1),
    }
    for listed, faults in cases.items():
        async with _client(LocalServerSettings(faults=faults)) as c:
            xml = parse_esearch((await c.get("esearch.fcgi", params={"term": term})).content)
            js = parse_esearch(
                (await c.get("esearch.fcgi", params={"term": term, "retmode": "json"})).content
            )
            other = await c.get("einfo.fcgi", params={"db": "pubmed"})  # ESearch-only faults
        assert xml == js and xml.count == 0 and xml.ids == () and xml.output_messages == ("No items found.",)
        assert xml.phrases_not_found == (
            ("Glioma[mh]", "cancer", "gliomas[tiab]") if listed == "errors" else ()
        )
        quoted = ('"Glioma"[mh]', '"cancer"', '"gliomas"[tiab]')
        assert xml.quoted_phrases_not_found == (quoted if listed == "warnings" else ())
        assert other.status_code == 200 and b"<DbInfo>" in other.content


async def test_faults_are_seeded() -> None:
    faults = FaultSettings(seed=7, error_500_rate=0.3, html_rate=0.2, ratelimit_2xx_rate=0.2)

    async def statuses() -> list[tuple[int, str]]:
        async with _client(LocalServerSettings(faults=faults)) as c:
            out = []
            for _ in range(30):
                r = await c.get("einfo.fcgi")
                out.append((r.status_code, r.headers["content-type"].split(";")[0]))
            return out

    first, second = await statuses(), await statuses()
    assert first == second
    assert len(set(first)) > 1  # a mix of faults and real answers


def test_module_exports() -> None:
    import retrieval.localncbi._server as server_mod
    import retrieval.ncbi._corpus as corpus_mod
    import retrieval.ncbi._envelopes as envelopes_mod
    import retrieval.ncbi._esummary as esummary_mod
    import retrieval.ncbi._pmc as pmc_mod
    import retrieval.ncbi._pubmed as pubmed_mod
    import retrieval.ncbi._xml as xml_mod

    for mod in (server_mod, corpus_mod, envelopes_mod, esummary_mod, pmc_mod, pubmed_mod, xml_mod):
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.{name}"


async def test_similar_articles_json_and_text_formats_stay_opt_in(corpus: Corpus) -> None:
    async def similar(rec: Any, n: int) -> list[tuple[str, float]]:
        return [("23149571", 0.5), ("21045829", 0.25), ("99999999", 0.9)]  # an unheld PMID is dropped

    app = create_eutils_app(corpus=corpus, similar=similar)
    async with httpx.AsyncClient(transport=eutils_transport(app), base_url=BASE) as c:
        params = {"dbfrom": "pubmed", "db": "pubmed", "cmd": "neighbor_score", "id": "12091962"}
        js = (await c.get("elink.fcgi", params={**params, "retmode": "json"})).json()
        (db, five) = js["linksets"][0]["linksetdbs"]
        assert db["linkname"] == "pubmed_pubmed" and five["linkname"] == "pubmed_pubmed_five"
        assert db["links"] == [
            {"id": "12091962", "score": 2147483647},
            {"id": "23149571", "score": 50_000_000},
            {"id": "21045829", "score": 25_000_000},
        ]
        # Our own client asks for XML: rettype=medline with retmode=xml stays PubMed XML.
        xml = await c.get("efetch.fcgi", params={"id": "21045829", "rettype": "medline", "retmode": "xml"})
        assert xml.content.startswith(b"<?xml") and xml.headers["content-type"].startswith("text/xml")
        text = await c.get("efetch.fcgi", params={"id": "21045829", "rettype": "medline"})
        assert text.headers["content-type"].startswith("text/plain") and "\nPMID- 21045829\n" in text.text


def test_ecitmatch_ambiguous_and_placeholder_journals(corpus: Corpus) -> None:
    raw = corpus.raw["21045829"]
    twins = Corpus(
        records={},
        raw={
            "21045829": raw,
            "1": raw.replace(b">21045829</PMID>", b">1</PMID>"),
            "1571683": corpus.raw["1571683"],
        },
        pmc={},
        pmc_raw={},
        pmid_to_pmcid={},
        pmcid_to_pmid={},
    )
    assert twins.match_citation("Br J Cancer", "2010", "103", "1755") == "AMBIGUOUS (2 citations)"
    assert twins.match_citation("british journal of cancer", first_page="1") == "NOT_FOUND"
    # 1571683 is a PubMedQA record whose journal is the corpus placeholder "Unknown" (corpus README).
    assert corpus.citations and twins.match_citation("Unknown", "1992") == "NOT_FOUND;INVALID_JOURNAL"

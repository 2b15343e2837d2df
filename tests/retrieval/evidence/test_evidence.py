"""Metadata stage: one batched fetch, filters, D1/D2/D3 classification, depth policy, PMC fallbacks.

Everything runs against the real local E-utilities server: the bundled corpus, or a small corpus written
to ``tmp_path`` (PubMed records built here, pointing at copies of the bundled JATS articles).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest

import retrieval
from retrieval import EutilsSettings, LocalServerSettings, ServerError
from retrieval.eutils import LOCAL_BASE_URL, EutilsClient
from retrieval.evidence import (
    DROP_NO_ABSTRACT,
    DROP_NO_YEAR,
    DROP_NOT_FOUND,
    DROP_OUT_OF_WINDOW,
    DROP_RETRACTED,
    FALLBACK_LINK_FAILED,
    FALLBACK_NO_LINK,
    FALLBACK_PMC_FAILED,
    FALLBACK_PMC_MISSING,
    FALLBACK_WITHHELD,
    Dropped,
    EvidenceBuilder,
    EvidenceDoc,
    EvidenceSet,
    EvidenceSettings,
    PolicyRow,
    TextUnit,
    classify,
    policy_table,
)
from retrieval.localncbi import create_eutils_app, eutils_transport
from retrieval.ncbi import (
    AbstractSection,
    PubDate,
    PublicationType,
    PubmedRecord,
    load_corpus,
    pubmed_article_xml,
    pubmed_articleset,
)
from retrieval.search import ArmHit, FusedHit, Provenance, dense_hits, rrf

BUNDLED_PMC = Path(retrieval.__file__).parent / "corpus" / "pmc"

JOURNAL_ARTICLE = PublicationType("Journal Article", "D016428")
REVIEW = PublicationType("Review", "D016454")
SYSTEMATIC_REVIEW = PublicationType("Systematic Review", "D000078182")
RCT = PublicationType("Randomized Controlled Trial", "D016449")
RETRACTED = PublicationType("Retracted Publication", "D016441")

# The tmp corpus.
REVIEW_PMID = "90000001"  # Review -> PMC3574550: D2, full text
SR_PMID = "90000002"  # Systematic Review -> PMC3460867: D2, full text
RCT_PMID = "90000003"  # RCT with PMC8435807: D3, abstract
LINKED_PMID = "21045829"  # no ArticleId pmc, but PMC2994229's JATS names it: D1, reachable by ELink
PLAIN_PMID = "90000004"  # D1, no PMC copy anywhere
RETRACTED_PMID = "90000005"
NO_YEAR_PMID = "90000006"
OLD_PMID = "90000007"  # 1995
MISSING_PMC_PMID = "90000008"  # Review pointing at a PMCID the server does not hold
NO_ABSTRACT_PMID = "90000009"


def make_record(
    pmid: str,
    *types: PublicationType,
    pmcid: str | None = None,
    year: int | None = 2015,
    abstract: bool = True,
) -> PubmedRecord:
    sections = (
        AbstractSection(f"Breast cancer background for {pmid}.", "BACKGROUND", "BACKGROUND"),
        AbstractSection(f"Chemotherapy results for {pmid}.", "RESULTS", "RESULTS"),
    )
    return PubmedRecord(
        pmid=pmid,
        title=f"Breast cancer study {pmid}",
        abstract=sections if abstract else (),
        journal="Journal of Tests",
        pub_date=PubDate(year=year) if year else PubDate(medline_date="Unknown"),
        publication_types=types or (JOURNAL_ARTICLE,),
        languages=("eng",),
        doi=f"10.1000/{pmid}",
        pmcid=pmcid,
    )


TMP_RECORDS = (
    make_record(REVIEW_PMID, JOURNAL_ARTICLE, REVIEW, pmcid="PMC3574550", year=2015),
    make_record(SR_PMID, SYSTEMATIC_REVIEW, pmcid="PMC3460867", year=2016),
    make_record(RCT_PMID, JOURNAL_ARTICLE, RCT, pmcid="PMC8435807", year=2014),
    make_record(LINKED_PMID, JOURNAL_ARTICLE, year=2012),
    make_record(PLAIN_PMID, JOURNAL_ARTICLE, year=2013),
    make_record(RETRACTED_PMID, JOURNAL_ARTICLE, RETRACTED, year=2015),
    make_record(NO_YEAR_PMID, JOURNAL_ARTICLE, year=None),
    make_record(OLD_PMID, JOURNAL_ARTICLE, year=1995),
    make_record(MISSING_PMC_PMID, REVIEW, pmcid="PMC9999999", year=2017),
    make_record(NO_ABSTRACT_PMID, REVIEW, pmcid="PMC3574550", year=2018, abstract=False),
)


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("evidence_corpus")
    (root / "pubmed").mkdir()
    (root / "pmc").mkdir()
    (root / "pubmed" / "records.xml").write_bytes(
        pubmed_articleset(pubmed_article_xml(r) for r in TMP_RECORDS)
    )
    for name in ("PMC3574550", "PMC3460867", "PMC8435807", "PMC2994229"):
        shutil.copy(BUNDLED_PMC / f"{name}.xml", root / "pmc" / f"{name}.xml")
    return root


class Recording(httpx.AsyncBaseTransport):
    """Records (endpoint, db) of every request on its way to the in-process server."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        if request.method == "POST":
            params.update({k: v[0] for k, v in parse_qs(request.content.decode()).items()})
        endpoint = request.url.path.rsplit("/", 1)[-1].removesuffix(".fcgi")
        self.calls.append((endpoint, params.get("db", "")))
        return await self.inner.handle_async_request(request)


def local(server: LocalServerSettings) -> tuple[EutilsClient, Recording]:
    recording = Recording(eutils_transport(create_eutils_app(server)))
    settings = EutilsSettings(base_url=LOCAL_BASE_URL, requests_per_second=500.0)
    return EutilsClient(settings, transport=recording), recording


def boolean_arm(*pmids: str) -> list[FusedHit]:
    return rrf({"boolean": [ArmHit(p, tier=1, query="q") for p in pmids]})


def doc(result: EvidenceSet, pmid: str) -> EvidenceDoc:
    (found,) = [d for d in result.docs if d.pmid == pmid]
    return found


# ------------------------------------------------------------------ classification


@pytest.mark.parametrize(
    ("types", "pmcid", "expected"),
    [
        ((JOURNAL_ARTICLE, REVIEW), "PMC1", "D2"),
        ((JOURNAL_ARTICLE, REVIEW), None, "D1"),
        ((PublicationType("Systematic Review (renamed)", "D000078182"),), "PMC1", "D2"),  # UI decides
        ((PublicationType("meta-analysis"),), "PMC1", "D2"),  # no UI: name, any case
        ((PublicationType("Practice Guideline", "D017065"),), "PMC1", "D2"),
        ((PublicationType("GUIDELINE"),), "PMC1", "D2"),
        ((PublicationType("Review", "D016428"),), "PMC1", "D3"),  # a UI present outranks the name
        ((JOURNAL_ARTICLE, RCT), "PMC1", "D3"),
        ((JOURNAL_ARTICLE, RCT), None, "D1"),
        ((JOURNAL_ARTICLE,), None, "D1"),
        ((), None, "D1"),
    ],
)
def test_classify_by_publication_type(
    types: tuple[PublicationType, ...], pmcid: str | None, expected: str
) -> None:
    record = PubmedRecord(pmid="1", title="t", publication_types=types, pmcid=pmcid)
    assert classify(record) == expected


def test_classify_real_corpus_records() -> None:
    records = load_corpus().records
    assert classify(records["12091962"]) == "D1"  # a Review, but PubMed knows no PMC copy
    assert classify(records["23149571"]) == "D3"  # research article with PMC3574550
    assert classify(records["34527728"]) == "D3"  # Published Erratum with PMC8435807
    assert classify(records["21645374"]) == "D1"  # PubMedQA record


def test_policy_table_defaults_to_table_2() -> None:
    rows = policy_table()
    assert [(r.doc_class, r.depth) for r in rows] == [
        ("D1", "abstract"),
        ("D2", "fulltext"),
        ("D3", "abstract"),
    ]
    assert all(isinstance(r, PolicyRow) and r.description for r in rows)
    custom = policy_table(EvidenceSettings(depth_d3="fulltext"))
    assert custom[2].depth == "fulltext"


# ------------------------------------------------------------------ bundled corpus


async def test_bundled_corpus_one_efetch_for_all_candidates_and_drop_reasons() -> None:
    client, recording = local(LocalServerSettings())
    pmids = ["23149571", "12091962", "21645374", "11748933", "99999999", "29768149"]
    result = await EvidenceBuilder(client, EvidenceSettings()).build(boolean_arm(*pmids))
    assert recording.calls == [("efetch", "pubmed")]  # one batch; no D2 here, so no PMC traffic
    assert result.pmids == ("23149571", "21645374", "11748933", "29768149")
    assert list(result.dropped) == [
        Dropped("12091962", DROP_NO_ABSTRACT),
        Dropped("99999999", DROP_NOT_FOUND),
    ]
    assert result.candidates == 6 and result.fetched == 5
    assert result.by_class == {"D3": 1, "D1": 3} and result.fulltext == 0 and result.fallbacks == 0
    d3 = doc(result, "23149571")
    assert d3.doc_class == "D3" and d3.depth_used == "abstract" and d3.pmcid == "PMC3574550"
    assert d3.depth_fallback_reason is None and d3.license is None
    assert d3.url == "https://pubmed.ncbi.nlm.nih.gov/23149571/"
    assert (
        d3.year == 2013
        and d3.journal == "Annals of Oncology"
        and d3.publication_types == ("Journal Article",)
    )
    (unit,) = d3.text_units
    assert unit.kind == "abstract" and unit.source == "pubmed" and unit.index == 0
    assert (
        unit.text.startswith("BACKGROUND: Understanding socio-demographic") and "\nCONCLUSIONS: " in unit.text
    )
    await client.aclose()


async def test_fused_rank_score_and_provenance_reach_the_documents() -> None:
    client, _ = local(LocalServerSettings())
    boolean = [ArmHit("21645374", tier=1, query="q1"), ArmHit("11748933", tier=2, query="q2")]
    dense = dense_hits([("11748933", 0.8), ("29768149", 0.7)])
    fused = rrf({"boolean": boolean, "dense": dense})
    result = await EvidenceBuilder(client).build(fused)
    assert result.pmids == ("11748933", "21645374", "29768149")  # ordered by fused rank
    top = result.docs[0]
    assert top.fused_rank == 1 and top.rrf_score == pytest.approx(1 / 62 + 1 / 61)
    assert top.provenance == (Provenance("boolean", 2, None, 2, "q2"), Provenance("dense", 1, 0.8))
    assert doc(result, "29768149").provenance == (Provenance("dense", 2, 0.7),)
    await client.aclose()


async def test_max_candidates_caps_what_is_fetched() -> None:
    client, recording = local(LocalServerSettings())
    fused = boolean_arm("21645374", "11748933", "29768149")
    result = await EvidenceBuilder(client, EvidenceSettings(max_candidates=2)).build(fused)
    assert result.pmids == ("21645374", "11748933") and result.candidates == 2
    assert recording.calls == [("efetch", "pubmed")]
    await client.aclose()


async def test_pubmed_efetch_failure_propagates(monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = local(LocalServerSettings())

    async def down(*args: object, **kwargs: object) -> list[PubmedRecord]:
        raise ServerError("efetch: HTTP 503", endpoint="efetch", status=503)

    monkeypatch.setattr(client, "efetch_pubmed", down)
    with pytest.raises(ServerError):
        await EvidenceBuilder(client).build(boolean_arm("21645374"))
    await client.aclose()


async def test_no_candidates_means_no_requests() -> None:
    client, recording = local(LocalServerSettings())
    result = await EvidenceBuilder(client).build([])
    assert result.docs == () and result.dropped == () and recording.calls == []
    await client.aclose()


# ------------------------------------------------------------------ depth policy (tmp corpus)


async def test_default_depth_policy_per_class(corpus_dir: Path) -> None:
    client, recording = local(LocalServerSettings(corpus_dir=corpus_dir))
    pmids = [REVIEW_PMID, SR_PMID, RCT_PMID, LINKED_PMID, PLAIN_PMID, MISSING_PMC_PMID, NO_ABSTRACT_PMID]
    result = await EvidenceBuilder(client).build(boolean_arm(*pmids))
    # Every D2 record carries its PMCID, so no ELink; one PubMed EFetch and one PMC EFetch.
    assert recording.calls == [("efetch", "pubmed"), ("efetch", "pmc")]
    assert list(result.dropped) == [Dropped(NO_ABSTRACT_PMID, DROP_NO_ABSTRACT)]
    assert result.by_class == {"D2": 3, "D3": 1, "D1": 2}

    review = doc(result, REVIEW_PMID)
    assert (
        review.doc_class == "D2" and review.depth_used == "fulltext" and review.depth_fallback_reason is None
    )
    assert review.pmcid == "PMC3574550"
    assert (
        review.license is not None and review.license.url == "http://creativecommons.org/licenses/by-nc/3.0"
    )
    first, *sections = review.text_units
    assert first.kind == "abstract" and first.source == "pubmed"  # the abstract leads the full text
    assert [u.label for u in sections][:5] == ["introduction", "data", "analysis", "results", "discussion"]
    assert sections[1].path == ("methods", "data")  # heading paths kept
    assert all(u.kind == "section" and u.source == "pmc" and u.text.strip() for u in sections)
    assert [u.index for u in review.text_units] == list(range(len(review.text_units)))

    sr = doc(result, SR_PMID)
    assert sr.doc_class == "D2" and sr.depth_used == "fulltext" and len(sr.text_units) > 10

    for pmid, doc_class in ((RCT_PMID, "D3"), (LINKED_PMID, "D1"), (PLAIN_PMID, "D1")):
        d = doc(result, pmid)
        assert d.doc_class == doc_class and d.depth_used == "abstract" and d.depth_fallback_reason is None
        assert [u.kind for u in d.text_units] == ["abstract"]
        assert d.text_units[0].text == f"BACKGROUND: Breast cancer background for {pmid}.\n" + (
            f"RESULTS: Chemotherapy results for {pmid}."
        )
    assert doc(result, LINKED_PMID).pmcid is None  # not looked up: D1 stays abstract

    missing = doc(result, MISSING_PMC_PMID)
    assert missing.depth_used == "abstract" and missing.depth_fallback_reason == FALLBACK_PMC_MISSING
    assert result.fulltext == 2 and result.fallbacks == 1
    await client.aclose()


async def test_configurable_depth_override(corpus_dir: Path) -> None:
    client, recording = local(LocalServerSettings(corpus_dir=corpus_dir))
    settings = EvidenceSettings(depth_d1="fulltext", depth_d2="abstract")
    result = await EvidenceBuilder(client, settings).build(boolean_arm(REVIEW_PMID, LINKED_PMID, PLAIN_PMID))
    # D1 records lack the PMCID: one ELink for both, then one PMC EFetch for the one that links.
    assert recording.calls == [("efetch", "pubmed"), ("elink", "pmc"), ("efetch", "pmc")]
    linked = doc(result, LINKED_PMID)
    assert linked.doc_class == "D1" and linked.depth_used == "fulltext" and linked.pmcid == "PMC2994229"
    labels = [u.label for u in linked.text_units if u.kind == "section"]
    assert labels[-3:] == ["Materials and Methods", "Results", "Discussion"]
    assert all(u.label for u in linked.text_units)  # an untitled section still gets a label
    plain = doc(result, PLAIN_PMID)
    assert plain.depth_used == "abstract" and plain.depth_fallback_reason == FALLBACK_NO_LINK
    review = doc(result, REVIEW_PMID)
    assert review.depth_used == "abstract" and review.depth_fallback_reason is None
    await client.aclose()


async def test_publisher_withheld_body_falls_back_to_the_abstract(corpus_dir: Path) -> None:
    client, _ = local(LocalServerSettings(corpus_dir=corpus_dir, restricted_pmcids=("PMC3574550",)))
    result = await EvidenceBuilder(client).build(boolean_arm(REVIEW_PMID, SR_PMID))
    review = doc(result, REVIEW_PMID)
    assert review.doc_class == "D2" and review.depth_used == "abstract"
    assert review.depth_fallback_reason == FALLBACK_WITHHELD and review.license is None
    assert review.text_units == (
        TextUnit(
            "abstract",
            f"BACKGROUND: Breast cancer background for {REVIEW_PMID}.\n"
            f"RESULTS: Chemotherapy results for {REVIEW_PMID}.",
            "Abstract",
            ("Abstract",),
            "pubmed",
            0,
        ),
    )
    assert doc(result, SR_PMID).depth_used == "fulltext"  # only the withheld article is affected
    await client.aclose()


async def test_pmc_and_elink_failures_degrade_without_failing_the_build(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = local(LocalServerSettings(corpus_dir=corpus_dir))

    async def down(*args: object, **kwargs: object) -> object:
        raise ServerError("HTTP 502", status=502)

    monkeypatch.setattr(client, "efetch_pmc", down)
    monkeypatch.setattr(client, "elink_pubmed_pmc", down)
    settings = EvidenceSettings(depth_d1="fulltext")
    result = await EvidenceBuilder(client, settings).build(boolean_arm(REVIEW_PMID, LINKED_PMID))
    assert doc(result, REVIEW_PMID).depth_fallback_reason == FALLBACK_PMC_FAILED
    assert doc(result, LINKED_PMID).depth_fallback_reason == FALLBACK_LINK_FAILED
    assert all(d.depth_used == "abstract" and d.text_units for d in result.docs)
    assert result.fallbacks == 2
    await client.aclose()


# ------------------------------------------------------------------ filters (tmp corpus)


async def test_date_window_is_pushed_into_esearch_and_enforced_on_dense_hits(corpus_dir: Path) -> None:
    client, recording = local(LocalServerSettings(corpus_dir=corpus_dir))
    # Boolean arm: the window goes to ESearch, so it never sees the 1995 or undated records.
    search = await client.esearch("breast cancer", retmax=50, mindate="2010", maxdate="2016")
    assert search.ids and OLD_PMID not in search.ids and NO_YEAR_PMID not in search.ids
    assert ("esearch", "pubmed") in recording.calls
    # Dense arm: the index knows no dates, so out-of-window records arrive and must be dropped after fetch.
    dense = dense_hits([(OLD_PMID, 0.9), (NO_YEAR_PMID, 0.8), (MISSING_PMC_PMID, 0.7), (REVIEW_PMID, 0.6)])
    fused = rrf({"boolean": [ArmHit(p) for p in search.ids], "dense": dense})
    result = await EvidenceBuilder(client).build(fused, min_year=2010, max_year=2016)
    assert set(search.ids) - {RETRACTED_PMID} <= set(result.pmids)
    assert all(d.year is not None and 2010 <= d.year <= 2016 for d in result.docs)
    reasons = {d.pmid: d.reason for d in result.dropped}
    assert reasons[OLD_PMID] == DROP_OUT_OF_WINDOW
    assert reasons[NO_YEAR_PMID] == DROP_NO_YEAR
    assert reasons[MISSING_PMC_PMID] == DROP_OUT_OF_WINDOW  # 2017
    assert result.dropped_by_reason[DROP_OUT_OF_WINDOW] == 2
    # Open-ended windows work, and without a window undated records stay.
    recent = await EvidenceBuilder(client).build(fused, min_year=2016)
    assert set(recent.pmids) >= {SR_PMID, MISSING_PMC_PMID} and OLD_PMID not in recent.pmids
    unbounded = await EvidenceBuilder(client).build(fused)
    assert {OLD_PMID, NO_YEAR_PMID} <= set(unbounded.pmids)
    with pytest.raises(ValueError, match="min_year"):
        await EvidenceBuilder(client).build(fused, min_year=2020, max_year=2010)
    await client.aclose()


async def test_retracted_publications_are_excluded(corpus_dir: Path) -> None:
    client, _ = local(LocalServerSettings(corpus_dir=corpus_dir))
    fused = boolean_arm(RETRACTED_PMID, PLAIN_PMID)
    result = await EvidenceBuilder(client).build(fused)
    assert result.pmids == (PLAIN_PMID,)
    assert list(result.dropped) == [Dropped(RETRACTED_PMID, DROP_RETRACTED)]
    kept = await EvidenceBuilder(client, EvidenceSettings(exclude_retracted=False)).build(fused)
    assert kept.pmids == (RETRACTED_PMID, PLAIN_PMID)
    await client.aclose()


async def test_records_without_abstract_can_be_kept_when_configured(corpus_dir: Path) -> None:
    client, _ = local(LocalServerSettings(corpus_dir=corpus_dir))
    settings = EvidenceSettings(require_abstract=False)
    result = await EvidenceBuilder(client, settings).build(boolean_arm(NO_ABSTRACT_PMID))
    (kept,) = result.docs
    # D2 with PMC3574550: full text without a leading abstract unit.
    assert kept.depth_used == "fulltext" and kept.text_units[0].kind == "section"
    await client.aclose()

"""The world builder over a small sample of every shared input, built in tmp_path from the real files."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest
from lxml import etree
from typer.testing import CliRunner

from app.cli import app
from retrieval.evidence import classify
from retrieval.ncbi import (
    INFERRED_MARK,
    LiteratureIndex,
    PublicationType,
    PubmedRecord,
    clear_corpus_cache,
    load_corpus,
    parse_pubmed_articles,
    pubmed_article_xml,
)
from retrieval.vocab import MeshVocabulary
from retrieval.world import (
    MANIFEST_FILE,
    PROVENANCE_FILE,
    WORLD_MESH_FILE,
    WorldInputError,
    build_world,
)
from tests._paths import SHARED

DATA = SHARED / "data"
DTD = DATA / "eutils_samples" / "ncbi_dtds_from_biopython" / "pubmed_250101.dtd"
needs_shared = pytest.mark.skipif(not (DATA / "cohen2006").is_dir(), reason="shared data not available")
N = 3  # records per source, plus that source's retracted ones


def _retracted() -> set[str]:
    return set((DATA / "retractions" / "pubmed_retractions.tsv").read_text().split())


def _copy(rel: str, dst: Path) -> None:
    (dst / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / rel, dst / rel)


def _tar_sample(rel: str, dst: Path, keep: set[str], prefixes: tuple[str, ...]) -> None:
    """A tar with the first N members under each prefix plus the members whose stem is in ``keep``."""
    out = io.BytesIO()
    with tarfile.open(DATA / rel) as src, tarfile.open(fileobj=out, mode="w:gz") as tar:
        taken = dict.fromkeys(prefixes, 0)
        for m in src.getmembers():
            prefix = next((p for p in prefixes if m.name.startswith(p)), None)
            if not m.isfile() or prefix is None:
                continue
            stem = Path(m.name).name.split(".")[0]
            if taken[prefix] < N or stem in keep:
                taken[prefix] += 1
                tar.addfile(m, src.extractfile(m))
    (dst / rel).parent.mkdir(parents=True, exist_ok=True)
    (dst / rel).write_bytes(out.getvalue())


def _csv_sample(rel: str, dst: Path, pmids: set[str]) -> None:
    text = gzip.decompress((DATA / rel).read_bytes()).decode()
    reader = csv.DictReader(io.StringIO(text))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=reader.fieldnames or [])
    writer.writeheader()
    writer.writerows(r for r in reader if r["pubmedID"] in pmids)
    (dst / rel).parent.mkdir(parents=True, exist_ok=True)
    (dst / rel).write_bytes(gzip.compress(buf.getvalue().encode(), mtime=0))


def _medline_sample(rel: str, dst: Path, n: int) -> None:
    data = gzip.decompress((DATA / rel).read_bytes())
    tag = b"MedlineCitation" if b"<MedlineCitationSet" in data[:2000] else b"PubmedArticle"
    items = re.findall(rb"<" + tag + rb"[\s>].*?</" + tag + rb">", data, re.DOTALL)[:n]
    first = re.search(rb"<" + tag + rb"[\s>]", data)
    assert first is not None
    head = data[: first.start()]
    root = head.rsplit(b"<", 1)[1].split(b">")[0]
    body = head + b"\n".join(items) + b"\n</" + root + b">\n"
    (dst / rel).parent.mkdir(parents=True, exist_ok=True)
    (dst / rel).write_bytes(gzip.compress(body, mtime=0))


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared-data folder with a few records of every input (and the retracted ones among them)."""
    if not (DATA / "cohen2006").is_dir():
        pytest.skip("shared data not available")
    dst = tmp_path_factory.mktemp("data")
    retracted = _retracted()
    for rel in (
        "mesh/mesh_c04_neoplasms.json",
        "mesh/all_descriptors_2015/descriptor_names.tsv",
        "mesh/all_descriptors_2015/tree_numbers.tsv.gz",
        "retractions/pubmed_retractions.tsv",
    ):
        _copy(rel, dst)
    pq = json.loads((DATA / "pubmedqa/ori_pqal.json").read_bytes())
    keep = sorted(pq)[:N] + [p for p in pq if p in retracted][:1]
    (dst / "pubmedqa").mkdir()
    (dst / "pubmedqa/ori_pqal.json").write_text(json.dumps({k: pq[k] for k in keep}))
    # Cohen: one review (online + raw), its first rows, and one retracted row.
    online = gzip.decompress((DATA / "cohen2006/online/Opiods.csv.gz").read_bytes()).decode()
    ids = [r["pubmedID"] for r in csv.DictReader(io.StringIO(online))]
    pmids = set(ids[:N]) | set([p for p in ids if p in retracted][:1])
    for folder in ("online", "raw"):
        _csv_sample(f"cohen2006/{folder}/Opiods.csv.gz", dst, pmids)
    _tar_sample("evidence_inference/pmc_xml_files.tar.gz", dst, set(), ("xml_files/",))
    _tar_sample("hallmarks_of_cancer/hoc_text_labels.tar.gz", dst, set(), ("text/",))
    for name, n in (("medline16n0902.xml.gz", N), ("medsamp2014.xml.gz", 2), ("pubmed21n1000.xml.gz", N)):
        _medline_sample(f"medline_samples/{name}", dst, n)
    return dst


@pytest.fixture(scope="module")
def world(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("world")
    calls: list[tuple[int, int]] = []
    build_world(sample, out, lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 8) and calls[-1] == (8, 8)
    return out


def _articles(world: Path) -> dict[str, etree._Element]:
    out = {}
    for f in sorted((world / "pubmed").glob("*.xml")):
        for art in etree.parse(str(f)).getroot().iterfind("PubmedArticle"):
            out[art.findtext("MedlineCitation/PMID")] = art
    return out


def _provenance(world: Path) -> dict[str, dict]:
    lines = (world / PROVENANCE_FILE).read_text().splitlines()
    return {(d := json.loads(line))["pmid"]: d for line in lines}


@needs_shared
def test_every_pubmed_file_validates_against_the_pubmed_dtd(world: Path) -> None:
    dtd = etree.DTD(str(DTD))
    files = sorted((world / "pubmed").glob("*.xml"))
    assert {f.stem for f in files} == {
        "cohen2006",
        "evidence_inference",
        "hallmarks_of_cancer",
        "medline_samples",
        "pubmedqa",
    }
    for f in files:
        root = etree.parse(str(f)).getroot()
        assert dtd.validate(root), (f.name, dtd.error_log.filter_from_errors()[:3])
    assert len(list((world / "pmc").glob("PMC*.nxml"))) == N


@needs_shared
def test_every_placeholder_is_recorded_in_the_provenance(world: Path) -> None:
    arts, prov = _articles(world), _provenance(world)
    assert set(arts) == set(prov)
    seen: set[str] = set()
    for pmid, art in arts.items():
        syn = prov[pmid]["synthesized"]
        if art.findtext("MedlineCitation/MedlineJournalInfo/MedlineTA") == "Unknown":
            assert "Journal" in syn, pmid
            seen.add("Journal")
        if "und" in [el.text for el in art.iterfind("MedlineCitation/Article/Language")]:
            assert "Language" in syn, pmid
            seen.add("Language")
        if art.findtext("MedlineCitation/Article/Journal/JournalIssue/PubDate/MedlineDate") == "Unknown":
            assert "PubDate" in syn, pmid
            seen.add("PubDate")
        if not (art.findtext("MedlineCitation/Article/ArticleTitle") or "").strip():
            assert "ArticleTitle" in syn, pmid
            seen.add("ArticleTitle")
        no_ui = [d.text for d in art.iterfind(".//DescriptorName") if not d.get("UI")]
        if no_ui:
            assert syn["DescriptorName/@UI"]["names"] == no_ui, pmid
            seen.add("UI")
        ptl = art.find("MedlineCitation/Article/PublicationTypeList")
        marks = [c for c in ptl if c.tag is etree.Comment and c.text == INFERRED_MARK]
        if marks:
            assert "PublicationType" in syn, pmid
            seen.add("PublicationType")
        if prov[pmid]["source"] == "medline_samples":
            assert not marks and "Journal" not in syn  # complete records: nothing synthesised
    assert seen == {"Journal", "Language", "PubDate", "ArticleTitle", "UI", "PublicationType"}


@needs_shared
def test_inferred_types_are_flagged_in_the_loaded_world_and_ignored_by_search_and_policy(world: Path) -> None:
    corpus, prov = load_corpus(world), _provenance(world)
    trials = [r for p, r in corpus.records.items() if prov[p]["source"] == "evidence_inference"]
    assert len(trials) == N
    for rec in trials:
        rct = [pt for pt in rec.publication_types if pt.name == "Randomized Controlled Trial"]
        assert rct and rct[0].inferred and rct[0].ui == "D016449"
    assert corpus.pubmed_index.search("randomized controlled trial[pt]").count == 0
    real_rcts = [
        r.pmid
        for r in corpus.records.values()
        if any(pt.name == "Randomized Controlled Trial" and not pt.inferred for pt in r.publication_types)
    ]
    assert corpus.pubmed_index.search("randomized controlled trial[pt]").count == len(real_rcts)
    # the placeholder journal is no journal either
    placeholder_journal = [p for p, d in prov.items() if "Journal" in d["synthesized"]]
    assert placeholder_journal
    assert all(corpus.records[p].journal_iso is None for p in placeholder_journal)
    assert corpus.pubmed_index.search("unknown[ta]").count == 0
    # the world's MeSH file explodes descriptors outside Neoplasms
    vocab = MeshVocabulary.load(extra=[world / WORLD_MESH_FILE])
    assert "Analgesics, Opioid" in vocab.descendants("Analgesics")


def test_inferred_publication_type_round_trips_through_pubmed_xml_and_the_policy() -> None:
    review = PublicationType("Review", "D016454", inferred=True)
    rec = PubmedRecord(pmid="1", title="t", publication_types=(review,), pmcid="PMC1")
    xml = pubmed_article_xml(rec)
    assert INFERRED_MARK.encode() in xml
    (parsed,) = parse_pubmed_articles(b"<PubmedArticleSet>" + xml + b"</PubmedArticleSet>")
    assert parsed.publication_types == (review,)
    assert classify(parsed) == "D3"  # an inferred Review is no review: not D2
    real_type = PublicationType("Review", "D016454")
    real = PubmedRecord(pmid="2", title="t", publication_types=(real_type,), pmcid="PMC2")
    assert classify(real) == "D2"
    index = LiteratureIndex([parsed, real], MeshVocabulary.load())
    assert index.search("review[pt]").ids == ("2",)


@needs_shared
def test_retracted_records_carry_ncbis_type_taken_from_the_list(world: Path) -> None:
    retracted = _retracted()
    manifest = json.loads((world / MANIFEST_FILE).read_text())
    corpus, prov = load_corpus(world), _provenance(world)
    expected = sorted((p for p in corpus.records if p in retracted), key=int)
    assert len(expected) >= 2  # the sample holds a retracted PubMedQA and Cohen record
    assert manifest["retracted_pmids"] == expected
    for pmid in expected:
        rec = corpus.records[pmid]
        assert rec.retracted
        assert ("Retracted Publication", "D016441") in [(pt.name, pt.ui) for pt in rec.publication_types]
        assert not any(pt.inferred for pt in rec.publication_types if pt.name == "Retracted Publication")
        why = prov[pmid]["synthesized"].get("PublicationType[Retracted Publication]", "")
        assert "retractions/pubmed_retractions.tsv" in why or prov[pmid]["source"] == "medline_samples"
    assert not any(r.retracted for p, r in corpus.records.items() if p not in retracted and p not in prov)


@needs_shared
def test_build_is_byte_identical_and_the_manifest_hashes_its_inputs(
    sample: Path, world: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    build_world(sample, again)
    files = sorted(p.relative_to(world) for p in world.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for rel in files:
        assert (world / rel).read_bytes() == (again / rel).read_bytes(), rel
    manifest = json.loads((world / MANIFEST_FILE).read_text())
    assert {i["path"] for i in manifest["inputs"]} >= {
        "pubmedqa/ori_pqal.json",
        "retractions/pubmed_retractions.tsv",
        "evidence_inference/pmc_xml_files.tar.gz",
    }
    counts = manifest["counts"]
    assert counts["medline_samples_skipped"] == {"medline_samples/medsamp2014.xml.gz": 2}
    assert counts["pubmed_records"] == len(_articles(world))
    assert counts["inferred_rct"] == N
    build_world(sample, again)  # a rebuild over a previous world replaces it
    assert (again / MANIFEST_FILE).read_bytes() == (world / MANIFEST_FILE).read_bytes()


def test_missing_or_malformed_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WorldInputError, match="not found"):
        build_world(tmp_path / "nope", tmp_path / "out")
    (tmp_path / "data").mkdir()
    with pytest.raises(WorldInputError, match=r"lacks (cohen2006|pubmedqa)"):
        build_world(tmp_path / "data", tmp_path / "out")
    result = CliRunner().invoke(app, ["corpus", "build", "--from", str(tmp_path / "nope"), "--out", "x"])
    assert result.exit_code == 2
    assert "WorldInputError" in result.output


@needs_shared
def test_malformed_json_input_exits_2(sample: Path, tmp_path: Path) -> None:
    bad = tmp_path / "data"
    shutil.copytree(sample, bad)
    (bad / "pubmedqa/ori_pqal.json").write_text("{not json")
    result = CliRunner().invoke(app, ["corpus", "build", "--from", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "ori_pqal.json: not valid JSON" in result.output


@needs_shared
def test_the_index_of_a_large_corpus_is_cached_by_content_and_reused(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import retrieval.ncbi._corpus as corpus_module  # the threshold is an implementation detail

    monkeypatch.setattr(corpus_module, "INDEX_CACHE_MIN_RECORDS", 1)  # the sample is small
    monkeypatch.setattr(corpus_module, "RECORDS_CACHE_MIN_BYTES", 1)
    copy = tmp_path / "w"
    shutil.copytree(world, copy)
    clear_corpus_cache()
    first = load_corpus(copy)
    fresh = first.pubmed_index.search("pain OR cancer", sort="relevance").ids
    (cached,) = (copy / ".cache").glob("pubmed-index-*.pickle")
    (records,) = (copy / ".cache").glob("pubmed-records-*.pickle")
    stamps = cached.stat().st_mtime_ns, records.stat().st_mtime_ns
    clear_corpus_cache()
    again = load_corpus(copy)
    assert again.pubmed_index.search("pain OR cancer", sort="relevance").ids == fresh
    assert dict(again.records) == dict(first.records) and dict(again.raw) == dict(first.raw)
    assert (cached.stat().st_mtime_ns, records.stat().st_mtime_ns) == stamps  # read, not rewritten
    hoc = copy / "pubmed" / "hallmarks_of_cancer.xml"
    hoc.unlink()  # the corpus changed: a new key, the old file replaced
    clear_corpus_cache()
    load_corpus(copy).pubmed_index.search("cancer")
    (renewed,) = (copy / ".cache").glob("pubmed-index-*.pickle")
    assert renewed.name != cached.name
    clear_corpus_cache()


@pytest.mark.slow
@needs_shared
def test_the_full_world_has_over_20k_records_and_validates(tmp_path: Path) -> None:
    manifest = build_world(DATA, tmp_path / "world")
    counts = manifest["counts"]
    assert counts["pubmed_records"] >= 20_000
    assert counts["pmc_articles"] == 4_470 and counts["evidence_inference_with_pmid"] == 4_357
    assert counts["inferred_rct"] >= 4_300
    assert counts["retracted_marked"] >= 17
    dtd = etree.DTD(str(DTD))
    for f in sorted((tmp_path / "world" / "pubmed").glob("*.xml")):
        assert dtd.validate(etree.parse(str(f)).getroot()), f.name
    assert len(_provenance(tmp_path / "world")) == counts["pubmed_records"]


@needs_shared
async def test_the_local_server_serves_the_world_trials_full_text_and_links(world: Path) -> None:
    import httpx

    from retrieval.localncbi import LocalServerSettings, create_eutils_app, eutils_transport
    from retrieval.ncbi import parse_elink_pubmed_pmc, parse_esearch, parse_pmc_articles

    prov = _provenance(world)
    app = create_eutils_app(LocalServerSettings(corpus_dir=world))
    trial = next(p for p, d in sorted(prov.items()) if d["source"] == "evidence_inference")
    base = "http://eutils.local/entrez/eutils/"
    async with httpx.AsyncClient(transport=eutils_transport(app), base_url=base) as client:
        found = parse_esearch(
            (await client.get("esearch.fcgi", params={"db": "pubmed", "term": trial})).content
        )
        assert found.ids == (trial,)
        links = await client.get("elink.fcgi", params={"dbfrom": "pubmed", "db": "pmc", "id": trial})
        pmcids = [pmcid for _pmid, pmcid in parse_elink_pubmed_pmc(links.content).items() if pmcid]
        assert len(pmcids) == 1
        full = await client.get("efetch.fcgi", params={"db": "pmc", "id": pmcids[0].removeprefix("PMC")})
        (article,) = parse_pmc_articles(full.content)
        assert article.pmid == trial and article.sections  # the trial's full text

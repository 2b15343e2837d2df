"""The bundled offline corpus: reproducible build, faithful contents, loader semantics."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from lxml import etree

from retrieval.ncbi import BUNDLED_CORPUS_DIR, Corpus, load_corpus, parse_pubmed_articles
from tests._paths import BIOPYTHON_SAMPLES, JATS_SAMPLES, REPO, SHARED

PUBMEDQA = SHARED / "data" / "pubmedqa" / "ori_pqal.json"
MESH_JSON = SHARED / "data" / "mesh" / "mesh_c04_neoplasms.json"
DTD = SHARED / "data" / "eutils_samples" / "ncbi_dtds_from_biopython" / "pubmed_250101.dtd"
SAMPLE_FILES = [BIOPYTHON_SAMPLES / f"pubmed{i}.xml" for i in (1, 2, 4, 5, 6, 7)] + [
    JATS_SAMPLES / "pubmed-29768149.xml"
]
JATS_PMIDS = {
    "23149571": "PMC3574550",
    "21045829": "PMC2994229",
    "23029536": "PMC3460867",
    "34527728": "PMC8435807",
}

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared data folder not available")


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_corpus", REPO / "scripts" / "build_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_corpus", module)
    spec.loader.exec_module(module)
    return module


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).parts[0] in ("pubmed", "pmc", "MANIFEST.json", "README.md")
    }


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus()


@pytest.fixture(scope="module")
def pubmedqa() -> dict[str, dict[str, object]]:
    if not PUBMEDQA.is_file():
        pytest.skip("shared data folder not available")
    data: dict[str, dict[str, object]] = json.loads(PUBMEDQA.read_text(encoding="utf-8"))
    return data


# ---- build ------------------------------------------------------------------------------------------------


@needs_shared
def test_build_is_deterministic_and_matches_committed_files(tmp_path: Path) -> None:
    builder = _builder()
    builder.build(SHARED, tmp_path / "a")
    builder.build(SHARED, tmp_path / "b")
    first, second = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert first == second
    committed = _tree(BUNDLED_CORPUS_DIR)
    assert sorted(first) == sorted(committed)
    for name, data in first.items():
        assert data == committed[name], f"{name} differs from the committed corpus: re-run the builder"


@needs_shared
def test_manifest_hashes_and_counts() -> None:
    manifest = json.loads((BUNDLED_CORPUS_DIR / "MANIFEST.json").read_text(encoding="utf-8"))
    for entry in manifest["inputs"]:
        assert hashlib.sha256((SHARED / entry["path"]).read_bytes()).hexdigest() == entry["sha256"]
    for entry in manifest["outputs"]:
        data = (BUNDLED_CORPUS_DIR / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert len(data) == entry["bytes"]
    counts = manifest["counts"]
    assert counts["pubmedqa_records"] == 1000
    assert counts["ncbi_sample_records"] == 9
    assert counts["jats_derived_records"] == 4
    assert counts["pubmed_records"] == 1013
    assert counts["pmc_articles"] == 4
    assert counts["pubmedqa_null_years"] == 58
    synthesized = {f["element"] for f in manifest["synthesized_fields"]["pubmed/pubmedqa_pqal.xml"]}
    assert {"ArticleTitle", "PublicationTypeList", "Language", "MedlineJournalInfo/MedlineTA"} <= synthesized
    readme = (BUNDLED_CORPUS_DIR / "README.md").read_text(encoding="utf-8")
    for needle in (
        "MIT",
        "Biopython License",
        "CC BY-NC 3.0",
        "CC BY-NC 4.0",
        "Cancer Research UK",
        "placeholder",
    ):
        assert needle in readme


def _pubmed_dtd() -> etree.DTD:
    # mathml-in-pubmed.mod is not shipped; a stub declaration keeps the rest of the DTD checkable.
    text = DTD.read_text(encoding="utf-8").replace("%mathml-in-pubmed;", "<!ELEMENT mml:math ANY>")
    return etree.DTD(io.StringIO(text))


@needs_shared
def test_generated_records_are_valid_against_pubmed_250101_dtd() -> None:
    dtd = _pubmed_dtd()
    parser = etree.XMLParser(load_dtd=False, no_network=True, resolve_entities=False)
    doc = etree.parse(str(BUNDLED_CORPUS_DIR / "pubmed" / "pubmedqa_pqal.xml"), parser)
    assert dtd.validate(doc), str(dtd.error_log)[:500]
    samples = etree.parse(str(BUNDLED_CORPUS_DIR / "pubmed" / "ncbi_samples.xml"), parser).getroot()
    jats_records = [a for a in samples if a.findtext("MedlineCitation/PMID") in JATS_PMIDS]
    assert len(jats_records) == 4
    for article in jats_records:
        assert dtd.validate(article), str(dtd.error_log)[:500]


# ---- contents ---------------------------------------------------------------------------------------------


def test_bundled_corpus_loads_pubmedqa_and_samples(
    corpus: Corpus, pubmedqa: dict[str, dict[str, object]]
) -> None:
    assert set(pubmedqa) <= set(corpus.records)
    sample_pmids = {
        "12091962",
        "9997",
        "11748933",
        "11700088",
        "27797938",
        "28775130",
        "30108519",
        "29963580",
    }
    assert sample_pmids | {"29768149"} | set(JATS_PMIDS) <= set(corpus.records)
    assert len(corpus.records) == 1013
    assert set(corpus.pmc) == set(JATS_PMIDS.values())
    assert set(corpus.raw) == set(corpus.records)
    assert load_corpus() is corpus  # cached per process
    assert load_corpus(BUNDLED_CORPUS_DIR) is corpus


@needs_shared
def test_recorded_records_are_kept_byte_for_byte(corpus: Corpus) -> None:
    for path in SAMPLE_FILES:
        for raw in re.findall(rb"<PubmedArticle[\s>].*?</PubmedArticle>", path.read_bytes(), re.DOTALL):
            pmid = re.search(rb"<PMID[^>]*>(\d+)</PMID>", raw)
            assert pmid is not None
            assert corpus.raw[pmid.group(1).decode()] == raw


@needs_shared
def test_pubmedqa_field_mapping(corpus: Corpus, pubmedqa: dict[str, dict[str, object]]) -> None:
    c04 = json.loads(MESH_JSON.read_text(encoding="utf-8"))["descriptors"]
    uis = {d["name"]: d["ui"] for d in c04} | {d["name_2019"]: d["ui"] for d in c04 if d["name_2019"]}
    for pmid in ("21645374", "1571683", "25957366"):
        item, rec = pubmedqa[pmid], corpus.records[pmid]
        assert rec.title == item["QUESTION"]
        contexts = item["CONTEXTS"]
        labels = item["LABELS"]
        assert isinstance(contexts, list) and isinstance(labels, list)
        assert [s.text for s in rec.abstract] == [*contexts, item["LONG_ANSWER"]]
        assert [s.label for s in rec.abstract] == [*labels, "CONCLUSIONS"]
        for sec in rec.abstract:
            if sec.label in ("BACKGROUND", "OBJECTIVE", "METHODS", "RESULTS", "CONCLUSIONS"):
                assert sec.nlm_category == sec.label
            elif sec.label not in ("OBJECTIVES", "METHOD", "CONCLUSION", "RESULT"):
                assert sec.nlm_category is None
        assert [m.descriptor for m in rec.mesh] == item["MESHES"]
        for m in rec.mesh:
            assert (m.ui or None) == uis.get(m.descriptor)
        assert rec.year == (int(str(item["YEAR"])) if item["YEAR"] else None)
        assert [p.ui for p in rec.publication_types] == ["D016428"]
        assert rec.languages == ("eng",)


def test_pmid_pmcid_links(corpus: Corpus) -> None:
    for pmid, pmcid in JATS_PMIDS.items():
        assert corpus.pmid_to_pmcid[pmid] == pmcid
        assert corpus.pmcid_to_pmid[pmcid] == pmid
        assert corpus.records[pmid].pmcid == pmcid  # the PubMed record built from JATS carries it too
    assert corpus.pmid_to_pmcid["27797938"] == "PMC5442267"  # from a recorded ArticleId only
    assert "21645374" not in corpus.pmid_to_pmcid
    assert corpus.pmc_raw["PMC8435807"].startswith(b"<article ")
    assert corpus.pmc_refs["PMC3574550"]  # reference PMIDs read from the JATS ref-list


def test_pmc_index_searches_body_text(corpus: Corpus) -> None:
    hits = corpus.pmc_index.search("Mycobacterium tuberculosis")
    assert hits.ids == ("3460867",)


# ---- loader on user files ---------------------------------------------------------------------------------

_SET = (
    b'<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC '
    b'"-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
    b'"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
    b"<PubmedArticleSet>\n%s\n</PubmedArticleSet>\n"
)


def _article(pmid: str, title: str, pmcid: str | None = None) -> bytes:
    ids = f'<ArticleId IdType="pubmed">{pmid}</ArticleId>'
    if pmcid:
        ids += f'<ArticleId IdType="pmc">{pmcid}</ArticleId>'
    return (
        f'<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">{pmid}</PMID>'
        f'<Article PubModel="Print"><Journal><JournalIssue CitedMedium="Print"><PubDate><Year>2020</Year>'
        f"</PubDate></JournalIssue><Title>J Test</Title></Journal><ArticleTitle>{title}</ArticleTitle>"
        f"<Pagination><MedlinePgn>1-2</MedlinePgn></Pagination><Language>eng</Language><PublicationTypeList>"
        f'<PublicationType UI="D016428">Journal Article</PublicationType></PublicationTypeList></Article>'
        f"<MedlineJournalInfo><MedlineTA>J Test</MedlineTA></MedlineJournalInfo></MedlineCitation>"
        f"<PubmedData>"
        f"<PublicationStatus>ppublish</PublicationStatus><ArticleIdList>{ids}</ArticleIdList></PubmedData>"
        f"</PubmedArticle>"
    ).encode()


def test_loader_accepts_gzipped_baseline_and_update_semantics(tmp_path: Path) -> None:
    pubmed = tmp_path / "pubmed"
    pubmed.mkdir()
    base = _SET % b"\n".join(
        [_article("101", "first title"), _article("102", "to be deleted"), _article("103", "x")]
    )
    (pubmed / "pubmed25n0001.xml.gz").write_bytes(gzip.compress(base, mtime=0))
    update = _SET % b"\n".join(
        [
            _article("101", "replaced title", "PMC999"),
            b"<DeleteCitation><PMID Version='1'>102</PMID></DeleteCitation>",
        ]
    )
    (pubmed / "pubmed25n0002.xml").write_bytes(update)
    (tmp_path / "pmc").mkdir()
    jats = (JATS_SAMPLES / "pone.0046493.nxml").read_bytes() if JATS_SAMPLES.is_dir() else None
    if jats is not None:
        (tmp_path / "pmc" / "article.nxml").write_bytes(jats)

    corpus = load_corpus(tmp_path)
    assert set(corpus.records) == {"101", "103"}
    assert corpus.records["101"].title == "replaced title"
    assert corpus.raw["101"] == _article("101", "replaced title", "PMC999")
    assert parse_pubmed_articles(_SET % corpus.raw["103"])[0].title == "x"
    assert corpus.pmid_to_pmcid["101"] == "PMC999"
    assert corpus.pubmed_index.search("replaced").ids == ("101",)
    if jats is not None:
        assert set(corpus.pmc) == {"PMC3460867"}
        assert corpus.pmid_to_pmcid["23029536"] == "PMC3460867"


def test_loader_on_empty_folder(tmp_path: Path) -> None:
    corpus = load_corpus(tmp_path)
    assert not corpus.records and not corpus.pmc
    assert corpus.pubmed_index.search("anything").count == 0


def test_pmc_articles_parse_lazily_and_match_an_eager_parse() -> None:
    from retrieval.ncbi import BUNDLED_CORPUS_DIR, load_corpus, parse_pmc_articles, read_jats_front

    corpus = load_corpus()
    assert len(corpus.pmc) == len(list((BUNDLED_CORPUS_DIR / "pmc").iterdir())) > 0
    for pmcid in corpus.pmc:
        (eager,) = parse_pmc_articles((BUNDLED_CORPUS_DIR / "pmc" / f"{pmcid}.xml").read_bytes())
        assert corpus.pmc[pmcid] == eager
        assert corpus.pmc_refs[pmcid] == read_jats_front(corpus.pmc_raw[pmcid]).ref_pmids
        if eager.pmid:
            assert corpus.pmid_to_pmcid[eager.pmid] == pmcid and corpus.pmcid_to_pmid[pmcid] == eager.pmid


def test_front_matter_is_read_once_for_references_and_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import retrieval.ncbi._corpus as corpus_module
    from retrieval.ncbi import JatsFront, read_jats_front

    (tmp_path / "pmc").mkdir()
    for f in sorted((BUNDLED_CORPUS_DIR / "pmc").iterdir())[:2]:
        (tmp_path / "pmc" / f.name).write_bytes(f.read_bytes())
    reads: list[bytes] = []

    def counting(raw: bytes) -> JatsFront:
        reads.append(raw)
        return read_jats_front(raw)

    monkeypatch.setattr(corpus_module, "read_jats_front", counting)
    corpus = load_corpus(tmp_path)
    pmcid = next(iter(corpus.pmc_raw))
    refs = corpus.pmc_refs[pmcid]  # ELink pubmed_pmc_refs reads the front matter...
    front = corpus.jats_front(pmcid)  # ...and ESummary db=pmc reuses that reading
    assert front.ref_pmids == refs and len(reads) == 1
    assert corpus.jats_front(pmcid) is front and len(reads) == 1

"""MIRAGE loading (repo copy, BioASQ only from the shared folder), the CMMQA filter and narratives."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from eval import EvalInputError, cmmqa, mirage
from eval.cmmqa import (
    CancerMatcher,
    build_narratives,
    clean_narrative,
    load_cmmqa,
    question_hash,
    select_cmmqa,
)
from eval.mirage import MCQItem, load_mirage, read_benchmark, sha256_file
from llm import LLMTimeout
from tests._fakes import ScriptedLLM

REPO_COUNTS = {"medqa": 103, "medmcqa": 136, "pubmedqa": 69, "mmlu": 29}  # CMMQA part of the repo copy


@pytest.fixture
def benchmark(shared_dir: Path) -> Path:
    path = shared_dir / "data" / "mirage" / "benchmark.json"
    if not path.is_file():
        pytest.skip("MIRAGE benchmark.json not in the shared folder")
    return path


@pytest.fixture
def no_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mirage, "find_benchmark", lambda: None)


def test_repo_copy_has_no_bioasq_and_matches_its_manifest() -> None:
    manifest = json.loads((mirage.REPO_MIRAGE_DIR / "MANIFEST.json").read_text())
    subset = mirage.REPO_MIRAGE_DIR / manifest["file"]
    assert sha256_file(subset) == manifest["sha256"]
    raw = read_benchmark(subset)
    assert set(raw) == set(mirage.REDISTRIBUTABLE)  # BioASQ is never shipped
    for name, counts in manifest["datasets"].items():
        assert len(raw[name]) == counts["cmmqa"] + counts["sample"]
        assert counts["cmmqa"] == REPO_COUNTS[name]
        assert counts["sample"] == 50


def test_repo_copy_is_verbatim_and_pinned_to_the_source(benchmark: Path) -> None:
    manifest = json.loads((mirage.REPO_MIRAGE_DIR / "MANIFEST.json").read_text())
    assert manifest["source"]["sha256"] == sha256_file(benchmark)
    full = read_benchmark(benchmark)
    for name, records in read_benchmark(mirage.REPO_MIRAGE_DIR / manifest["file"]).items():
        for qid, rec in records.items():
            assert full[name][qid] == rec


def test_load_mirage_default_serves_repo_datasets_without_shared(no_benchmark: None) -> None:
    items = load_mirage(datasets=["medqa", "pubmedqa"])
    counts = Counter(it.dataset for it in items)
    assert counts == {"medqa": 153, "pubmedqa": 119}
    assert [it.dataset for it in items] == sorted(
        (it.dataset for it in items), key=["medqa", "pubmedqa"].index
    )
    first = items[0]
    assert isinstance(first, MCQItem)
    assert first.key == f"medqa:{first.item_id}"
    assert first.answer in first.options
    pq = next(it for it in items if it.dataset == "pubmedqa")
    assert pq.pmids == (pq.item_id,)  # PubMedQA's gold PMID is its key
    assert set(pq.options) == {"A", "B", "C"}


def test_bioasq_without_shared_data_is_a_clear_error(
    no_benchmark: None, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(EvalInputError, match="not distributed with CoMeta"):
        load_mirage(datasets=["bioasq"])
    # All datasets: BioASQ is skipped with the same explanation, the rest still loads.
    items = load_mirage()
    assert "bioasq" not in {it.dataset for it in items}
    assert "not distributed" in caplog.text
    with pytest.raises(EvalInputError, match="unknown MIRAGE dataset"):
        load_mirage(datasets=["medqa", "usmle"])


def test_bioasq_and_full_benchmark_load_from_shared(benchmark: Path) -> None:
    bio = load_mirage(datasets=["bioasq"])
    assert len(bio) == 618
    assert all(it.pmids and set(it.options) == {"A", "B"} for it in bio)
    full = load_mirage(benchmark)
    assert Counter(it.dataset for it in full) == {
        "medqa": 1273,
        "medmcqa": 4183,
        "pubmedqa": 500,
        "bioasq": 618,
        "mmlu": 1089,
    }
    assert len({it.key for it in full}) == 7663


@pytest.fixture(scope="module")
def matcher() -> CancerMatcher:
    return CancerMatcher.from_mesh()


def test_cancer_matcher_rules(matcher: CancerMatcher) -> None:
    # MeSH names, entry terms and the common words; longest match reported
    assert matcher.matches("Is small cell lung carcinoma curable?") == ["small cell lung carcinoma"]
    # "breast cancer" is no MeSH entry term in the bundled extract: the common word "cancer" catches it
    assert matcher.matches("Is breast cancer survival improving?") == ["cancer"]
    assert matcher.matches("A tumour was found") == ["tumour"]
    assert matcher.matches("She has non-small-cell lung cancer.") == ["non small cell lung cancer"]
    # inverted MeSH heading "Carcinoma, Bronchogenic" matched in natural order
    assert matcher.matches("risk of bronchogenic carcinoma") == ["bronchogenic carcinoma"]
    # whole words only
    assert matcher.matches("tumorigenic cancerology") == []
    # acronyms are case-sensitive: "ALL" the leukaemia vs "all"; "MEN 2" vs "men 2"
    assert matcher.matches("T-ALL relapse") == ["t ALL"]
    assert matcher.matches("all men 2 days") == []
    assert matcher.matches("MALT lymphoma") == ["MALT lymphoma"]
    # excluded branches (Cysts, Paraneoplastic Syndromes) and words that only look like cancer
    assert matcher.matches("ovarian cyst with myasthenia gravis") == []
    assert matcher.matches("malignant hyperthermia after anaesthesia") == []
    assert matcher("Hodgkin's lymphoma")
    unfiltered = CancerMatcher.from_mesh(exclude=())
    assert unfiltered.matches("ovarian cyst") == ["ovarian cyst"]
    with pytest.raises(ValueError):
        CancerMatcher.from_mesh(exclude=("Not A Descriptor",))


def test_cmmqa_filter_reproduces_the_committed_key_list(benchmark: Path, matcher: CancerMatcher) -> None:
    committed = json.loads(cmmqa.CMMQA_FILE.read_text())
    selected = select_cmmqa(load_mirage(benchmark), matcher)
    assert sorted(selected) == sorted(committed["keys"])
    assert Counter(k.partition(":")[0] for k in selected) == {**REPO_COUNTS, "bioasq": 100}
    assert committed["source_sha256"] == sha256_file(benchmark)
    # no BioASQ text leaks through the matched terms
    assert not any(k.startswith("bioasq:") for k in committed["matched_terms"])


def test_load_cmmqa_standard_and_narrative(no_benchmark: None) -> None:
    standard = load_cmmqa(datasets=list(REPO_COUNTS))
    assert Counter(it.dataset for it in standard) == REPO_COUNTS
    narrative = load_cmmqa("narrative")
    assert len(narrative) == 60
    assert Counter(it.dataset for it in narrative) == {"medqa": 16, "medmcqa": 16, "pubmedqa": 16, "mmlu": 12}
    by_key = {it.key: it for it in standard}
    for it in narrative:
        orig = by_key[it.key]
        assert it.question == it.narrative != orig.question
        assert (it.options, it.answer) == (orig.options, orig.answer)
    meta, _records = cmmqa.load_narratives()
    assert "development assistant" in meta["generator"]
    assert meta["prompt"] == "narrative_variant@1"


def test_narrative_for_another_question_text_is_refused(tmp_path: Path, no_benchmark: None) -> None:
    key = load_cmmqa(datasets=["pubmedqa"])[0].key
    path = tmp_path / "n.jsonl"
    path.write_text(
        json.dumps({"meta": {}})
        + "\n"
        + json.dumps({"key": key, "narrative": "my mom has cancr, is it bad?", "question_sha256": "0" * 16})
        + "\n"
    )
    with pytest.raises(EvalInputError, match="different question text"):
        load_cmmqa("narrative", narratives=path)


def test_clean_narrative() -> None:
    assert (
        clean_narrative('"my dad has a brain tumr, can lasers help?"')
        == "my dad has a brain tumr, can lasers help?"
    )
    assert clean_narrative("Rewritten query: i have cancr\n\nExplanation: I added a typo.") == "i have cancr"
    assert (
        clean_narrative("<think>plan</think> ok so my mom has lung cancer") == "ok so my mom has lung cancer"
    )
    assert clean_narrative("  ") is None
    assert clean_narrative("yes") is None


def test_build_narratives_is_resumable_and_counts_failures(tmp_path: Path) -> None:
    items = [
        MCQItem("pubmedqa:1", "pubmedqa", "Is X useful in breast cancer?", {"A": "yes", "B": "no"}, "A"),
        MCQItem("pubmedqa:2", "pubmedqa", "Does Y cause lung cancer?", {"A": "yes", "B": "no"}, "B"),
        MCQItem("pubmedqa:3", "pubmedqa", "Is Z safe in melanoma?", {"A": "yes", "B": "no"}, "A"),
    ]

    def script(prompt: str) -> str | Exception:
        if "Does Y" in prompt:
            return LLMTimeout("slow")
        return '"my mom has brest cancer, does X help her?"' if "Is X" in prompt else "ok"

    out = tmp_path / "narratives.jsonl"
    llm = ScriptedLLM(script)
    stats = asyncio.run(build_narratives(items, llm, out))
    # item 1 written, item 2 an LLM error, item 3 a reply too short to be a narrative
    assert (stats.written, stats.failed, stats.skipped_existing) == (1, 2, 0)
    assert llm.versions == ["narrative_variant@1"] * 3
    assert "RAW QUESTION: Is X useful in breast cancer?" in llm.seen[0][-1]["content"]
    _meta, records = cmmqa.load_narratives(out)
    assert records["pubmedqa:1"]["narrative"] == "my mom has brest cancer, does X help her?"
    assert records["pubmedqa:1"]["question_sha256"] == question_hash(items[0].question)
    # A second run only asks for the two that failed.
    llm2 = ScriptedLLM(lambda _p: "i have a question about my dads lung cancr")
    stats2 = asyncio.run(build_narratives(items, llm2, out))
    assert (stats2.written, stats2.failed, stats2.skipped_existing) == (2, 0, 1)
    assert len(llm2.seen) == 2
    _meta, records = cmmqa.load_narratives(out)
    assert set(records) == {"pubmedqa:1", "pubmedqa:2", "pubmedqa:3"}


def test_build_cmmqa_writes_keys_and_counts(tmp_path: Path, benchmark: Path) -> None:
    summary = cmmqa.build_cmmqa(benchmark=benchmark, out_dir=tmp_path)
    written = json.loads((tmp_path / "cmmqa.json").read_text())
    assert written["counts"] == {**REPO_COUNTS, "bioasq": 100}
    rows = {row[0]: row for row in summary["table"].rows}
    assert rows["total"][1:3] == [7663, 437]
    assert rows["pubmedqa"][4] == 60  # the paper's count, shown alongside
    with pytest.raises(EvalInputError, match="need an LLM"):
        cmmqa.build_cmmqa(
            benchmark=benchmark, out_dir=tmp_path, narratives=True, llm=cmmqa.LLMSettings(backend="none")
        )

"""The world's gold sets (eval.gold): fixtures, splits, title overlap, the build over a tiny synthetic shared
folder (determinism, refusals, world check, loaders), and the real build over ../shared when it is there."""

from __future__ import annotations

import csv
import gzip
import io
import json
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval import EvalInputError
from eval.cli import eval_app
from eval.gold import (
    FIXTURE_DIR,
    GOLD_SETS,
    MAX_TITLE_JACCARD,
    MAX_TITLE_SHARE,
    GoldBuildError,
    assign_splits,
    build_gold,
    ei_question,
    ei_units,
    load_gold,
    title_overlap,
    unanswerable_set,
)
from eval.retrieval import load_items
from retrieval.ncbi import parse_pmc_articles
from tests._paths import SHARED

SHARED_DATA = SHARED / "data"
needs_shared = pytest.mark.skipif(
    not (SHARED_DATA / "cohen2006" / "online").is_dir(), reason="needs ../shared/data (the world's sources)"
)


def _fixture(name: str, folder: Path = FIXTURE_DIR) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines() if line]


# --- the committed fixtures ----------------------------------------------------------------------------


def test_fixtures_hold_only_written_text_and_ids() -> None:
    narratives = _fixture("cohen_narratives.jsonl")
    topics = _fixture("cohen_topics.jsonl")
    unanswerable = _fixture("unanswerable.jsonl")
    assert len(narratives) >= 60 and len(topics) == 14 and len(unanswerable) >= 100
    for row in narratives + topics + unanswerable:
        assert "Claude" in row["written_by"]
        # Nothing taken from ../shared: no title, abstract, evidence or prompt fields.
        assert not {"title", "abstract", "evidence", "intervention", "outcome"} & set(row)
    assert len({r["id"] for r in narratives + topics + unanswerable}) == len(
        narratives + topics + unanswerable
    )
    assert len({r["pmid"] for r in narratives}) == len(narratives)
    assert len({r["review"] for r in topics}) == 14
    kinds = Counter(r["kind"] for r in unanswerable)
    assert {"gibberish", "non_medical", "chit_chat", "prompt_injection", "nonexistent_drug"} <= set(kinds)
    assert min(kinds.values()) >= 3  # every kind can land in both splits
    assert all(r["absent_terms"] for r in unanswerable if r["category"] == "out_of_world")


def test_unanswerable_kinds_are_in_both_splits_without_shared() -> None:
    items, hits = unanswerable_set()  # no world check without ../shared
    assert hits == {} and all(i["world_hits"] is None for i in items)
    by_kind: dict[str, Counter[str]] = {}
    for item in items:
        by_kind.setdefault(item["kind"], Counter())[item["split"]] += 1
    assert len(by_kind) == 9
    assert all(c["dev"] >= 3 and c["test"] >= 7 for c in by_kind.values()), by_kind
    assert Counter(i["split"] for i in items if i["batch"] == 1) == {"dev": 35, "test": 71}
    assert Counter(i["split"] for i in items if i["batch"] == 2) == {"dev": 41, "test": 83}
    assert Counter(i["split"] for i in items if i["batch"] == 3) == {"dev": 35, "test": 69}
    assert items == unanswerable_set()[0]  # seeded
    assert [i["split"] for i in items] != [i["split"] for i in unanswerable_set(seed=1)[0]]


def test_title_overlap_counts_stemmed_content_words() -> None:
    title = "Oxycodone against neuropathic pain after herpes zoster: a randomized trial"  # made up
    assert title_overlap(title, title) == (1.0, 1.0)
    share, jaccard = title_overlap(
        "After shingles I still have burning nerve pain. Does oxycodone help?", title
    )
    # title content words ("against" is a stopword): oxycodone neuropathic pain herpes zoster randomized trial
    assert share == pytest.approx(2 / 7)
    assert 0 < jaccard < share
    assert title_overlap("anything", "") == (0.0, 0.0)
    assert title_overlap("the trials were randomised", "Trial randomized")[0] == 0.5  # stems, not spellings


def test_assign_splits_is_seeded_sized_and_order_free() -> None:
    ids = [f"x{i}" for i in range(30)]
    a = assign_splits(ids, seed=0, salt="s")
    assert a == assign_splits(list(reversed(ids)), seed=0, salt="s")
    assert Counter(a.values()) == {"dev": 10, "test": 20}
    assert a != assign_splits(ids, seed=1, salt="s")
    assert Counter(assign_splits(["a", "b"], seed=0, salt="s").values()) == {"dev": 1, "test": 1}
    assert assign_splits(["only"], seed=0, salt="s") == {"only": "test"}


def test_ei_question_templates_and_lay_words() -> None:
    q0, lay0 = ei_question("Tinzaparin", "placebo", "Mortality at 90 days.", 0)
    assert q0 == "Does tinzaparin compared with a placebo (dummy treatment) change death rate at 90 days?"
    assert lay0 == ["mortality", "placebo"]
    q1, lay1 = ei_question("IL-11", "saline", "HbA1c", 1)
    assert q1 == "I was offered IL-11 instead of saline. Does that make any difference to HbA1c?"
    assert lay1 == []  # acronyms keep their case, nothing to lay-ify
    assert len({ei_question("a", "b", "c", t)[0] for t in range(6)}) == 6


# --- a tiny synthetic shared folder ----------------------------------------------------------------------

_TITLE = "Oxycodone for postherpetic neuralgia: a randomized controlled trial"
_EVIDENCE = "Pain scores were significantly lower with oxycodone than with placebo (P = 0.0001)."
_SPLIT_EVIDENCE = _EVIDENCE.replace(" than ", "\n than  ")
_JATS = f"""<?xml version="1.0"?>
<article article-type="research-article"><front><article-meta>
<article-id pub-id-type="pmid">{{pmid}}</article-id><article-id pub-id-type="pmc">{{pmc}}</article-id>
<title-group><article-title>Trial {{pmc}}</article-title></title-group>
<abstract><p>We compared two treatments in adults with nerve pain after shingles.</p></abstract>
</article-meta></front><body>
<sec><title>Methods</title><p>Patients were randomised to oxycodone or placebo for four weeks.</p></sec>
<sec><title>Results</title><p>Ninety patients finished. {_EVIDENCE} No one withdrew.</p></sec>
</body></article>"""


def _gz_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(buf.getvalue())


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


@pytest.fixture
def mini(tmp_path: Path) -> tuple[Path, Path]:
    """(shared data folder, fixture folder): two reviews, three trials, a handful of questions."""
    shared = tmp_path / "data"
    head = ["record_id", "pubmedID", "title", "authors", "abstract", "year", "label_included", "x"]
    _gz_csv(
        shared / "cohen2006" / "online" / "Opiods.csv.gz",
        head,
        [["1", "111", _TITLE, "", "abs", "1998", "1", "1"], ["2", "112", "Other", "", "a", "1999", "0", "0"]],
    )
    _gz_csv(
        shared / "cohen2006" / "online" / "Triptans.csv.gz",
        head,
        [["1", "221", "Rizatriptan versus sumatriptan in migraine", "", "a", "2000", "1", "1"]],
    )
    (shared / "cohen2006" / "raw").mkdir(parents=True)
    ei = shared / "evidence_inference"
    ei.mkdir()
    _write_csv(
        ei / "prompts_merged.csv",
        ["PromptID", "PMCID", "Outcome", "Intervention", "Comparator"],
        [
            ["1", "901", "pain scores", "oxycodone", "placebo"],
            ["2", "902", "pain scores", "oxycodone", "placebo"],
            ["3", "903", "pain scores", "oxycodone", "placebo"],
            ["911", "903", "pain", "oxycodone", "placebo"],  # flagged upstream as incorrect
            ["4", "904", "pain scores", "oxycodone", "placebo"],
        ],
    )
    ann_head = ["UserID", "PromptID", "PMCID", "Valid Label", "Valid Reasoning", "Label", "Annotations"]
    ann_head += ["Label Code", "In Abstract", "Evidence Start", "Evidence End"]
    _write_csv(
        ei / "v2_annotations.csv",
        ann_head,
        [
            ["0", "1", "901", "True", "True", "significantly decreased", _EVIDENCE, "-1", "0", "5", "90"],
            ["0", "2", "902", "True", "True", "significantly decreased", _EVIDENCE, "-1", "0", "5", "90"],
            ["1", "2", "902", "True", "True", "no significant difference", _EVIDENCE, "0", "0", "5", "90"],
            [
                "0",
                "3",
                "903",
                "True",
                "True",
                "significantly decreased",
                "text not in the article at all",
                "",
                "",
                "1",
                "2",
            ],
            # The annotators' copy has other line breaks: found with whitespace folded, kept in our wording.
            [
                "0",
                "4",
                "904",
                "True",
                "True",
                "significantly decreased",
                _SPLIT_EVIDENCE,
                "-1",
                "0",
                "5",
                "90",
            ],
        ],
    )
    with tarfile.open(ei / "pmc_xml_files.tar.gz", "w:gz") as tf:
        for pmc, pmid in (("901", "5001"), ("902", "5002"), ("903", "5003"), ("904", "5004")):
            data = _JATS.format(pmid=pmid, pmc=pmc).encode()
            info = tarfile.TarInfo(f"xml_files/PMC{pmc}.nxml")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    (shared / "pubmedqa").mkdir()
    (shared / "pubmedqa" / "ori_pqal.json").write_text(
        json.dumps({"1": {"QUESTION": "Does praziquantel work?"}}), encoding="utf-8"
    )
    fixtures = tmp_path / "eval" / "data" / "gold"
    fixtures.mkdir(parents=True)
    who = "written by the development assistant (Claude) in this session, from the title and abstract"
    rows: dict[str, list[dict[str, Any]]] = {
        "cohen_topics.jsonl": [
            {"id": "ct-Opiods", "review": "Opiods", "question": "Do opioids help pain?", "written_by": who},
            {"id": "ct-Triptans", "review": "Triptans", "question": "Best migraine pill?", "written_by": who},
        ],
        "cohen_narratives.jsonl": [
            {
                "id": "cn1",
                "review": "Opiods",
                "pmid": "111",
                "narrative": "Shingles left me with burning nerve pain. Would oxycodone help?",
                "written_by": who,
            },
            {
                "id": "cn2",
                "review": "Triptans",
                "pmid": "221",
                "narrative": "Is Maxalt faster than Imitrex for my headaches?",
                "written_by": who,
            },
        ],
        "unanswerable.jsonl": [
            {
                "id": f"u-{kind}-{i}",
                "kind": kind,
                "question": f"{kind} question {i}",
                "absent_terms": terms,
                "written_by": who,
            }
            for kind, terms in (
                ("veterinary", ["bumblefoot"]),
                ("tropical_parasite", ["praziquantel"]),
                ("chit_chat", []),
            )
            for i in range(3)
        ],
    }
    for name, items in rows.items():
        (fixtures / name).write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return shared, fixtures


def test_build_is_deterministic_and_joins_shared_at_build_time(
    mini: tuple[Path, Path], tmp_path: Path
) -> None:
    shared, fixtures = mini
    first = build_gold(shared, tmp_path / "a", fixture_dir=fixtures, ei_items=2)
    assert first.counts["ei"] == {"dev": 1, "test": 1}
    second = build_gold(shared, tmp_path / "b", fixture_dir=fixtures, ei_items=2)
    for name in [*(f"{s}.jsonl" for s in GOLD_SETS), "MANIFEST.json"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert first.files == second.files

    topics = load_gold("cohen-topic", gold_dir=tmp_path / "a")
    assert {t["id"]: t["pmids"] for t in topics} == {"ct-Opiods": ["111"], "ct-Triptans": ["221"]}
    assert first.counts["cohen-topic"] == {"dev": 1, "test": 1}
    narratives = load_gold("cohen-narrative", gold_dir=tmp_path / "a")
    assert all(n["title_share"] <= MAX_TITLE_SHARE for n in narratives)
    assert "title" not in narratives[0]

    # Prompt 2's annotators disagree, prompt 3's evidence is nowhere in its article, 911 is flagged.
    ei_item, folded = load_gold("ei", gold_dir=tmp_path / "a")
    assert folded["id"] == "ei-4" and folded["evidence"]["text"] == _EVIDENCE
    assert ei_item["id"] == "ei-1" and ei_item["pmids"] == ["5001"] and ei_item["pmcid"] == "PMC901"
    assert ei_item["label"] == "decreased"
    assert ei_item["question"].endswith("?") and "oxycodone" in ei_item["question"]
    article = parse_pmc_articles(_JATS.format(pmid="5001", pmc="901").encode())[0]
    units = {u: text for u, _, text in ei_units(article)}
    ev = ei_item["evidence"]
    assert ev["unit"] == 1 and ev["heading"] == "Results"
    assert units[1][ev["start"] : ev["end"]] == _EVIDENCE == ev["text"]
    full = "\n\n".join(text for _, _, text in ei_units(article))
    assert full[ev["fulltext_start"] : ev["fulltext_start"] + len(_EVIDENCE)] == _EVIDENCE

    # The world check: "praziquantel" is in the (tiny) PubMedQA file, "bumblefoot" nowhere.
    assert first.world_hits == {
        **{f"u-veterinary-{i}": 0 for i in range(3)},
        **{f"u-tropical_parasite-{i}": 1 for i in range(3)},
    }
    for kind, splits in first.unanswerable_kinds.items():
        assert splits == {"dev": 1, "test": 2}, kind


def test_build_refuses_a_narrative_that_copies_its_title(mini: tuple[Path, Path], tmp_path: Path) -> None:
    shared, fixtures = mini
    path = fixtures / "cohen_narratives.jsonl"
    rows = _fixture("cohen_narratives.jsonl", fixtures)
    rows[0]["narrative"] = "Is oxycodone for postherpetic neuralgia good in a randomized trial?"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(GoldBuildError, match="copies its gold title"):
        build_gold(shared, tmp_path / "out", fixture_dir=fixtures)
    rows[0]["pmid"] = "112"  # excluded from the review: not gold
    rows[0]["narrative"] = "anything"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(GoldBuildError, match="not a final include"):
        build_gold(shared, tmp_path / "out", fixture_dir=fixtures)


def test_build_names_a_missing_input(mini: tuple[Path, Path], tmp_path: Path) -> None:
    shared, fixtures = mini
    (shared / "evidence_inference" / "prompts_merged.csv").unlink()
    with pytest.raises(GoldBuildError, match=r"prompts_merged\.csv"):
        build_gold(shared, tmp_path / "out", fixture_dir=fixtures)
    with pytest.raises(GoldBuildError, match="not the shared data folder"):
        build_gold(tmp_path / "nowhere", tmp_path / "out", fixture_dir=fixtures)


def test_retrieval_loads_gold_sets_and_splits(
    mini: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared, fixtures = mini
    monkeypatch.setenv("COMETA_GOLD_DIR", str(tmp_path / "gold"))
    with pytest.raises(EvalInputError, match="build-gold"):
        load_items("ei")
    assert len(load_items("unanswerable@dev")) == 202  # from the committed fixture, before any build
    build_gold(shared, tmp_path / "gold", fixture_dir=fixtures)
    items = load_items("cohen-narrative")
    assert [(i.id, i.gold) for i in items] == [("cn1", ("111",)), ("cn2", ("221",))]
    dev, test = load_items("unanswerable@dev"), load_items("unanswerable@test")
    assert len(dev) == 3 and len(test) == 6 and all(i.gold == () for i in dev + test)
    assert not {i.id for i in dev} & {i.id for i in test}
    assert len(load_items("unanswerable", limit=2)) == 2
    with pytest.raises(EvalInputError, match="split"):
        load_items("ei@train")


def test_cli_build_gold(mini: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared, fixtures = mini
    monkeypatch.setattr("eval.gold.FIXTURE_DIR", fixtures)
    runner = CliRunner()
    result = runner.invoke(eval_app, ["build-gold", "--from", str(shared), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "unanswerable: dev 3, test 6" in result.output and (tmp_path / "o" / "ei.jsonl").is_file()
    bad = runner.invoke(
        eval_app, ["build-gold", "--from", str(tmp_path / "none"), "--out", str(tmp_path / "o")]
    )
    assert bad.exit_code == 2 and "no shared data folder" in bad.output  # an explicit --from never falls back


# --- the real sets over ../shared -----------------------------------------------------------------------


@needs_shared
def test_every_narrative_points_at_a_final_include_without_copying_its_title() -> None:
    titles: dict[tuple[str, str], str] = {}
    csv.field_size_limit(1 << 30)
    for path in (SHARED_DATA / "cohen2006" / "online").glob("*.csv.gz"):
        with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                if row["label_included"] == "1":
                    titles[(path.name.split(".")[0], row["pubmedID"])] = row["title"]
    shares = []
    for row in _fixture("cohen_narratives.jsonl"):
        title = titles[(row["review"], row["pmid"])]
        share, jaccard = title_overlap(row["narrative"], title)
        assert share <= MAX_TITLE_SHARE and jaccard <= MAX_TITLE_JACCARD, row["id"]
        shares.append(share)
    assert sum(shares) / len(shares) < 0.15  # the README reports the mean


@needs_shared
@pytest.mark.slow
def test_real_build(tmp_path: Path) -> None:
    summary = build_gold(SHARED_DATA, tmp_path)
    assert summary.counts["cohen-topic"] == {"dev": 5, "test": 9}
    assert summary.counts["ei"] == {"dev": 100, "test": 200}
    assert sum(summary.counts["cohen-narrative"].values()) >= 60
    assert sum(summary.counts["unanswerable"].values()) >= 100
    assert not any(summary.world_hits.values()), "an out-of-world question is in the world"
    assert all(s["dev"] >= 1 and s["test"] >= 1 for s in summary.unanswerable_kinds.values())
    topics = load_gold("cohen-topic", gold_dir=tmp_path)
    assert sum(len(t["pmids"]) for t in topics) == 761  # Cohen's final includes
    items = load_gold("ei", gold_dir=tmp_path)
    assert len({i["pmcid"] for i in items}) == 300
    assert Counter(i["label"] for i in items).keys() == {"increased", "decreased", "no_difference"}
    wanted = {i["pmcid"]: i for i in items[:40]}
    with tarfile.open(SHARED_DATA / "evidence_inference" / "pmc_xml_files.tar.gz") as tf:
        for member in tf:
            pmcid = member.name.rsplit("/", 1)[-1].removesuffix(".nxml")
            if pmcid in wanted:
                fh = tf.extractfile(member)
                assert fh is not None
                article = parse_pmc_articles(fh.read())[0]
                item = wanted.pop(pmcid)
                assert item["pmids"] == [article.pmid]
                units = {u: text for u, _, text in ei_units(article)}
                ev = item["evidence"]
                assert units[ev["unit"]][ev["start"] : ev["end"]] == ev["text"]
    assert not wanted


def test_every_shared_data_set_is_found_through_the_one_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval.gold import find_shared_data, shared_data_candidates
    from eval.judging import find_claims_dir
    from eval.mirage import find_benchmark
    from eval.pubmedrs import find_pubmedrs

    monkeypatch.setenv("COMETA_SHARED_DIR", str(tmp_path))
    monkeypatch.delenv("COMETA_MIRAGE_PATH", raising=False)
    data = tmp_path / "data"
    assert shared_data_candidates("claims")[0] == data / "claims"
    assert shared_data_candidates()[-1].parts[-2:] == ("shared", "data")  # then ../shared/data
    for folder in ("cohen2006", "claims", "pubmedrs200", "mirage"):
        (data / folder).mkdir(parents=True)
    (data / "pubmedrs200" / "PubMedRS-200.csv").write_text("")
    (data / "mirage" / "benchmark.json").write_text("{}")
    assert find_shared_data() == data and find_claims_dir() == data / "claims"
    assert find_pubmedrs() == data / "pubmedrs200" and find_benchmark() == data / "mirage" / "benchmark.json"


def test_a_later_unanswerable_batch_leaves_earlier_splits_alone(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (FIXTURE_DIR / "unanswerable.jsonl").read_text().splitlines()]
    first = [r for r in rows if int(r.get("batch", 1)) == 1]
    (tmp_path / "unanswerable.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first))
    before = {i["id"]: i["split"] for i in unanswerable_set(fixture_dir=tmp_path)[0]}
    extra = [{**first[0], "id": f"new-{n:02d}", "batch": 7, "question": f"question {n}"} for n in range(9)]
    (tmp_path / "unanswerable.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first + extra))
    items = unanswerable_set(fixture_dir=tmp_path)[0]
    assert {i["id"]: i["split"] for i in items if i["batch"] == 1} == before
    # The new batch is split on its own: a third of it in dev.
    assert Counter(i["split"] for i in items if i["batch"] == 7) == {"dev": 3, "test": 6}

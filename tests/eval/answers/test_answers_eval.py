"""The gate calibration and the answer-quality measures, on synthetic records."""

from __future__ import annotations

from app.settings import GateSettings
from eval.answers import (
    GateRecord,
    calibrate,
    contains,
    contains_in_study_line,
    gold_first,
    kept_and_abstained,
    label_left,
)


def record(category: str, split: str, dense: float, coverage: float, gold: bool = True) -> GateRecord:
    signals = {
        "documents": 5,
        "dense_top": dense,
        "rerank_top": None,
        "tier": "strict",
        "coverage": coverage,
        "absent_terms": 0,
    }
    return GateRecord(
        "s", f"{category}{dense}{coverage}", split, category, category, None, signals, gold, [], ""
    )


RECORDS = [
    *(record("answerable", split, 0.6 + i / 100, 0.8) for split in ("dev", "test") for i in range(10)),
    *(record("out_of_world", split, 0.35, 0.2) for split in ("dev", "test") for _ in range(5)),
    record("off_topic", "dev", 0.2, 0.0),
    GateRecord("u", "scope", "test", "off_topic", "gibberish", "gibberish", None, False, [], ""),
]


def test_calibration_abstains_on_unanswerable_and_keeps_answerable() -> None:
    gate = calibrate(RECORDS, GateSettings(), keep=1.0)
    # No record has an absent word or phrase: the checks that would read them earn nothing and stay off.
    assert (gate.absent_min_share, gate.absent_phrase_max_dense, gate.absent_technical_max_dense) == (
        2.0,
        -1.0,
        -1.0,
    )
    dev = kept_and_abstained(RECORDS, gate, "dev")
    assert dev["unanswerable_abstain"] == 1.0 and dev["answerable_kept_ratio"] == 1.0
    test = kept_and_abstained(RECORDS, gate, "test")
    assert test["off_topic_abstain"] == 1.0 and test["out_of_world_abstain"] == 1.0
    assert test["abstain_precision"] == 1.0 and test["n_answerable"] == 10
    off = kept_and_abstained(RECORDS, gate.model_copy(update={"enabled": False}), "test")
    assert off["out_of_world_abstain"] == 0.0 and off["off_topic_abstain"] == 1.0  # the scope check's one


def test_contains_and_section_labels() -> None:
    conclusion = "Preoperative CA 19-9 level alone should not preclude surgery."
    assert contains("2009 study: the CA19-9 level alone should not preclude surgery [PMID:1]", conclusion)
    assert not contains("Surgery was performed.", conclusion)
    assert label_left("METHODS: We did things.") and not label_left("2019 trial: we did things.")


def _rec(category: str, name: str, dense: float, gold: bool = True, **signals: float) -> GateRecord:
    s = {"documents": 5, "dense_top": dense, "rerank_top": None, "tier": "strict", "coverage": 0.8}
    return GateRecord("s", name, "dev", category, category, None, {**s, **signals}, gold, [], "")


def test_calibration_searches_the_absent_share_and_phrase_thresholds() -> None:
    records = [
        *(record("answerable", "dev", 0.6 + i / 100, 0.8) for i in range(10)),
        _rec("answerable", "loosely-worded", 0.43),  # so a dense floor cannot stop the phrase record
        # An odd lay word in a long answerable story; an answerable question with a lay phrase.
        _rec("answerable", "story", 0.62, absent_terms=1, absent_share=1 / 6),
        _rec("answerable", "lay-phrase", 0.47, absent_phrases=1),
        # A nonexistent drug compared with a real one; a procedure whose words are everywhere, never together.
        _rec("out_of_world", "drug", 0.74, absent_terms=1, absent_share=1 / 3),
        _rec("out_of_world", "phrase", 0.425, absent_phrases=1),
    ]
    gate = calibrate(records, GateSettings(), keep=1.0)
    # The grid's search (the gate's checks as bit masks) and the gate itself agree on every record.
    dev = kept_and_abstained(records, gate, "dev")
    assert dev["out_of_world_abstain"] == 1.0 and dev["answerable_kept_ratio"] == 1.0
    assert dev["answerable_abstain"] == 0.0
    # Ties go to the centre of the thresholds that do as well: the share between the story's 1/6 and the
    # drug's 1/3 (grid 0.2, 0.25, 0.3), the phrase threshold between 0.425 and the lay phrase's 0.47.
    assert gate.absent_min_share == 0.25
    assert 0.425 < gate.absent_phrase_max_dense <= 0.47
    assert min(gate.min_dense_strict, gate.min_dense) <= 0.425  # the phrase record is the phrase check's
    # The base thresholds come first, with the two checks off: the same as without those records.
    assert gate.min_dense == calibrate(records[:11], GateSettings(), keep=1.0).min_dense


def test_contained_in_the_gold_studys_own_line_only() -> None:
    gold = "Etoricoxib reduced pain more than placebo (p < 0.001)."
    answer = (
        "2002 trial: Etoricoxib was given. [PMID:1]\n"
        "2010 trial: pain reduced more than placebo (p < 0.001). [PMID:2]"
    )
    # The loose measure takes the words from any study; the strict one only from the gold study's line.
    assert contains(answer, gold)
    assert not contains_in_study_line(answer, gold, ["1"])
    assert contains_in_study_line(answer, gold, ["2"])
    assert not contains_in_study_line(answer, gold, ["22"])  # PMID:2 is not PMID:22


def test_report_counts_unanswerable_batches_apart() -> None:
    import dataclasses

    from eval.answers import abstain_by_batch

    later = [
        dataclasses.replace(record("out_of_world", "test", 0.9, 0.9), id="b2-pass", batch=2),
        dataclasses.replace(record("out_of_world", "test", 0.2, 0.0), id="b2-stop", batch=2),
    ]
    by_batch = abstain_by_batch([*RECORDS, *later], GateSettings())
    first = by_batch["test"]["batch1"]
    assert first["out_of_world_abstain"] == 1.0 and first["n_out_of_world"] == 5 and first["n_off_topic"] == 1
    assert by_batch["test"]["batch2"] == {
        "off_topic_abstain": 0.0,
        "out_of_world_abstain": 0.5,
        "n_off_topic": 0,
        "n_out_of_world": 2,
    }
    assert "batch2" not in by_batch["dev"]


def test_gold_first_reads_only_the_answers_first_line() -> None:
    answer = "\n2015 meta-analysis: exercise helps. [PMID:2]\n2010 trial: exercise helps. [PMID:1]"
    assert gold_first(answer, ["2"]) and gold_first(answer, ["9", "2"])
    assert not gold_first(answer, ["1"]) and not gold_first(answer, ["22"]) and not gold_first("", ["2"])

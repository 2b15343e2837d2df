"""The gate calibration and the answer-quality measures, on synthetic records."""

from __future__ import annotations

from app.settings import GateSettings
from eval.answers import (
    GateRecord,
    calibrate,
    contains,
    contains_in_study_line,
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

"""Answer trustworthiness on the world (issue 15): the evidence gate's calibration and abstention numbers."""

from ._cited import item_kind, load_items, run_cited, summarise
from ._gate import (
    GateRecord,
    abstain_by_batch,
    calibrate,
    collect_records,
    gate_report,
    kept_and_abstained,
    run_calibrate_gate,
)
from ._quality import contains, contains_in_study_line, gold_first, label_left, run_answer_quality

__all__ = [
    "GateRecord",
    "abstain_by_batch",
    "calibrate",
    "collect_records",
    "contains",
    "contains_in_study_line",
    "gate_report",
    "gold_first",
    "item_kind",
    "kept_and_abstained",
    "label_left",
    "load_items",
    "run_answer_quality",
    "run_calibrate_gate",
    "run_cited",
    "summarise",
]

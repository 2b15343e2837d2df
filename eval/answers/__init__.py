"""Answer trustworthiness on the world (issue 15): the evidence gate's calibration and abstention numbers."""

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
    "kept_and_abstained",
    "label_left",
    "run_answer_quality",
    "run_calibrate_gate",
]

"""Answer trustworthiness on the world (issue 15): the evidence gate's calibration and abstention numbers."""

from ._gate import (
    GateRecord,
    calibrate,
    collect_records,
    gate_report,
    kept_and_abstained,
    run_calibrate_gate,
)

__all__ = [
    "GateRecord",
    "calibrate",
    "collect_records",
    "gate_report",
    "kept_and_abstained",
    "run_calibrate_gate",
]

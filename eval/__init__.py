"""Evaluation suites (``cometa eval ...``): retrieval, chunking, QA, MedRGB, CCRS, audit, judge, PubMedRS.

The runner (``RunOptions``, ``SuiteResult``, ``Table``, ``Plot``, item logs, reports) is shared by every
suite; the suites run the service in process through the app layer, or against a server URL.
"""

from ._runner import (
    ITEMS_FILE,
    AskRunner,
    EvalInputError,
    EvalServerError,
    ItemLog,
    Plot,
    RunOptions,
    StageTimes,
    SuiteResult,
    Table,
    build_offline_services,
    check_run_dir,
    config_hash,
    describe_llm,
    eval_settings,
    judge_settings,
    parse_param,
    progress,
    read_item_records,
    run_metadata,
    select_items,
    write_result,
)
from ._settings import EvalSettings, EvaluationSettings

__all__ = [
    "ITEMS_FILE",
    "AskRunner",
    "EvalInputError",
    "EvalServerError",
    "EvalSettings",
    "EvaluationSettings",
    "ItemLog",
    "Plot",
    "RunOptions",
    "StageTimes",
    "SuiteResult",
    "Table",
    "build_offline_services",
    "check_run_dir",
    "config_hash",
    "describe_llm",
    "eval_settings",
    "judge_settings",
    "parse_param",
    "progress",
    "read_item_records",
    "run_metadata",
    "select_items",
    "write_result",
]

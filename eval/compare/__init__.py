"""Statistics over systems and runs: CCRS aggregation, Tukey HSD, Holm-corrected hypotheses, merged reports.

``cometa eval ccrs`` aggregates its own systems with :func:`aggregate`; ``cometa eval compare RUN_DIR...``
merges the item logs of several CCRS runs into one report over every system (:func:`compare_runs`).
"""

from ._backbones import backbone_label, run_backbones
from ._ccrs_stats import METRICS, aggregate, ccrs_tables, hypothesis_tests, json_safe, parse_hypothesis
from ._runs import compare_runs, load_run

__all__ = [
    "METRICS",
    "aggregate",
    "backbone_label",
    "ccrs_tables",
    "compare_runs",
    "hypothesis_tests",
    "json_safe",
    "load_run",
    "parse_hypothesis",
    "run_backbones",
]

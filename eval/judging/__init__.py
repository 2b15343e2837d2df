"""Judges of the judged suites: the judge model apart from the reader, and the judge's own validation.

``resolve_judge`` picks the grader of CCRS, MedRGB and the audit (``--judge-llm`` /
``COMETA_JUDGE_LLM__*``) and refuses a run where it is the reader unless ``--allow-self-judge``.
``run_judge`` (``cometa eval judge``) measures the five-label cross-source judge against human labels on
the claim-verification sets (Citation-Integrity, HealthVer, COVID-Fact, SciFact-RTE).
"""

from ._agreement import FIVE_LABELS, LABEL_MAP, map_label, run_judge, score_judgements
from ._claims import CLAIM_SETS, ClaimItem, find_claims_dir, load_claims
from ._select import (
    SELF_JUDGE_WARNING,
    JudgeChoice,
    build_judge_llm,
    judge_notes,
    llm_identity,
    parse_llm_spec,
    resolve_judge,
)

__all__ = [
    "CLAIM_SETS",
    "FIVE_LABELS",
    "LABEL_MAP",
    "SELF_JUDGE_WARNING",
    "ClaimItem",
    "JudgeChoice",
    "build_judge_llm",
    "find_claims_dir",
    "judge_notes",
    "llm_identity",
    "load_claims",
    "map_label",
    "parse_llm_spec",
    "resolve_judge",
    "run_judge",
    "score_judgements",
]

"""Judges of the judged suites: the judge model apart from the reader, and the judge's own validation.

``resolve_judge`` picks the grader of CCRS, MedRGB and the audit (``--judge-llm`` /
``COMETA_JUDGE_LLM__*``) and refuses a run where it is the reader unless ``--allow-self-judge``.
"""

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
    "SELF_JUDGE_WARNING",
    "JudgeChoice",
    "build_judge_llm",
    "judge_notes",
    "llm_identity",
    "parse_llm_spec",
    "resolve_judge",
]

"""Ambiguous lay phrases mapped only in context ("came back", "spread", "all clear", "positive", "negative").

A lay phrase that names a clinical concept in one sentence is everyday language in the next: "the cancer came
back" is a recurrence, "CA 19-9 came back really high" is a test result; "the cancer spread to her bones" is a
metastasis, "the infection spread" is not. The deterministic rewriter asks :func:`allowed_in_context` before
it maps one of these phrases; every other lexicon phrase maps wherever it appears.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["allowed_in_context"]

# Words that make a question about cancer (normalised tokens).
_CANCER = frozenset(
    (
        "cancer cancers tumour tumor tumours tumors carcinoma lymphoma leukemia leukaemia melanoma sarcoma "
        "myeloma glioma glioblastoma malignant malignancy metastatic metastasis metastases oncologist "
        "oncology "
        "chemo chemotherapy radiotherapy radiation remission relapse mastectomy lumpectomy whipple neoplasm "
        "neoplasms mesothelioma adenocarcinoma"
    ).split()
)
# Words that make "came back"/"all clear" a test result rather than the disease returning.
_RESULT = frozenset(
    (
        "result results test tests testing scan scans biopsy biopsies level levels marker markers bloodwork "
        "blood labs lab report reports pathology psa ca ca125 cea count counts mammogram smear swab xray "
        "x ray "
        "mri ct pet ultrasound screening screen reading numbers number value values"
    ).split()
)
# What a result "came back" as: never a recurrence.
_RESULT_WORDS = frozenset(
    "high higher low lower positive negative normal abnormal clear elevated raised fine ok okay good bad "
    "inconclusive borderline really very".split()
)
_RECURRENCE = frozenset({"came back", "comes back", "coming back", "come back"})
_SPREAD_PREFIX = "spread"
_ALL_CLEAR = frozenset({"all clear"})


def allowed_in_context(phrase: str, tokens: Sequence[str], start: int, end: int) -> bool:
    """Whether lexicon ``phrase`` (tokens[start:end] of the question) means its clinical concept here."""
    cancer = any(t in _CANCER for t in tokens)
    before = tokens[max(0, start - 4) : start]
    after = tokens[end : end + 2]
    if phrase in _RECURRENCE:
        # "the cancer came back": recurrence; "the biopsy came back negative", "CA 19-9 came back high":
        # a result.
        return cancer and not any(t in _RESULT for t in before) and not any(t in _RESULT_WORDS for t in after)
    if phrase.startswith(_SPREAD_PREFIX):
        # Metastasis only when the question is about cancer ("the flu spread through the house" is not).
        return cancer
    if phrase in _ALL_CLEAR:
        # "the scan was all clear": no evidence of disease; "all clear to fly": permission, not a finding.
        return (cancer or any(t in _RESULT for t in tokens)) and (not after or after[0] != "to")
    return True

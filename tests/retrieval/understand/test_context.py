"""Lexicon audit: ambiguous lay phrases ("came back", "spread", "positive", "negative", "clear") map in
context only."""

from __future__ import annotations

import datetime

import pytest

from retrieval.understand import DeterministicRewriter

REWRITER = DeterministicRewriter()


def meshes(question: str) -> set[str | None]:
    return {c.mesh for c in REWRITER.rewrite(question, today=datetime.date(2026, 1, 1)).concepts}


RECURRENCE = "Neoplasm Recurrence, Local"
METASTASIS = "Neoplasm Metastasis"
DISEASE_FREE = "Disease-Free Survival"


@pytest.mark.parametrize(
    ("question", "present", "absent"),
    [
        # "came back": recurrence when the cancer comes back, never when a test result does.
        ("My breast cancer came back after 5 years, what now?", RECURRENCE, None),
        ("CA 19 9 came back really high, is the whipple pointless?", None, RECURRENCE),
        ("my biopsy came back negative, should I still worry about cancer?", None, RECURRENCE),
        ("My knee pain came back after physio, should I see a doctor?", None, RECURRENCE),
        # "spread": metastasis in a cancer question only.
        ("Has the lung cancer spread if she coughs blood?", METASTASIS, None),
        ("the flu spread through our house, is my mom at risk?", None, METASTASIS),
        # "positive" / "negative": a test result, never a concept of their own ...
        ("her HER2 test was positive, does herceptin help?", "Receptor, ErbB-2", RECURRENCE),
        # ... except inside a fixed clinical compound.
        ("triple negative breast cancer chemo options", "Triple Negative Breast Neoplasms", None),
        # "clear": disease-free only for a scan or cancer result, not a permission.
        ("my scan was all clear after chemo, how often should I get checked?", DISEASE_FREE, None),
        ("I got the all clear to fly after my surgery", None, DISEASE_FREE),
    ],
)
def test_ambiguous_phrases_map_in_context_only(
    question: str, present: str | None, absent: str | None
) -> None:
    found = meshes(question)
    if present is not None:
        assert present in found, found
    if absent is not None:
        assert absent not in found, found

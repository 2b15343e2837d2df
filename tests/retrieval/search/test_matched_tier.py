"""Adapt-E's matched tier: the kind of the first tier that collected PMIDs, read from its parsed query."""

from __future__ import annotations

from typing import Literal

from retrieval.search import AdaptEResult, TierResult

_Kind = Literal["ladder", "union", "fallback", "undated"]


def result(query: str, kind: _Kind = "ladder", **extra: object) -> AdaptEResult:
    tier = TierResult(1, query, 5, 1.0, True, 5, kind)
    return AdaptEResult(("1",), (tier,), False, False, 1, **extra)  # type: ignore[arg-type]


def test_a_conjunction_is_strict_and_a_disjunction_relaxed() -> None:
    assert result('"tamoxifen"[tiab] AND "recurrence"[tiab]').matched_tier == "strict"
    assert result('("a"[tiab] OR "b"[mh]) AND "c"[tiab]').matched_tier == "strict"
    assert result('"tamoxifen"[tiab] OR "recurrence"[tiab]').matched_tier == "relaxed"
    # Only a ladder tier vouches for the concepts: the fallback and the undated rerun do not.
    assert result('"a"[tiab] AND "b"[tiab]', "fallback").matched_tier == "relaxed"
    assert result('"a"[tiab] AND "b"[tiab]', "undated").matched_tier == "relaxed"
    # "and" inside a phrase is a word, not an operator.
    assert result('"head and neck"[tiab]').matched_tier == "relaxed"


def test_a_lone_heading_is_generic_unless_it_is_the_questions_own_concept() -> None:
    assert result('"Neoplasms"[mh]').matched_tier == "generic"
    assert result('("Neoplasm Metastasis"[mh])').matched_tier == "generic"
    assert result('"Neoplasms"[mh]', concepts=frozenset({"cancer", "neoplasms"})).matched_tier == "relaxed"
    assert result('"Neoplasms"[tiab]').matched_tier == "relaxed"


def test_nothing_matched_and_the_union_strategy() -> None:
    empty = AdaptEResult((), (TierResult(1, '"x"[tiab]', 0, 1.0, False, 0),), True, False, None)
    assert empty.matched_tier == "none"
    union = '("a"[tiab] AND "b"[tiab]) OR ("a"[tiab])'
    assert result(union, "union").matched_tier == "relaxed"
    assert result(union, "union", strictest_local='"a"[tiab] AND "b"[tiab]').matched_tier == "strict"
    assert result(union, "union", strictest_local='"a"[tiab]').matched_tier == "relaxed"

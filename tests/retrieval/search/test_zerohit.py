"""Why a search found nothing: the one cause decision, and PubMed's ErrorList/WarningList in fixed words."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from retrieval.ncbi import BadRequest, RateLimited, ServerError, TransportError
from retrieval.search import (
    ZERO_HIT_CAUSES,
    AdaptEResult,
    TierResult,
    count_zero_hit,
    error_cause,
    pubmed_warnings,
    zero_hit_cause,
)

QUERY = '("Glioblastoma"[mh] OR "glioblastoma"[tiab]) AND "kowalski"[tiab]'


def tier(count: int = 0, query: str = QUERY, **lists: Any) -> TierResult:
    return TierResult(1, query, count, 1.0, count > 0, count, **lists)


def result(*tiers: TierResult, errors: tuple[str, ...] = ()) -> AdaptEResult:
    return AdaptEResult((), tiers, True, False, None, errors=errors)


def cause(adapte: AdaptEResult, **flags: bool) -> str:
    args = {"candidates": False, "unavailable": False, "phi_emptied": False, **flags}
    return zero_hit_cause(adapte, **args)


def test_the_strongest_explanation_wins() -> None:
    listed = result(tier(phrases_not_found=("x",), quoted_phrases_not_found=('"y"',)), errors=("BadRequest",))
    assert cause(listed, phi_emptied=True, unavailable=True, candidates=True) == "phi_scrubbed"
    assert cause(listed, unavailable=True, candidates=True) == "ncbi_unavailable"
    assert cause(listed, candidates=True) == "pubmed_error"  # a refused query
    assert cause(result(tier(phrases_not_found=("x",))), candidates=True) == "filtered"
    assert (
        cause(result(tier(fields_not_found=("zz",)), tier(quoted_phrases_not_found=('"y"',))))
        == "pubmed_error"
    )
    assert cause(result(tier(phrases_ignored=("of",)))) == "pubmed_warning"
    assert cause(result(tier(quoted_phrases_not_found=('"y"',)))) == "pubmed_warning"
    assert cause(result(tier())) == "none_found"
    assert cause(result()) == "none_found"
    # A list reported by a tier that found something explains nothing about the zero-hit.
    assert cause(result(tier(3, phrases_not_found=("x",)), tier())) == "none_found"


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ServerError("500"), "ncbi_unavailable"),
        (TransportError("timed out"), "ncbi_unavailable"),
        (RateLimited("429"), "ncbi_unavailable"),
        (BadRequest("Invalid query"), "pubmed_error"),
    ],
)
def test_a_search_that_raised(exc: Exception, expected: str) -> None:
    assert error_cause(exc) == expected


def test_only_a_recognised_concept_in_the_query_sent_is_named() -> None:
    adapte = result(
        tier(phrases_not_found=("Glioblastoma[mh]", "kowalski[tiab]")),
        tier(quoted_phrases_not_found=('"glioblastoma"[tiab]', '"Astrocytoma"[mh]')),
        tier(phrases_ignored=("of",), fields_not_found=("glioblastoma",)),
        tier(5, phrases_not_found=("Oligodendroglioma[mh]",)),  # found something: not listed
    )
    # "Astrocytoma" is a concept but not in the query that reported it; "kowalski" is no concept.
    warnings = pubmed_warnings(adapte, ["glioblastoma", "Glioblastoma", "Astrocytoma", "Oligodendroglioma"])
    assert warnings == [
        'PubMed: phrase not found: "glioblastoma"',
        "PubMed: phrase not found",
        'PubMed: quoted phrase not found: "glioblastoma"',
        "PubMed: quoted phrase not found",
        "PubMed: field not recognised",
        "PubMed: phrase ignored",
    ]
    assert not any("kowalski" in w.lower() or "Astrocytoma" in w for w in warnings)
    assert pubmed_warnings(result(tier(phrases_not_found=("Glioblastoma[mh]",))), []) == [
        "PubMed: phrase not found"
    ]


def test_every_cause_is_a_series_from_the_start_and_counts_once() -> None:
    def value(c: str) -> float:
        got = REGISTRY.get_sample_value("cometa_zero_hit_total", {"cause": c})
        assert got is not None, c  # exported at 0 before the first zero-hit
        return got

    before = {c: value(c) for c in ZERO_HIT_CAUSES}
    count_zero_hit("pubmed_warning")
    assert {c: value(c) - before[c] for c in ZERO_HIT_CAUSES if value(c) != before[c]} == {
        "pubmed_warning": 1.0
    }

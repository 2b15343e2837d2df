"""Fixed formulas pinned against hand-worked values: weighted average, Holm, one-sided p, scale parsing."""

from __future__ import annotations

import math

import pytest

from eval.ccrs import parse_score
from eval.compare import hypothesis_tests, parse_hypothesis
from eval.stats import holm, one_sided_p, weighted_accuracy


def test_weighted_accuracy_is_cometa_table_4_avg() -> None:
    # CoMeta Table 4, CoMeta row, with the CMMQA counts of Figure 1: 24,901.7 / 344 = 72.3886... -> 72.39.
    published = {
        "mmlu": (23, 82.61),
        "medqa": (86, 69.77),
        "medmcqa": (93, 68.82),
        "pubmedqa": (60, 65.00),
        "bioasq": (82, 81.71),
    }
    assert round(weighted_accuracy(published), 2) == 72.39
    assert round(sum(acc for _, acc in published.values()) / 5, 2) == 73.58  # the macro mean differs
    assert math.isnan(weighted_accuracy({}))


def test_holm_by_hand() -> None:
    # m = 3, sorted 0.01, 0.03, 0.04 -> 3 * 0.01 = 0.03; 2 * 0.03 = 0.06; 1 * 0.04 = 0.04 -> max(0.06, 0.04)
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03})
    assert adjusted == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})
    assert list(adjusted) == ["a", "b", "c"]  # keys in the caller's order
    # Capped at 1; a NaN is no test (left out of m) and adjusts to 1.0.
    assert holm({"x": 0.6, "y": 0.5, "z": math.nan}) == pytest.approx({"x": 1.0, "y": 1.0, "z": 1.0})
    assert holm({"only": 0.02}) == {"only": 0.02}


def test_one_sided_p_by_hand() -> None:
    assert one_sided_p(0.04, 0.1, +1) == pytest.approx(0.02)  # the expected direction: halved
    assert one_sided_p(0.04, -0.1, +1) == pytest.approx(0.98)  # the wrong direction: never significant
    assert one_sided_p(0.04, -0.1, -1) == pytest.approx(0.02)
    assert one_sided_p(0.04, 0.0, +1) == 0.5
    assert one_sided_p(0.04, 0.1, 0) == 0.04  # two-sided


def test_hypotheses_are_one_sided_and_holm_corrected_together() -> None:
    tukey = {
        "CC": {"pairs": {"A vs B": {"diff": 0.2, "p": 0.01}, "A vs C": {"diff": -0.05, "p": 0.5}}},
        "QR": {"pairs": {"A vs B": {"diff": -0.1, "p": 0.02}, "A vs C": {"diff": 0.3, "p": 0.03}}},
    }
    rows = hypothesis_tests(tukey, ["A>B@CC,QR", "C!=A@CC"], ["A", "B", "C"], alpha=0.05)
    got = {(r["hypothesis"], r["metric"]): r for r in rows}
    # raw: CC A>B 0.005; QR A>B (wrong direction) 0.99; CC C vs A two-sided 0.5 with diff +0.05 (C - A)
    assert got[("A>B@CC,QR", "CC")]["p"] == pytest.approx(0.005)
    assert got[("A>B@CC,QR", "QR")]["p"] == pytest.approx(0.99)
    assert got[("C!=A@CC", "CC")]["diff"] == pytest.approx(0.05)
    # Holm over m = 3: 3 * 0.005 = 0.015; 2 * 0.5 = 1.0; max(1.0, 0.99) = 1.0
    assert got[("A>B@CC,QR", "CC")]["p_holm"] == pytest.approx(0.015)
    assert got[("A>B@CC,QR", "CC")]["reject_h0"] is True
    assert got[("C!=A@CC", "CC")]["p_holm"] == pytest.approx(1.0)
    assert got[("A>B@CC,QR", "QR")]["reject_h0"] is False
    with pytest.raises(ValueError, match="unknown system"):
        parse_hypothesis("A>Z", ["A", "B"])
    with pytest.raises(ValueError, match="unknown metrics"):
        parse_hypothesis("A>B@XX", ["A", "B"])
    assert parse_hypothesis("B < A @ qr", ["A", "B"]) == ("B", "A", -1, ("QR",))


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("On a scale of 0 to 100, I would rate this response 85.", (85.0, False)),
        ("On a scale of 0 to 100, the response is poorly grounded.", (None, False)),  # no score: not 0
        ("Score (0-100): 70", (70.0, False)),
        ("Between 0 and 100: 40", (40.0, False)),
        ("I give it 85 out of 100", (85.0, False)),
        ("Score: 72.5/100", (72.5, False)),
        ("0", (0.0, False)),  # a real zero stays zero
        ("150", (100.0, True)),
    ],
)
def test_the_scale_is_never_a_score(reply: str, expected: tuple[float | None, bool]) -> None:
    assert parse_score(reply) == expected

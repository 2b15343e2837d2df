"""eval.stats against values worked out by hand (arithmetic in the comments), cross-checked with scipy."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from eval.stats import (
    asl_curve,
    average_ranks,
    discriminative_power,
    fisher_z_average,
    floor_ceiling,
    histogram,
    kendall_tau_b,
    mirage_std,
    pearson,
    randomised_tukey_hsd,
    spearman,
    tie_probability,
)


def test_mirage_std_by_hand() -> None:
    # sqrt(0.5 * 0.5 / 100) = sqrt(0.0025) = 0.05
    assert mirage_std(0.5, 100) == pytest.approx(0.05)
    # sqrt(0.9 * 0.1 / 400) = sqrt(0.000225) = 0.015
    assert mirage_std(0.9, 400) == pytest.approx(0.015)
    assert mirage_std(1.0, 7) == 0.0
    with pytest.raises(ValueError):
        mirage_std(0.5, 0)
    with pytest.raises(ValueError):
        mirage_std(1.2, 10)


def test_pearson_by_hand() -> None:
    # x = 1,2,3 (mean 2): dx = -1, 0, 1;  y = 1,2,4 (mean 7/3): dy = -4/3, -1/3, 5/3
    # sum dx dy = 4/3 + 0 + 5/3 = 3;  sum dx^2 = 2;  sum dy^2 = (16 + 1 + 25) / 9 = 42/9
    # r = 3 / sqrt(2 * 42/9) = 9 / sqrt(84) = 0.981981
    assert pearson([1, 2, 3], [1, 2, 4]) == pytest.approx(9 / math.sqrt(84))
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))  # constant side: undefined
    assert math.isnan(pearson([1], [2]))


def test_average_ranks_share_ties() -> None:
    # sorted 2,5,7,7,9 -> ranks 1,2,3,4,5; the two 7s share (3 + 4) / 2 = 3.5
    assert average_ranks([7, 2, 9, 7, 5]).tolist() == [3.5, 1.0, 5.0, 3.5, 2.0]


def test_spearman_with_ties_by_hand() -> None:
    # ranks x = 1, 2.5, 2.5, 4;  ranks y = 1, 3, 2, 4 (both mean 2.5)
    # dx = -1.5, 0, 0, 1.5;  dy = -1.5, .5, -.5, 1.5
    # sum dx dy = 2.25 + 2.25 = 4.5;  sum dx^2 = 4.5;  sum dy^2 = 2.25 + .25 + .25 + 2.25 = 5
    # rho = 4.5 / sqrt(4.5 * 5) = 4.5 / sqrt(22.5) = 0.948683
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))


def test_kendall_tau_b_with_ties_by_hand() -> None:
    # x = 1,2,2,3; y = 1,3,2,4. The 6 pairs: (1,2) C, (1,3) C, (1,4) C, (2,3) tied in x, (2,4) C, (3,4) C
    # C - D = 5; n0 = 6; n1 (tied in x) = 1; n2 (tied in y) = 0 -> tau_b = 5 / sqrt(5 * 6) = 0.912871
    assert kendall_tau_b([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(5 / math.sqrt(30))
    # Perfectly reversed: every pair discordant
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_correlations_match_scipy_on_tied_scores() -> None:
    rng = np.random.default_rng(7)
    # Judge-like scores: few distinct values, so ties are everywhere.
    x = rng.integers(0, 5, size=60) / 4
    y = np.clip(x + rng.integers(-1, 2, size=60) / 4, 0, 1)
    assert pearson(x, y) == pytest.approx(sps.pearsonr(x, y).statistic)
    assert spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic)
    assert kendall_tau_b(x, y) == pytest.approx(sps.kendalltau(x, y, variant="b").statistic)


def test_fisher_z_average_by_hand() -> None:
    # atanh(r) = 0.5 ln((1+r)/(1-r)): r=.5 -> 0.5 ln 3, r=.8 -> 0.5 ln 9; mean = 0.5 ln sqrt(27)
    # back: tanh(0.5 ln k) = (k - 1) / (k + 1) with k = sqrt(27) -> 4.196152 / 6.196152 = 0.677222
    k = math.sqrt(27)
    assert fisher_z_average([0.5, 0.8]) == pytest.approx((k - 1) / (k + 1))
    assert fisher_z_average([0.5, -0.5]) == pytest.approx(0.0)
    # |r| = 1 is clipped, not infinite; NaNs are skipped
    assert fisher_z_average([1.0, 1.0]) == pytest.approx(1.0, abs=1e-5)
    assert fisher_z_average([0.3, math.nan]) == pytest.approx(0.3)
    assert math.isnan(fisher_z_average([]))


def test_histogram_floor_ceiling_and_ties_by_hand() -> None:
    scores = [0.0, 0.0, 0.5, 1.0]
    counts, edges = histogram(scores, bins=4)
    # bins [0,.25) [.25,.5) [.5,.75) [.75,1]: two zeros, 0.5 in the third, 1.0 in the closed last bin
    assert counts == [2, 0, 1, 1]
    assert edges == [0.0, 0.25, 0.5, 0.75, 1.0]
    fc = floor_ceiling(scores, 0.0, 1.0)
    assert (fc["floor_count"], fc["floor_share"]) == (2, 0.5)
    assert (fc["ceiling_count"], fc["ceiling_share"]) == (1, 0.25)
    # counts {1: 2, 2: 1, 3: 1}: 2*1 / (4*3) = 1/6
    assert tie_probability([1, 1, 2, 3]) == pytest.approx(1 / 6)
    # {a:3, b:2}: (3*2 + 2*1) / (5*4) = 8/20 = 0.4
    assert tie_probability([0.7, 0.7, 0.7, 0.2, 0.2]) == pytest.approx(0.4)
    assert tie_probability([1, 2, 3]) == 0.0
    assert math.isnan(tie_probability([1]))


def test_tukey_two_items_two_systems_matches_exact_enumeration() -> None:
    # Items (1, 0) and (1, 0). Each trial swaps each row or not (4 equally likely outcomes):
    # no swap / both swapped -> means (1, 0) or (0, 1): range 1; one swapped -> (.5, .5): range 0.
    # Observed |diff| = 1, so the exact p-value is 2/4 = 0.5.
    result = randomised_tukey_hsd({"A": [1, 1], "B": [0, 0]}, B=20_000, seed=3)
    assert result.diffs[("A", "B")] == pytest.approx(1.0)
    assert result.p_values[("A", "B")] == pytest.approx(0.5, abs=0.02)  # binomial sd 0.0035
    assert result.means == {"A": 1.0, "B": 0.0}


def test_tukey_exact_small_case_three_systems() -> None:
    # Enumerate all (3!)^2 = 36 within-item permutations by hand-rolled loop and compare.
    data = {"A": [0.9, 0.6], "B": [0.5, 0.4], "C": [0.1, 0.5]}
    rows = list(zip(*data.values(), strict=True))
    ranges = []
    for p1, p2 in itertools.product(itertools.permutations(range(3)), repeat=2):
        means = [(rows[0][p1[k]] + rows[1][p2[k]]) / 2 for k in range(3)]
        ranges.append(max(means) - min(means))
    exact = {
        (a, b): sum(r >= abs(np.mean(data[a]) - np.mean(data[b])) - 1e-12 for r in ranges) / len(ranges)
        for a, b in itertools.combinations(data, 2)
    }
    result = randomised_tukey_hsd(data, B=30_000, seed=1)
    for pair, p in exact.items():
        assert result.p_values[pair] == pytest.approx(p, abs=0.015)


def test_tukey_discriminative_power_separates_only_real_differences() -> None:
    # 30 items: A always 1, B and C always 0. A shuffle gives range 1 only if all 30 rows put the 1 in the
    # same column (3 * 3^-30 ~ 0): p(A,B) = p(A,C) = 0. B and C have diff 0, reached by every trial: p = 1.
    n = 30
    result = randomised_tukey_hsd({"A": [1.0] * n, "B": [0.0] * n, "C": [0.0] * n}, B=500, seed=0)
    assert result.p_values[("A", "B")] == 0.0
    assert result.p_values[("A", "C")] == 0.0
    assert result.p_values[("B", "C")] == 1.0
    # 2 of 3 pairs significant at 0.05
    assert discriminative_power(result) == pytest.approx(2 / 3)
    assert result.significant() == {("A", "B"): True, ("A", "C"): True, ("B", "C"): False}
    assert asl_curve(result) == [0.0, 0.0, 1.0]
    # The mapping form gives the same share: 14 of 15 pairs below 0.05 -> 0.9333 (CCRS Table 2, QR)
    assert discriminative_power(
        {(str(i), "x"): (0.01 if i < 14 else 0.2) for i in range(15)}
    ) == pytest.approx(14 / 15)


def test_tukey_is_seeded_and_validates_input() -> None:
    data = {"A": [0.2, 0.4, 0.9, 0.5], "B": [0.1, 0.5, 0.7, 0.3]}
    assert randomised_tukey_hsd(data, B=300, seed=5) == randomised_tukey_hsd(data, B=300, seed=5)
    with pytest.raises(ValueError):
        randomised_tukey_hsd({"A": [1.0]}, B=10)
    with pytest.raises(ValueError):
        randomised_tukey_hsd({"A": [1.0, math.nan], "B": [0.0, 1.0]}, B=10)
    with pytest.raises(ValueError):
        randomised_tukey_hsd({"A": [1.0, 0.0], "B": [0.0]}, B=10)

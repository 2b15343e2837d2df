"""Statistics shared by the evaluation suites: MIRAGE error bars, correlations, judge-score validity.

* ``mirage_std``: the MIRAGE paper's standard deviation of an accuracy, ``sqrt(acc * (1 - acc) / n)``.
* ``pearson`` / ``spearman`` (average ranks for ties) / ``kendall_tau_b`` and ``fisher_z_average``
  (correlations averaged in z space, as CCRS Fig. 3a averages per-system matrices).
* Score-distribution diagnostics used by CCRS §4.1: ``histogram``, ``floor_ceiling`` and
  ``tie_probability``.
* ``randomised_tukey_hsd`` and ``discriminative_power`` (CCRS §4.1.3): a paired randomisation test over all
  system pairs at once, and the share of system pairs it separates at α.
* ``one_sided_p`` and ``holm`` (CCRS §5, Appendix E): a directional hypothesis from a two-sided p-value, and
  the Holm-Bonferroni step-down adjustment across hypotheses.
* ``cohen_kappa`` and ``label_agreement`` (judge validation): chance-corrected agreement with human labels,
  accuracy, per-label precision/recall and the confusion matrix.
* ``weighted_accuracy``: accuracy pooled over subsets, Σ nᵢ·accᵢ / Σ nᵢ (CoMeta Table 4's "Avg").

Everything is plain numpy; NaN means "undefined" (zero variance, fewer than two values), never an error.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "TukeyResult",
    "asl_curve",
    "average_ranks",
    "cohen_kappa",
    "discriminative_power",
    "fisher_z_average",
    "floor_ceiling",
    "histogram",
    "holm",
    "kendall_tau_b",
    "label_agreement",
    "mirage_std",
    "one_sided_p",
    "pearson",
    "randomised_tukey_hsd",
    "spearman",
    "tie_probability",
    "weighted_accuracy",
]

FloatArray = npt.NDArray[np.float64]
# A score equal to a bound within this tolerance counts as at the bound (judge scores are k/100).
_BOUND_TOL = 1e-9


def _arr(values: Sequence[float] | FloatArray) -> FloatArray:
    return np.asarray(values, dtype=np.float64)


def mirage_std(acc: float, n: int) -> float:
    """MIRAGE's standard deviation of an accuracy over ``n`` questions: ``sqrt(acc (1 - acc) / n)``."""
    if n <= 0:
        raise ValueError("n must be positive")
    if not 0.0 <= acc <= 1.0:
        raise ValueError("acc must be within [0, 1]")
    return math.sqrt(acc * (1.0 - acc) / n)


def _pair(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> tuple[FloatArray, FloatArray]:
    a, b = _arr(x), _arr(y)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("x and y must be 1-D and of equal length")
    return a, b


def pearson(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float:
    """Pearson's r; NaN when either side is constant or has fewer than two values."""
    a, b = _pair(x, y)
    if a.size < 2:
        return math.nan
    da, db = a - a.mean(), b - b.mean()
    denom = math.sqrt(float(np.dot(da, da)) * float(np.dot(db, db)))
    if denom == 0.0:
        return math.nan
    return float(np.clip(np.dot(da, db) / denom, -1.0, 1.0))


def average_ranks(values: Sequence[float] | FloatArray) -> FloatArray:
    """1-based ranks; tied values share the mean of the ranks they span (``[5, 7, 7] -> [1, 2.5, 2.5]``)."""
    a = _arr(values)
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(a.size, dtype=np.float64)
    sorted_a = a[order]
    i = 0
    while i < a.size:
        j = i
        while j + 1 < a.size and sorted_a[j + 1] == sorted_a[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float:
    """Spearman's rho: Pearson's r of the average ranks (so ties are handled as scipy does)."""
    a, b = _pair(x, y)
    return pearson(average_ranks(a), average_ranks(b))


def kendall_tau_b(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float:
    """Kendall's tau-b: ``(C - D) / sqrt((n0 - n1)(n0 - n2))`` with n1/n2 the pairs tied in x/y.

    O(n²) over pairs, vectorised row by row; fine for the few thousand items a suite scores.
    """
    a, b = _pair(x, y)
    n = a.size
    if n < 2:
        return math.nan
    concordant_minus_discordant = 0.0
    tied_x = tied_y = 0
    for i in range(n - 1):
        sx = np.sign(a[i + 1 :] - a[i])
        sy = np.sign(b[i + 1 :] - b[i])
        concordant_minus_discordant += float(np.sum(sx * sy))
        tied_x += int(np.sum(sx == 0))
        tied_y += int(np.sum(sy == 0))
    n0 = n * (n - 1) // 2
    denom = math.sqrt(float(n0 - tied_x) * float(n0 - tied_y))
    if denom == 0.0:
        return math.nan
    return concordant_minus_discordant / denom


def fisher_z_average(rs: Sequence[float], *, clip: float = 0.999999) -> float:
    """Average correlations in Fisher z space: ``tanh(mean(atanh(r)))``.

    |r| is clipped below 1 first (atanh(±1) is infinite); NaN entries are skipped; NaN if none remain.
    """
    finite = [float(r) for r in rs if not math.isnan(float(r))]
    if not finite:
        return math.nan
    z = np.arctanh(np.clip(_arr(finite), -clip, clip))
    return float(np.tanh(z.mean()))


def histogram(
    scores: Sequence[float] | FloatArray, *, bins: int = 10, lo: float = 0.0, hi: float = 1.0
) -> tuple[list[int], list[float]]:
    """Counts in ``bins`` equal-width bins over ``[lo, hi]`` (the last bin closed) and the bin edges."""
    counts, edges = np.histogram(_arr(scores), bins=bins, range=(lo, hi))
    return [int(c) for c in counts], [float(e) for e in edges]


def floor_ceiling(scores: Sequence[float] | FloatArray, lo: float = 0.0, hi: float = 1.0) -> dict[str, float]:
    """How many scores sit exactly at the floor ``lo`` and at the ceiling ``hi`` (CCRS Tables 5-6)."""
    a = _arr(scores)
    n = int(a.size)
    floor = int(np.sum(np.abs(a - lo) <= _BOUND_TOL))
    ceiling = int(np.sum(np.abs(a - hi) <= _BOUND_TOL))
    return {
        "n": float(n),
        "floor_count": float(floor),
        "floor_share": floor / n if n else math.nan,
        "ceiling_count": float(ceiling),
        "ceiling_share": ceiling / n if n else math.nan,
    }


def tie_probability(scores: Sequence[float] | FloatArray) -> float:
    """Probability that two distinct responses drawn at random (without replacement) get the same score.

    ``sum_v c_v (c_v - 1) / (n (n - 1))`` over the distinct values v with counts c_v (CCRS Table 13).
    """
    a = _arr(scores)
    n = int(a.size)
    if n < 2:
        return math.nan
    counts = Counter(np.round(a, 12).tolist())
    return sum(c * (c - 1) for c in counts.values()) / (n * (n - 1))


@dataclass(frozen=True)
class TukeyResult:
    """Pairwise randomised Tukey HSD over systems scored on the same items."""

    systems: tuple[str, ...]
    n_items: int
    B: int
    means: dict[str, float]
    # (system_i, system_j) with i before j in ``systems`` -> mean_i - mean_j and its p-value.
    diffs: dict[tuple[str, str], float]
    p_values: dict[tuple[str, str], float]

    def significant(self, alpha: float = 0.05) -> dict[tuple[str, str], bool]:
        return {pair: p < alpha for pair, p in self.p_values.items()}


def randomised_tukey_hsd(
    scores_by_system: Mapping[str, Sequence[float] | FloatArray],
    B: int = 1000,
    seed: int = 0,
    *,
    chunk: int = 200,
) -> TukeyResult:
    """Randomised (permutation) Tukey HSD over paired scores, as CCRS uses for discriminative power.

    The data are an items × systems matrix (every system scored on the same items). Under H0 the system
    labels are exchangeable within an item, so each of the ``B`` trials shuffles every row independently and
    records the range (max − min) of the system means. The p-value of a pair is the share of trials whose
    range reaches the pair's observed |mean difference|: comparing every pair with the same max-range
    statistic is what controls the family-wise error over all pairs (Carterette 2012; Sakai 2014).
    """
    systems = tuple(scores_by_system)
    if len(systems) < 2:
        raise ValueError("need at least two systems")
    if B < 1:
        raise ValueError("B must be positive")
    matrix = np.column_stack([_arr(scores_by_system[s]) for s in systems])
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise ValueError("every system needs the same, non-zero number of scores")
    if np.isnan(matrix).any():
        raise ValueError("scores contain NaN: drop items some system has no score for first")
    n, m = matrix.shape
    means = matrix.mean(axis=0)
    pairs = list(itertools.combinations(range(m), 2))
    observed = {(i, j): float(means[i] - means[j]) for i, j in pairs}
    rng = np.random.default_rng(seed)
    ranges = np.empty(B, dtype=np.float64)
    done = 0
    # Bound memory to a few million cells per chunk whatever the item count.
    step = max(1, min(chunk, 2_000_000 // (n * m)))
    while done < B:
        k = min(step, B - done)
        # One independent permutation of the m systems per (trial, item): argsort of uniform keys.
        perm = np.argsort(rng.random((k, n, m)), axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(matrix, (k, n, m)), perm, axis=2)
        trial_means = shuffled.mean(axis=1)
        ranges[done : done + k] = trial_means.max(axis=1) - trial_means.min(axis=1)
        done += k
    p_values: dict[tuple[str, str], float] = {}
    diffs: dict[tuple[str, str], float] = {}
    for (i, j), diff in observed.items():
        # The tolerance keeps an exact tie (e.g. a zero difference) from being lost to float rounding.
        count = int(np.sum(ranges >= abs(diff) - 1e-12))
        key = (systems[i], systems[j])
        p_values[key] = count / B
        diffs[key] = diff
    return TukeyResult(
        systems=systems,
        n_items=int(n),
        B=B,
        means={s: float(means[k]) for k, s in enumerate(systems)},
        diffs=diffs,
        p_values=p_values,
    )


def discriminative_power(result: TukeyResult | Mapping[tuple[str, str], float], alpha: float = 0.05) -> float:
    """Share of system pairs whose difference is significant at ``alpha`` (CCRS Table 2: 14/15 = 0.933)."""
    p_values = result.p_values if isinstance(result, TukeyResult) else result
    if not p_values:
        return math.nan
    return sum(1 for p in p_values.values() if p < alpha) / len(p_values)


def asl_curve(result: TukeyResult | Mapping[tuple[str, str], float]) -> list[float]:
    """Achieved significance levels of all pairs, ascending: the y values of an ASL curve (CCRS Fig. 3b)."""
    p_values = result.p_values if isinstance(result, TukeyResult) else result
    return sorted(p_values.values())


def one_sided_p(p_two_sided: float, diff: float, expected_sign: int, *, tol: float = 1e-9) -> float:
    """The one-sided p-value of "the difference has sign ``expected_sign``" from a symmetric two-sided test.

    Observed in the expected direction: p / 2 (as CCRS Appendix E); a zero difference: 0.5; the opposite
    direction: 1 - p / 2 (CCRS's script keeps the two-sided p there, which could call a difference in the
    wrong direction significant). ``expected_sign`` 0 keeps the two-sided p.
    """
    if expected_sign == 0 or math.isnan(p_two_sided):
        return p_two_sided
    if abs(diff) < tol:
        return 0.5
    if (diff > 0) == (expected_sign > 0):
        return p_two_sided / 2.0
    return 1.0 - p_two_sided / 2.0


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm-Bonferroni adjusted p-values, same keys: the i-th smallest raw p (1-based) of m becomes
    ``max_{j <= i} min(1, (m - j + 1) * p_(j))``, so rejecting adjusted p < α controls the family-wise error.

    NaN p-values are left out of m and adjusted to 1.0 (as CCRS's script does).
    """
    finite = sorted(((p, k) for k, p in p_values.items() if not math.isnan(p)), key=lambda t: (t[0], t[1]))
    m = len(finite)
    out = {k: 1.0 for k, p in p_values.items() if math.isnan(p)}
    running = 0.0
    for i, (p, key) in enumerate(finite):
        running = max(running, min(1.0, (m - i) * p))
        out[key] = running
    return {k: out[k] for k in p_values}


def weighted_accuracy(per_subset: Mapping[str, tuple[int, float]]) -> float:
    """Question-weighted accuracy over subsets ``{name: (n, acc)}``: ``Σ nᵢ·accᵢ / Σ nᵢ``.

    CoMeta Table 4's CoMeta row: (23·82.61 + 86·69.77 + 93·68.82 + 60·65.00 + 82·81.71) / 344 = 72.39, where
    the mean of the five subset accuracies would be 73.58. NaN when there are no questions.
    """
    total = sum(n for n, _ in per_subset.values())
    if total <= 0:
        return math.nan
    return sum(n * acc for n, acc in per_subset.values()) / total


def cohen_kappa(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Cohen's κ = (p_o - p_e) / (1 - p_e): p_o the observed agreement, p_e = Σ_k p_gold(k)·p_pred(k).

    NaN when there are no pairs or chance agreement is already 1 (one label everywhere on both sides).
    """
    if len(gold) != len(predicted):
        raise ValueError("gold and predicted must have the same length")
    n = len(gold)
    if n == 0:
        return math.nan
    p_o = sum(1 for g, p in zip(gold, predicted, strict=True) if g == p) / n
    cg, cp = Counter(gold), Counter(predicted)
    p_e = sum(cg[k] * cp[k] for k in cg) / (n * n)
    if p_e >= 1.0:
        return math.nan
    return (p_o - p_e) / (1.0 - p_e)


def label_agreement(
    gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]
) -> dict[str, object]:
    """Accuracy, Cohen's κ, per-label precision/recall/support and the confusion matrix (rows gold, columns
    predicted, both in ``labels`` order). A prediction outside ``labels`` (no answer) is a miss: it counts in
    its gold label's support and recall, in no matrix cell."""
    n = len(gold)
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for g, p in zip(gold, predicted, strict=True):
        if g in index and p in index:
            matrix[index[g]][index[p]] += 1
    per_label: dict[str, dict[str, float]] = {}
    for label, i in index.items():
        tp = matrix[i][i]
        predicted_as = sum(1 for p in predicted if p == label)
        # Every gold occurrence counts, also where the prediction is outside ``labels`` (a miss).
        support = sum(1 for g in gold if g == label)
        per_label[label] = {
            "precision": tp / predicted_as if predicted_as else math.nan,
            "recall": tp / support if support else math.nan,
            "support": float(support),
        }
    return {
        "n": n,
        "accuracy": sum(1 for g, p in zip(gold, predicted, strict=True) if g == p) / n if n else math.nan,
        "kappa": cohen_kappa(gold, predicted),
        "per_label": per_label,
        "labels": list(labels),
        "confusion": matrix,
    }

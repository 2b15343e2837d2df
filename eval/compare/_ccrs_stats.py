"""CCRS statistics over any number of systems: means, failures, distributions, correlations, Tukey HSD."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval import Plot, Table
from eval.stats import (
    asl_curve,
    discriminative_power,
    fisher_z_average,
    floor_ceiling,
    histogram,
    holm,
    kendall_tau_b,
    one_sided_p,
    pearson,
    randomised_tukey_hsd,
    spearman,
    tie_probability,
)

__all__ = ["METRICS", "aggregate", "ccrs_tables", "hypothesis_tests", "json_safe", "parse_hypothesis"]

METRICS: tuple[str, ...] = ("CC", "QR", "ID", "AC", "IR")


# --- aggregation --------------------------------------------------------------------------------------


@dataclass
class _Metric:
    values: list[float] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def aggregate(
    records: Sequence[Mapping[str, Any]],
    systems: Sequence[str],
    *,
    B: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    hypotheses: Sequence[str] = (),
) -> dict[str, Any]:
    """Means, failure counts, distributions, correlations, Tukey HSD, discriminative power, hypotheses.

    ``hypotheses`` (CCRS §5): ``"A>B"``, ``"A<B"`` (one-sided) or ``"A!=B"`` (two-sided), optionally limited
    to metrics with ``"A>B@QR,IR"``; each is tested on every (listed) metric with the Tukey HSD p of the
    pair (halved in the expected direction, :func:`eval.stats.one_sided_p`) and all of them are
    Holm-corrected together (:func:`eval.stats.holm`). JSON-able; NaN = undefined.
    """
    per: dict[str, dict[str, _Metric]] = {s: {m: _Metric() for m in METRICS} for s in systems}
    for rec in records:
        for s in systems:
            sysrec = rec["systems"].get(s)
            if sysrec is None:
                continue
            for m in METRICS:
                cell = per[s][m]
                status = sysrec["status"][m]
                cell.counts[status] = cell.counts.get(status, 0) + 1
                value = sysrec["scores"][m]
                if value is not None:
                    cell.values.append(float(value))
    out: dict[str, Any] = {
        "n_items": len(records),
        "systems": {},
        "modes": {},
        "correlations": {},
        "tukey": {},
    }
    for s in systems:
        # How each answer was produced: an LLM system that fell back to quoting evidence says so here.
        modes: dict[str, int] = {}
        for rec in records:
            if s in rec["systems"]:
                mode = str(rec["systems"][s].get("mode", ""))
                modes[mode] = modes.get(mode, 0) + 1
        out["modes"][s] = modes
    for s in systems:
        sys_out: dict[str, Any] = {}
        for m in METRICS:
            cell = per[s][m]
            vals = cell.values
            counts, _edges = histogram(vals, bins=10)
            sys_out[m] = {
                "mean": sum(vals) / len(vals) if vals else math.nan,
                "n": len(vals),
                "parse_failures": cell.counts.get("parse_failure", 0),
                "judge_errors": cell.counts.get("judge_error", 0),
                "reader_errors": cell.counts.get("reader_error", 0),
                "clamped": cell.counts.get("clamped", 0),
                "empty_responses": cell.counts.get("empty_response", 0),
                "histogram": counts,
                **{k: v for k, v in floor_ceiling(vals, 0.0, 1.0).items() if k != "n"},
                "tie_probability": tie_probability(vals),
            }
        out["systems"][s] = sys_out
    # Correlations between metrics, per system over the items with both scores, then Fisher-z averaged.
    for fn_name, fn in (("pearson", pearson), ("spearman", spearman), ("kendall", kendall_tau_b)):
        matrix: dict[str, dict[str, Any]] = {}
        for a, b in itertools.combinations(METRICS, 2):
            rs = []
            for s in systems:
                xs, ys = _paired(records, s, a, b)
                rs.append(fn(xs, ys) if len(xs) >= 3 else math.nan)
            matrix[f"{a}-{b}"] = {
                "per_system": dict(zip(systems, rs, strict=True)),
                "avg": fisher_z_average(rs),
            }
        out["correlations"][fn_name] = matrix
    # Tukey HSD per metric over the items every system has a score for.
    for m in METRICS:
        if len(systems) < 2:
            break
        complete = [
            rec
            for rec in records
            if all(rec["systems"].get(s, {}).get("scores", {}).get(m) is not None for s in systems)
        ]
        if len(complete) < 2:
            out["tukey"][m] = {"n_items": len(complete), "note": "too few items scored by every system"}
            continue
        tk = randomised_tukey_hsd(
            {s: [float(r["systems"][s]["scores"][m]) for r in complete] for s in systems}, B=B, seed=seed
        )
        out["tukey"][m] = {
            "n_items": tk.n_items,
            "B": tk.B,
            "pairs": {
                f"{a} vs {b}": {"diff": tk.diffs[(a, b)], "p": tk.p_values[(a, b)]} for a, b in tk.p_values
            },
            "discriminative_power": discriminative_power(tk, alpha),
            "significant_pairs": sum(1 for p in tk.p_values.values() if p < alpha),
            "pairs_total": len(tk.p_values),
            "asl": asl_curve(tk),
        }
    out["hypotheses"] = hypothesis_tests(out["tukey"], hypotheses, systems, alpha=alpha)
    return out


_HYPOTHESIS = re.compile(r"^\s*([^<>!=@]+?)\s*(>|<|!=)\s*([^<>!=@]+?)\s*(?:@\s*([A-Za-z, ]+))?$")


def parse_hypothesis(text: str, systems: Sequence[str]) -> tuple[str, str, int, tuple[str, ...]]:
    """``"A>B@QR,IR"`` -> ``("A", "B", +1, ("QR", "IR"))``; ``!=`` is direction 0 (two-sided)."""
    match = _HYPOTHESIS.match(text)
    if match is None:
        raise ValueError(f"a hypothesis is A>B, A<B or A!=B (optionally @METRIC,...), got {text!r}")
    a, op, b, metrics = match.groups()
    for name in (a, b):
        if name not in systems:
            raise ValueError(f"hypothesis {text!r}: unknown system {name!r} ({', '.join(systems)})")
    chosen = tuple(m.strip().upper() for m in (metrics or "").split(",") if m.strip()) or METRICS
    unknown = [m for m in chosen if m not in METRICS]
    if unknown:
        raise ValueError(f"hypothesis {text!r}: unknown metrics {unknown} ({', '.join(METRICS)})")
    return a, b, {">": 1, "<": -1, "!=": 0}[op], chosen


def hypothesis_tests(
    tukey: Mapping[str, Any], hypotheses: Sequence[str], systems: Sequence[str], *, alpha: float = 0.05
) -> list[dict[str, Any]]:
    """One row per (hypothesis, metric): observed difference, raw and Holm-adjusted p, decision."""
    rows: list[dict[str, Any]] = []
    for text in hypotheses:
        a, b, sign, metrics = parse_hypothesis(text, systems)
        for m in metrics:
            pairs = tukey.get(m, {}).get("pairs")
            if not pairs:
                rows.append({"hypothesis": text, "metric": m, "diff": math.nan, "p": math.nan})
                continue
            if f"{a} vs {b}" in pairs:
                cell, diff = pairs[f"{a} vs {b}"], pairs[f"{a} vs {b}"]["diff"]
            else:
                cell, diff = pairs[f"{b} vs {a}"], -pairs[f"{b} vs {a}"]["diff"]
            rows.append(
                {"hypothesis": text, "metric": m, "diff": diff, "p": one_sided_p(cell["p"], diff, sign)}
            )
    adjusted = holm({str(i): r["p"] for i, r in enumerate(rows)})
    for i, r in enumerate(rows):
        r["p_holm"] = adjusted[str(i)]
        r["reject_h0"] = bool(r["p_holm"] < alpha)
    return rows


def _paired(
    records: Sequence[Mapping[str, Any]], system: str, a: str, b: str
) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for rec in records:
        scores = rec["systems"].get(system, {}).get("scores", {})
        if scores.get(a) is not None and scores.get(b) is not None:
            xs.append(float(scores[a]))
            ys.append(float(scores[b]))
    return xs, ys


def _fmt(x: float) -> float | None:
    return None if isinstance(x, float) and math.isnan(x) else round(x, 4)


def ccrs_tables(
    agg: Mapping[str, Any],
    systems: Sequence[str],
    alpha: float,
    records: Sequence[Mapping[str, Any]] = (),
) -> tuple[list[Table], list[Plot]]:
    """The report's tables and plots; with ``records``, one box plot per metric (CCRS Fig. 5)."""
    tables: list[Table] = []
    sysagg = agg["systems"]
    tables.append(
        Table(
            "CCRS mean scores (0-1) per system",
            ["system", *METRICS],
            [[s, *(_fmt(sysagg[s][m]["mean"]) for m in METRICS)] for s in systems],
        )
    )
    tables.append(
        Table(
            "How the answers were produced (answer mode counts)",
            ["system", "modes"],
            [[s, ", ".join(f"{k}: {v}" for k, v in sorted(agg["modes"][s].items()))] for s in systems],
        )
    )
    tables.append(
        Table(
            "Judged items and failures (n scored / reader errors / parse failures / judge errors / clamped); "
            "only the n scored enter the means",
            ["system", *METRICS],
            [
                [
                    s,
                    *(
                        f"{c['n']} / {c['reader_errors']} / {c['parse_failures']} / {c['judge_errors']} / "
                        f"{c['clamped']}"
                        for c in (sysagg[s][m] for m in METRICS)
                    ),
                ]
                for s in systems
            ],
        )
    )
    tables.append(
        Table(
            "Floor (0) / ceiling (1) shares and tie probability",
            ["system", "metric", "floor", "ceiling", "tie probability"],
            [
                [s, m, _fmt(c["floor_share"]), _fmt(c["ceiling_share"]), _fmt(c["tie_probability"])]
                for s in systems
                for m in METRICS
                for c in (sysagg[s][m],)
            ],
        )
    )
    for fn_name in ("pearson", "spearman", "kendall"):
        corr = agg["correlations"][fn_name]
        rows = []
        for a in METRICS:
            row: list[Any] = [a]
            for b in METRICS:
                if a == b:
                    row.append(1.0)
                else:
                    cell = corr.get(f"{a}-{b}") or corr[f"{b}-{a}"]
                    row.append(_fmt(cell["avg"]))
            rows.append(row)
        tables.append(
            Table(
                f"{fn_name.capitalize()} correlation between metrics (Fisher-z average over systems)",
                ["", *METRICS],
                rows,
            )
        )
    if agg["tukey"]:
        tk_rows = []
        for m, tk in agg["tukey"].items():
            if "pairs" not in tk:
                tk_rows.append([m, tk["n_items"], "n/a", "n/a", tk["note"]])
                continue
            detail = "; ".join(
                f"{pair}: {v['diff']:+.3f} (p={v['p']:.4f})" for pair, v in tk["pairs"].items()
            )
            tk_rows.append(
                [
                    m,
                    tk["n_items"],
                    f"{tk['significant_pairs']} / {tk['pairs_total']}",
                    _fmt(tk["discriminative_power"]),
                    detail,
                ]
            )
        tables.append(
            Table(
                f"Randomised Tukey HSD and discriminative power (α = {alpha})",
                ["metric", "items", "significant pairs", "DP", "pairs: mean diff (p)"],
                tk_rows,
            )
        )
    plots = [
        Plot(
            "ccrs_means.png",
            "CCRS mean score per metric",
            "bar",
            list(METRICS),
            {
                s: [sysagg[s][m]["mean"] if not math.isnan(sysagg[s][m]["mean"]) else 0.0 for m in METRICS]
                for s in systems
            },
            ylabel="mean score (0-1)",
        )
    ]
    if any("pairs" in tk for tk in agg["tukey"].values()):
        plots.append(
            Plot(
                "ccrs_discriminative_power.png",
                "Discriminative power per metric",
                "bar",
                [m for m in METRICS if "pairs" in agg["tukey"].get(m, {})],
                {
                    "DP": [
                        agg["tukey"][m]["discriminative_power"]
                        for m in METRICS
                        if "pairs" in agg["tukey"].get(m, {})
                    ]
                },
                ylabel=f"share of system pairs with p < {alpha}",
            )
        )
    if agg.get("hypotheses"):
        tables.append(
            Table(
                f"Hypotheses (Tukey HSD p, one-sided where directed, Holm-corrected together; α = {alpha})",
                ["hypothesis", "metric", "mean diff", "p", "p (Holm)", "H0 rejected"],
                [
                    [
                        h["hypothesis"],
                        h["metric"],
                        *(_fmt(h[k]) for k in ("diff", "p", "p_holm")),
                        h["reject_h0"],
                    ]
                    for h in agg["hypotheses"]
                ],
            )
        )
    with_asl = [m for m in METRICS if agg["tukey"].get(m, {}).get("asl")]
    if with_asl:
        n_pairs = max(len(agg["tukey"][m]["asl"]) for m in with_asl)
        plots.append(
            Plot(
                "ccrs_asl.png",
                "Achieved significance level per system pair, sorted (CCRS Fig. 3b)",
                "line",
                [str(i) for i in range(1, n_pairs + 1)],
                {m: list(agg["tukey"][m]["asl"]) for m in with_asl},
                ylabel="ASL (Tukey HSD p)",
                xlabel="system pairs, sorted by p",
            )
        )
    for m in METRICS if records else ():
        series = {
            s: values
            for s in systems
            if (values := [float(v) for r in records if (v := _score(r, s, m)) is not None])
        }
        if series:
            plots.append(
                Plot(
                    f"ccrs_box_{m}.png",
                    f"{m} per system (box: quartiles, line: median, triangle: mean)",
                    "box",
                    list(series),
                    series,
                    ylabel=f"{m} (0-1)",
                )
            )
    return tables, plots


def _score(record: Mapping[str, Any], system: str, metric: str) -> float | None:
    value = record.get("systems", {}).get(system, {}).get("scores", {}).get(metric)
    return None if value is None else float(value)


def json_safe(value: Any) -> Any:
    """NaN (undefined statistic) -> None, so result.json stays strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value

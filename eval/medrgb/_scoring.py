"""MedRGB's scores: SQuAD exact match, detection accuracy/recall/specificity, the report built on them."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eval import Plot, Table
from eval.stats import mirage_std

from ._data import _Artifacts

# --- scoring ------------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalise_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def exact_match(prediction: str | None, gold: str) -> bool:
    return prediction is not None and normalise_answer(prediction) == normalise_answer(gold) != ""


@dataclass(frozen=True)
class DocOutcome:
    """One document's detection: is it a positive (noise / counterfactual), and was it flagged as one.

    ``predicted`` is None when the model's output could not be parsed: that counts as wrong either way.
    """

    positive: bool
    predicted: bool | None


def detection_scores(outcomes: Iterable[DocOutcome]) -> dict[str, float | int | None]:
    """Per-document accuracy, recall (positives flagged), specificity (negatives not flagged)."""
    rows = list(outcomes)
    pos = [o for o in rows if o.positive]
    neg = [o for o in rows if not o.positive]
    tp = sum(1 for o in pos if o.predicted is True)
    tn = sum(1 for o in neg if o.predicted is False)
    return {
        "n_docs": len(rows),
        "n_positive": len(pos),
        "n_negative": len(neg),
        "accuracy": (tp + tn) / len(rows) if rows else None,
        "recall": tp / len(pos) if pos else None,
        "specificity": tn / len(neg) if neg else None,
    }


# --- summary ------------------------------------------------------------------------------------------


def _acc(records: Sequence[Mapping[str, Any]]) -> tuple[float | None, float | None]:
    if not records:
        return None, None
    acc = sum(1 for r in records if r.get("correct")) / len(records)
    return acc, mirage_std(acc, len(records))


def _share(records: Sequence[Mapping[str, Any]], flag: str) -> float | None:
    return sum(1 for r in records if r.get(flag)) / len(records) if records else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{100 * value:.1f}"


def _sub_scores(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    subs = [s for r in records for s in r.get("subs", [])]
    judged = [float(s["judged"]) for s in subs if s.get("judged") is not None]
    return {
        "n_sub": len(subs),
        "sub_em": _mean([1.0 if s["em"] else 0.0 for s in subs]),
        "sub_judged": _mean(judged) if len(judged) == len(subs) else None,
        "sub_missing": sum(1 for s in subs if s.get("predicted") is None),
        "judge_failures": sum(1 for s in subs if s.get("judge_failed")),
    }


def _detection(records: Sequence[Mapping[str, Any]], flag: str, positive_role: str) -> dict[str, Any]:
    return detection_scores(
        DocOutcome(d["role"] == positive_role, d.get(flag)) for r in records for d in r.get("docs", [])
    )


def _scenario_metrics(at: Sequence[Mapping[str, Any]], scenario: str) -> dict[str, Any]:
    """One scenario's metrics over some records (one ρ, all datasets or one)."""
    acc, sd = _acc(at)
    m: dict[str, Any] = {
        "n": len(at),
        "accuracy": acc,
        "std": sd,
        "parse_failures": sum(1 for r in at if r.get("parse_failed")),
        "llm_errors": sum(1 for r in at if r.get("llm_error")),
        "short_contexts": sum(
            1 for r in at if (r["n_signal"], r["n_other"]) != (r["wanted_signal"], r["wanted_other"])
        ),
    }
    if scenario == "sufficiency":
        m["insufficient_share"] = _share(at, "insufficient")
        m["noise_detection"] = _detection(at, "predicted_noise", "noise")
        prod = [r["product"] for r in at if "product" in r]
        if prod:
            pacc, psd = _acc(prod)
            m["product"] = {
                "n": len(prod),
                "accuracy": pacc,
                "std": psd,
                "insufficient_share": _share(prod, "insufficient"),
                "parse_failures": sum(1 for p in prod if p.get("parse_failed")),
            }
    else:
        m.update(_sub_scores(at))
        m["empty_contexts"] = sum(1 for r in at if r.get("empty_context"))
    if scenario == "robustness":
        m["fact_detection"] = _detection(at, "predicted_cf", "counterfactual")
    return m


def summarise(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Metrics per scenario (and per rho; Standard-RAG per dataset too) from the item records."""
    by_scenario: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by_scenario.setdefault(str(r["scenario"]), []).append(r)
    out: dict[str, Any] = {}
    for plain in ("standard", "no_retrieval"):
        std = by_scenario.get(plain, [])
        if not std:
            continue
        acc, sd = _acc(std)
        datasets = sorted({str(r["dataset"]) for r in std})
        out[plain] = {
            "n": len(std),
            "accuracy": acc,
            "std": sd,
            "parse_failures": sum(1 for r in std if r.get("parse_failed")),
            "no_choice": sum(1 for r in std if r.get("no_choice")),
            "by_dataset": {
                ds: dict(zip(("accuracy", "std"), _acc([r for r in std if r["dataset"] == ds]), strict=True))
                | {"n": sum(1 for r in std if r["dataset"] == ds)}
                for ds in datasets
            },
        }
    for scenario in ("sufficiency", "integration", "robustness"):
        rows = by_scenario.get(scenario, [])
        if not rows:
            continue
        per_rho: dict[str, Any] = {}
        for rho in sorted({int(r["rho"]) for r in rows}):
            at = [r for r in rows if int(r["rho"]) == rho]
            m = _scenario_metrics(at, scenario)
            # Every metric per dataset, as MedRGB reports them (Tables 2-4), not pooled across datasets.
            m["by_dataset"] = {
                ds: _scenario_metrics([r for r in at if r["dataset"] == ds], scenario)
                for ds in sorted({str(r["dataset"]) for r in at})
            }
            per_rho[str(rho)] = m
        out[scenario] = {
            "by_rho": per_rho,
            "parse_failures": sum(v["parse_failures"] for v in per_rho.values()),
            "judge_failures": sum(v.get("judge_failures", 0) for v in per_rho.values()),
        }
    return out


def _tables(metrics: Mapping[str, Any]) -> list[Table]:
    tables: list[Table] = []
    std = metrics.get("standard")
    if std:
        rows: list[list[Any]] = [
            [ds, v["n"], _pct(v["accuracy"]), _pct(v["std"])] for ds, v in std["by_dataset"].items()
        ]
        rows.append(["all", std["n"], _pct(std["accuracy"]), _pct(std["std"])])
        tables.append(
            Table(
                f"Standard-RAG: CoMeta pipeline + Answerer (parse failures {std['parse_failures']}, "
                f"no option chosen {std['no_choice']})",
                ["dataset", "n", "accuracy %", "± std"],
                rows,
            )
        )
    suf = metrics.get("sufficiency")
    if suf:
        rows = []
        for rho, v in suf["by_rho"].items():
            det = v["noise_detection"]
            prod = v.get("product") or {}
            rows.append(
                [
                    rho,
                    v["n"],
                    _pct(v["accuracy"]),
                    _pct(v["std"]),
                    _pct(v["insufficient_share"]),
                    _pct(det["accuracy"]),
                    _pct(det["recall"]),
                    _pct(det["specificity"]),
                    v["parse_failures"],
                    _pct(prod.get("accuracy")),
                    _pct(prod.get("insufficient_share")),
                ]
            )
        tables.append(
            Table(
                "Sufficiency (noise documents from other questions' evidence)",
                [
                    "ρ %",
                    "n",
                    "main acc %",
                    "± std",
                    "insufficient %",
                    "noise acc %",
                    "noise recall %",
                    "specificity %",
                    "parse fail",
                    "product acc %",
                    "product insufficient %",
                ],
                rows,
            )
        )
    integ = metrics.get("integration")
    if integ:
        rows = [
            [
                rho,
                v["n"],
                _pct(v["accuracy"]),
                _pct(v["std"]),
                v["n_sub"],
                _pct(v["sub_em"]),
                _pct(v["sub_judged"]),
                v["sub_missing"],
                v["parse_failures"],
                v["judge_failures"],
            ]
            for rho, v in integ["by_rho"].items()
        ]
        tables.append(
            Table(
                "Integration (one sub-question per signal document)",
                [
                    "ρ %",
                    "n",
                    "main acc %",
                    "± std",
                    "sub-questions",
                    "sub EM %",
                    "sub judged %",
                    "sub missing",
                    "parse fail",
                    "judge fail",
                ],
                rows,
            )
        )
    rob = metrics.get("robustness")
    if rob:
        rows = []
        for rho, v in rob["by_rho"].items():
            det = v["fact_detection"]
            rows.append(
                [
                    rho,
                    v["n"],
                    _pct(v["accuracy"]),
                    _pct(v["std"]),
                    _pct(v["sub_em"]),
                    _pct(v["sub_judged"]),
                    _pct(det["accuracy"]),
                    _pct(det["recall"]),
                    _pct(det["specificity"]),
                    v["parse_failures"],
                ]
            )
        tables.append(
            Table(
                "Robustness (ρ = share of factually correct documents)",
                [
                    "ρ %",
                    "n",
                    "main acc %",
                    "± std",
                    "sub EM %",
                    "sub judged %",
                    "fact detect acc %",
                    "counterfactual recall %",
                    "specificity %",
                    "parse fail",
                ],
                rows,
            )
        )
    tables += _dataset_tables(metrics)
    return tables


def _dataset_tables(metrics: Mapping[str, Any]) -> list[Table]:
    """Every scenario's metrics per dataset and ρ (MedRGB reports each dataset on its own)."""
    tables: list[Table] = []
    plain = [(s, metrics[s]) for s in ("standard", "no_retrieval") if metrics.get(s)]
    if plain:
        datasets = sorted({ds for _s, m in plain for ds in m["by_dataset"]})
        tables.append(
            Table(
                "Per dataset: Standard-RAG vs no retrieval (the reader alone, same question and options)",
                ["dataset", *(f"{s} acc % (n)" for s, _m in plain)],
                [
                    [
                        ds,
                        *(
                            f"{_pct(m['by_dataset'][ds]['accuracy'])} ({m['by_dataset'][ds]['n']})"
                            if ds in m["by_dataset"]
                            else "n/a"
                            for _s, m in plain
                        ),
                    ]
                    for ds in datasets
                ],
            )
        )
    columns: dict[str, list[tuple[str, Callable[[Mapping[str, Any]], float | None]]]] = {
        "sufficiency": [
            ("main acc %", lambda v: v["accuracy"]),
            ("insufficient %", lambda v: v["insufficient_share"]),
            ("noise acc %", lambda v: v["noise_detection"]["accuracy"]),
            ("noise recall %", lambda v: v["noise_detection"]["recall"]),
            ("specificity %", lambda v: v["noise_detection"]["specificity"]),
        ],
        "integration": [
            ("main acc %", lambda v: v["accuracy"]),
            ("sub EM %", lambda v: v["sub_em"]),
            ("sub judged %", lambda v: v["sub_judged"]),
        ],
        "robustness": [
            ("main acc %", lambda v: v["accuracy"]),
            ("sub EM %", lambda v: v["sub_em"]),
            ("sub judged %", lambda v: v["sub_judged"]),
            ("fact detect acc %", lambda v: v["fact_detection"]["accuracy"]),
            ("counterfactual recall %", lambda v: v["fact_detection"]["recall"]),
        ],
    }
    for scenario, cols in columns.items():
        sc = metrics.get(scenario)
        if not sc:
            continue
        rows = [
            [ds, rho, v["n"], *(_pct(pick(v)) for _name, pick in cols), v["parse_failures"]]
            for rho, at in sc["by_rho"].items()
            for ds, v in at["by_dataset"].items()
        ]
        tables.append(
            Table(
                f"Per dataset: {scenario}",
                ["dataset", "ρ %", "n", *(name for name, _p in cols), "parse fail"],
                sorted(rows, key=lambda r: (str(r[0]), int(r[1]))),
            )
        )
    return tables


def _plots(metrics: Mapping[str, Any], rhos: Sequence[int]) -> list[Plot]:
    labels = [str(r) for r in rhos]

    def series(scenario: str, pick: Callable[[Mapping[str, Any]], float | None]) -> list[float] | None:
        by_rho = (metrics.get(scenario) or {}).get("by_rho")
        if not by_rho:
            return None
        values = [pick(by_rho[r]) if r in by_rho else None for r in labels]
        return [float("nan") if v is None else 100 * v for v in values]

    acc: dict[str, list[float]] = {}
    for name, scenario, pick in (
        ("sufficiency", "sufficiency", lambda m: m["accuracy"]),
        ("product answerer (sufficiency)", "sufficiency", lambda m: (m.get("product") or {}).get("accuracy")),
        ("integration", "integration", lambda m: m["accuracy"]),
        ("robustness", "robustness", lambda m: m["accuracy"]),
    ):
        values = series(scenario, pick)
        if values is not None and not all(math.isnan(v) for v in values):
            acc[name] = values
    std = metrics.get("standard")
    if std and std.get("accuracy") is not None and acc:
        acc["standard RAG"] = [100 * std["accuracy"]] * len(labels)
    plots = []
    if acc:
        plots.append(
            Plot("medrgb_accuracy.png", "MedRGB main accuracy vs ρ", "line", labels, acc, "%", "ρ %")
        )
    det: dict[str, list[float]] = {}
    for name, scenario, pick in (
        ("noise detection acc (sufficiency)", "sufficiency", lambda m: m["noise_detection"]["accuracy"]),
        ("insufficient answers (sufficiency)", "sufficiency", lambda m: m["insufficient_share"]),
        ("fact detection acc (robustness)", "robustness", lambda m: m["fact_detection"]["accuracy"]),
        ("sub EM (integration)", "integration", lambda m: m["sub_em"]),
    ):
        values = series(scenario, pick)
        if values is not None and not all(math.isnan(v) for v in values):
            det[name] = values
    if det:
        plots.append(
            Plot(
                "medrgb_detection.png",
                "MedRGB detection and sub-task scores vs ρ",
                "line",
                labels,
                det,
                "%",
                "ρ %",
            )
        )
    return plots


def _generation_stats(art: _Artifacts, keys: set[str]) -> dict[str, dict[str, int]]:
    subqa = [v for k, d in art.subqa.items() if k in keys for v in d.values()]
    cf = [v for k, d in art.counterfactual.items() if k in keys for v in d.values()]
    return {
        "subqa": {
            "attempted": len(subqa),
            "ok": sum(1 for v in subqa if v is not None),
            "failed": sum(1 for v in subqa if v is None),
            "extractive": sum(1 for v in subqa if v is not None and v.get("extractive")),
        },
        "counterfactual": {
            "attempted": len(cf),
            "ok": sum(1 for v in cf if v is not None),
            "failed": sum(1 for v in cf if v is None),
        },
    }

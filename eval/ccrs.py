"""CCRS (Muhamed, LLM4Eval@SIGIR 2025): five zero-shot LLM-judge metrics and their validity statistics.

Metrics (prompts ``prompts/ccrs_{cc,qr,id,ac,ir}.v1.md``, Appendix B verbatim; the judge prints 0-100, we
divide by 100):

* **CC** Contextual Coherence (response r vs retrieved context C), **QR** Question Relevance (r vs q),
  **ID** Information Density (r, C, q), **IR** Information Recall (r vs ground truth g, given C);
* **AC** Answer Correctness = λ·EM(r, g) + (1 − λ)·judge/100 with λ = 0.7 (``params lambda``). EM is the
  paper's strict exact match of the response with the ground truth, after SQuAD-style normalisation
  (case, punctuation, articles, whitespace); with long reference answers it is almost always 0, so AC
  rarely exceeds 0.3 — the paper reports the same ("AC never reached 1.0").

A judge reply is parsed as its first number; a number outside 0-100 is clamped and counted; a reply with no
number is a **parse failure** and a judge error (timeout, unavailable) a **judge error**: both are counted
per system and metric and reported, and the item is left out of that metric's statistics (never scored 0
silently). An empty response scores 0 on every metric without a judge call, as the prompts prescribe.

Items: the CMMQA PubMedQA questions (69), whose gold long answers (the abstract's conclusion,
``eval/data/ccrs_pubmedqa_gold.jsonl``, from PubMedQA PQA-L) serve as g — MIRAGE items carry only an option
letter. ``subsets``: ``standard`` (default) and/or ``narrative`` (the committed narrative fixture's
PubMedQA items). The CCRS paper used BioASQ ideal answers, which we may not ship.

Systems (``params systems``; default all that can run): ``extractive`` — the ``/ask`` pipeline with no
LLM (quoted evidence sentences); ``llm_rag`` — the ``/ask`` pipeline with the LLM (Answerer, free text);
``llm_no_retrieval`` — the LLM on the CCRS reader prompt (Figure 1) with an empty context; with
``--server`` a ``server`` system posts to ``/ask`` instead of the in-process RAG systems. The same LLM
(``--llm``) writes the LLM answers and judges; without one the suite cannot judge and says so.

Other params: ``judge_output`` — ``text`` (the paper: free text, first number) or ``json`` (``{"score": n}``
through the LLM layer's JSON mode, grammar-constrained on llama.cpp; the default for the embedded base
model, which otherwise prints no number); ``max_answer_tokens`` (256) for the LLM systems;
``max_context_chars`` (4000), the evidence budget of both the RAG reader and the judge (the embedded model
has a 2,048-token window); ``lambda``.

Statistics (``eval.stats``): per-metric means, histograms, floor/ceiling shares and tie probabilities per
system; Pearson/Spearman/Kendall between metrics per system, averaged over systems with Fisher's z;
randomised Tukey HSD (``params B``, default 1000; the paper used 10,000) over the items every system has a
score for, and discriminative power = share of system pairs significant at α (``params alpha``, 0.05).

    cometa eval ccrs --llm embedded --limit 5 [--subsets standard,narrative] [--param B=2000]
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import string
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from eval.stats import (
    discriminative_power,
    fisher_z_average,
    floor_ceiling,
    histogram,
    kendall_tau_b,
    pearson,
    randomised_tukey_hsd,
    spearman,
    tie_probability,
)
from llm import LLMClient, LLMError, LLMOutputInvalid
from prompts import load_prompt

from ._runner import (
    EvalInputError,
    ItemLog,
    Plot,
    RunOptions,
    StageTimes,
    SuiteResult,
    Table,
    build_offline_services,
    eval_settings,
    progress,
)

__all__ = [
    "GOLD_FILE",
    "METRICS",
    "CcrsItem",
    "JudgeScore",
    "SystemAnswer",
    "aggregate",
    "exact_match",
    "judge_answer",
    "load_ccrs_items",
    "parse_score",
    "reader_answer",
    "run_ccrs",
    "score_items",
]

METRICS: tuple[str, ...] = ("CC", "QR", "ID", "AC", "IR")
LAMBDA = 0.7
GOLD_FILE = Path(__file__).resolve().parent / "data" / "ccrs_pubmedqa_gold.jsonl"
DEFAULT_SYSTEMS = ("extractive", "llm_no_retrieval", "llm_rag")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_ANSWER_TAG = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL | re.IGNORECASE)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


@dataclass(frozen=True)
class CcrsItem:
    key: str  # "<subset>:pubmedqa:<pmid>"
    question: str
    ground_truth: str


@dataclass(frozen=True)
class SystemAnswer:
    text: str
    context: str  # the retrieved context the response was written from ("" without retrieval)
    mode: str = "llm"
    tokens: int = 0


AnswerFn = Callable[[str], Awaitable[SystemAnswer]]


class _ScoreOut(BaseModel):
    # An integer, as the prompts ask: a grammar for "number" lets a small model write "0.000000..." until
    # it runs out of tokens. Unbounded on purpose: out-of-range values are clamped and counted.
    score: int


@dataclass(frozen=True)
class JudgeScore:
    value: float | None  # in [0, 1]; None = no usable judgement
    raw: str  # the judge's reply (truncated), for audit
    status: str  # "ok" | "clamped" | "parse_failure" | "judge_error" | "empty_response"


# --- parsing and scoring ------------------------------------------------------------------------------


def parse_score(text: str, lo: float = 0.0, hi: float = 100.0) -> tuple[float | None, bool]:
    """(first number in the reply clamped to [lo, hi], whether it was clamped); (None, False) if none."""
    match = _NUMBER.search(text)
    if match is None:
        return None, False
    value = float(match.group(0))
    clamped = min(max(value, lo), hi)
    return clamped, clamped != value


def _normalise(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(response: str, ground_truth: str) -> float:
    """CCRS EM(r, g): 1.0 when the normalised texts are equal, else 0.0."""
    return 1.0 if _normalise(response) and _normalise(response) == _normalise(ground_truth) else 0.0


_PROMPTS = {m: f"ccrs_{m.lower()}" for m in METRICS}


async def judge_answer(
    llm: LLMClient,
    metric: str,
    *,
    question: str,
    response: str,
    context: str,
    ground_truth: str,
    max_context_chars: int = 4000,
    stages: StageTimes | None = None,
    structured: bool = False,
) -> JudgeScore:
    """One CCRS judgement in [0, 1] (the LLM part only, for AC).

    ``structured``: ask for ``{"score": n}`` through the LLM layer's JSON mode (a grammar on llama.cpp)
    instead of free text, for models that do not follow "only print the score"; the prompt is unchanged.
    """
    if not response.strip():
        return JudgeScore(0.0, "", "empty_response")
    prompt = load_prompt(_PROMPTS[metric])
    values = {
        "question": question,
        "response": response,
        # Small models have small windows: the context is cut, never the response or the reference.
        "context": context[:max_context_chars] if context else "(no context was retrieved)",
        "ground_truth": ground_truth,
    }
    messages = prompt.render(**{k: v for k, v in values.items() if k in prompt.variables})
    t0 = time.perf_counter()
    try:
        if structured:
            scored = await llm.complete_json(
                messages, _ScoreOut, prompt_version=prompt.id, max_tokens=24, temperature=0.0
            )
            text, tokens = str(scored.value.score), scored.prompt_tokens + scored.completion_tokens
        else:
            result = await llm.complete_text(
                messages, prompt_version=prompt.id, max_tokens=8, temperature=0.0
            )
            text, tokens = result.value, result.prompt_tokens + result.completion_tokens
    except LLMOutputInvalid as exc:
        return JudgeScore(None, (exc.raw_text or "")[:80], "parse_failure")
    except LLMError as exc:
        return JudgeScore(None, type(exc).__name__, "judge_error")
    if stages is not None:
        stages.add("judge", (time.perf_counter() - t0) * 1000, tokens)
    value, clamped = parse_score(text)
    raw = text.strip()[:80]
    if value is None:
        return JudgeScore(None, raw, "parse_failure")
    return JudgeScore(value / 100.0, raw, "clamped" if clamped else "ok")


async def _score_one(
    llm: LLMClient,
    item: CcrsItem,
    answer: SystemAnswer,
    *,
    lam: float,
    max_context_chars: int,
    stages: StageTimes | None,
    structured: bool = False,
) -> dict[str, Any]:
    scores: dict[str, float | None] = {}
    status: dict[str, str] = {}
    raw: dict[str, str] = {}
    for metric in METRICS:
        js = await judge_answer(
            llm,
            metric,
            question=item.question,
            response=answer.text,
            context=answer.context,
            ground_truth=item.ground_truth,
            max_context_chars=max_context_chars,
            stages=stages,
            structured=structured,
        )
        status[metric], raw[metric] = js.status, js.raw
        value = js.value
        if metric == "AC" and value is not None:
            value = lam * exact_match(answer.text, item.ground_truth) + (1 - lam) * value
        scores[metric] = value
    return {"scores": scores, "status": status, "raw": raw, "em": exact_match(answer.text, item.ground_truth)}


async def score_items(
    items: Sequence[CcrsItem],
    systems: Mapping[str, AnswerFn],
    judge: LLMClient,
    log: ItemLog,
    *,
    lam: float = LAMBDA,
    max_context_chars: int = 4000,
    stages: StageTimes | None = None,
    structured: bool = False,
) -> list[dict[str, Any]]:
    """Answer every item with every system, judge each answer on the five metrics; one log line per item.

    Items already in ``log`` (an earlier, interrupted run) are reused, not re-judged.
    """
    done = log.done()
    records: list[dict[str, Any]] = []
    with progress(len(items), "ccrs") as advance:
        for item in items:
            if item.key in done:
                records.append(done[item.key])
                advance(1)
                continue
            record: dict[str, Any] = {"key": item.key, "systems": {}}
            for name, answer_fn in systems.items():
                t0 = time.perf_counter()
                try:
                    answer = await answer_fn(item.question)
                except LLMError as exc:
                    # An unanswerable system is an empty response (scored 0), and the reason is kept.
                    answer = SystemAnswer("", "", mode=f"error:{type(exc).__name__}")
                ms = (time.perf_counter() - t0) * 1000
                if stages is not None:
                    stages.add(f"answer:{name}", ms, answer.tokens)
                judged = await _score_one(
                    judge,
                    item,
                    answer,
                    lam=lam,
                    max_context_chars=max_context_chars,
                    stages=stages,
                    structured=structured,
                )
                record["systems"][name] = {
                    "response": answer.text,
                    "mode": answer.mode,
                    "context_chars": len(answer.context),
                    "answer_ms": round(ms, 1),
                    **judged,
                }
            log.append(record)
            records.append(record)
            advance(1)
    return records


# --- aggregation --------------------------------------------------------------------------------------


@dataclass
class _Metric:
    values: list[float] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def aggregate(
    records: Sequence[Mapping[str, Any]],
    systems: Sequence[str],
    *,
    B: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Means, failure counts, distributions, correlations, Tukey HSD and discriminative power (JSON-able)."""
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
        }
    return out


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


def _tables(agg: Mapping[str, Any], systems: Sequence[str], alpha: float) -> tuple[list[Table], list[Plot]]:
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
            "Judged items and failures (n scored / parse failures / judge errors / clamped)",
            ["system", *METRICS],
            [
                [
                    s,
                    *(
                        f"{c['n']} / {c['parse_failures']} / {c['judge_errors']} / {c['clamped']}"
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
    return tables, plots


# --- items and systems --------------------------------------------------------------------------------


def _gold() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in GOLD_FILE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line) if line.strip() else {}
        if isinstance(rec.get("key"), str):
            out[rec["key"]] = rec
    return out


def load_ccrs_items(
    subsets: Sequence[str] = ("standard",), *, limit: int | None = None, seed: int = 0
) -> list[CcrsItem]:
    """CMMQA PubMedQA questions (standard and/or narrative) with their gold long answers."""
    from eval.cmmqa import load_cmmqa

    gold = _gold()
    items: list[CcrsItem] = []
    for subset in subsets:
        if subset not in ("standard", "narrative"):
            raise EvalInputError(f"unknown ccrs subset {subset!r} (standard, narrative)")
        variant: Literal["standard", "narrative"] = "narrative" if subset == "narrative" else "standard"
        chosen = [it for it in load_cmmqa(variant, datasets=["pubmedqa"]) if it.key in gold]
        if limit is not None:
            picked = set(
                random.Random(f"{seed}:{subset}").sample(range(len(chosen)), min(limit, len(chosen)))
            )
            chosen = [it for i, it in enumerate(chosen) if i in picked]
        items += [CcrsItem(f"{subset}:{it.key}", it.question, gold[it.key]["long_answer"]) for it in chosen]
    return items


def reader_answer(text: str) -> str:
    """The ``<answer>`` span of a reader reply; the whole reply when the tag is missing or empty."""
    match = _ANSWER_TAG.search(text)
    inner = match.group(1).strip() if match else ""
    return inner or _ANSWER_TAG.sub("", text).replace("</answer>", "").strip()


def _build_systems(
    names: Sequence[str],
    pipeline: Any,
    llm: LLMClient | None,
    *,
    max_tokens: int,
    max_context_chars: int = 12_000,
    http: Any | None = None,
) -> dict[str, AnswerFn]:
    from app.answer import Answerer, build_evidence_context
    from app.settings import AnswerSettings

    # The context budget is the judge's too: a small model's window must hold the evidence and the answer.
    settings = AnswerSettings(max_tokens=max_tokens, max_context_chars=max_context_chars)
    extractive = Answerer(None, settings)
    rag = Answerer(llm, settings) if llm is not None else None
    reader = load_prompt("ccrs_reader")
    systems: dict[str, AnswerFn] = {}

    # extractive and llm_rag read the same retrieval for a question: run it once, so both systems are
    # judged on identical evidence and the slow stages are not paid twice.
    last: dict[str, tuple[Any, str]] = {}

    async def retrieve(question: str) -> tuple[Any, str]:
        if question in last:
            return last[question]
        outcome = await pipeline.search(question)
        ctx = build_evidence_context(
            outcome.evidence.docs,
            outcome.context,
            max_passages=settings.max_passages,
            max_chars=settings.max_context_chars,
        )
        last.clear()
        last[question] = (outcome, ctx.text)
        return outcome, ctx.text

    async def run_extractive(question: str) -> SystemAnswer:
        outcome, ctx = await retrieve(question)
        ans = await extractive.answer(question, outcome.evidence.docs, outcome.context)
        return SystemAnswer(ans.text if ans.mode != "insufficient_evidence" else "", ctx, ans.mode)

    async def run_rag(question: str) -> SystemAnswer:
        assert rag is not None
        outcome, ctx = await retrieve(question)
        ans = await rag.answer(question, outcome.evidence.docs, outcome.context)
        return SystemAnswer(ans.text, ctx, ans.mode, ans.prompt_tokens + ans.completion_tokens)

    async def run_no_retrieval(question: str) -> SystemAnswer:
        assert llm is not None
        result = await llm.complete_text(
            reader.render(context="", question=question),
            prompt_version=reader.id,
            max_tokens=max_tokens,
            temperature=0.0,
        )
        return SystemAnswer(
            reader_answer(result.value), "", "llm", result.prompt_tokens + result.completion_tokens
        )

    async def run_server(question: str) -> SystemAnswer:
        assert http is not None
        resp = await http.post("/ask", json={"question": question})
        if resp.status_code != 200:
            return SystemAnswer("", "", f"error:http {resp.status_code}")
        body = resp.json()
        ctx = "\n\n".join(str(p.get("text", "")) for p in body.get("passages") or [])
        tokens = sum(v or 0 for v in (body.get("tokens") or {}).values())
        return SystemAnswer(body.get("answer", ""), ctx, str(body.get("mode", "")), int(tokens))

    table: dict[str, tuple[AnswerFn, bool]] = {
        "extractive": (run_extractive, pipeline is not None),
        "llm_rag": (run_rag, pipeline is not None and rag is not None),
        "llm_no_retrieval": (run_no_retrieval, llm is not None),
        "server": (run_server, http is not None),
    }
    for name in names:
        if name not in table:
            raise EvalInputError(f"unknown ccrs system {name!r} ({', '.join(table)})")
        fn, available = table[name]
        if not available:
            raise EvalInputError(
                f"ccrs system {name!r} cannot run here (needs an LLM, a pipeline or --server)"
            )
        systems[name] = fn
    return systems


def _json_safe(value: Any) -> Any:
    """NaN (undefined statistic) -> None, so result.json stays strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _param_list(value: Any, default: Sequence[str]) -> list[str]:
    if value is None:
        return list(default)
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


async def run_ccrs(opts: RunOptions) -> SuiteResult:
    """Answer the CCRS items with each configured system, judge them, and report the validity statistics."""
    settings = eval_settings(opts)
    if settings.llm.backend == "none":
        raise EvalInputError("ccrs needs a judge LLM: --llm embedded or --llm openai (COMETA_LLM__*)")
    params = dict(opts.params)
    B = int(params.get("B", 1000))
    alpha = float(params.get("alpha", 0.05))
    lam = float(params.get("lambda", LAMBDA))
    max_tokens = int(params.get("max_answer_tokens", 256))
    max_ctx = int(params.get("max_context_chars", 4000))
    # The embedded base model never obeys "only print the score": constrain it to {"score": n} by default.
    judge_output = str(params.get("judge_output", "json" if settings.llm.backend == "embedded" else "text"))
    if judge_output not in ("text", "json"):
        raise EvalInputError(f"judge_output must be text or json, got {judge_output!r}")
    structured = judge_output == "json"
    default_systems = ("server", "llm_no_retrieval") if opts.server_url else DEFAULT_SYSTEMS
    names = _param_list(params.get("systems") or opts.system.get("systems"), default_systems)
    items = load_ccrs_items(opts.subsets or ("standard",), limit=opts.limit, seed=opts.seed)
    stages = StageTimes()
    pipeline, _answerer, llm = await build_offline_services(opts)
    http = None
    try:
        if llm is None:
            raise EvalInputError("the configured LLM could not be built; ccrs needs a judge")
        if opts.server_url:
            import httpx

            http = httpx.AsyncClient(
                base_url=opts.server_url.rstrip("/"), timeout=httpx.Timeout(300.0, connect=10.0)
            )
        systems = _build_systems(
            names, pipeline, llm, max_tokens=max_tokens, max_context_chars=max_ctx, http=http
        )
        log = ItemLog(opts.out_dir / "items.jsonl", resume=opts.resume)
        records = await score_items(
            items,
            systems,
            llm,
            log,
            lam=lam,
            max_context_chars=max_ctx,
            stages=stages,
            structured=structured,
        )
        model = llm.model_name
    finally:
        if http is not None:
            await http.aclose()
        await pipeline.aclose()
    agg = aggregate(records, list(systems), B=B, seed=opts.seed, alpha=alpha)
    tables, plots = _tables(agg, list(systems), alpha)
    failures = sum(
        c["parse_failures"] + c["judge_errors"] for s in agg["systems"].values() for c in s.values()
    )
    notes = [
        f"Judge and LLM reader: {model}. {len(items)} items ({', '.join(opts.subsets or ('standard',))}), "
        f"systems: {', '.join(systems)}. Gold answers: PubMedQA long answers (the abstract's conclusion).",
        f"{failures} judgements were unusable (parse failures + judge errors) and are excluded from the "
        "statistics of that metric, not scored 0; see the failures table.",
        f"AC = {lam}·EM + {1 - lam:.1f}·judge; EM (normalised exact match with the long answer) was 1 for "
        f"{sum(1 for r in records for s in r['systems'].values() if s['em'] == 1.0)} responses.",
        "The bundled corpus contains each PubMedQA abstract including its conclusion, i.e. the gold answer: "
        "the retrieval systems can find the reference text itself, unlike on live PubMed.",
        "Judge output: "
        + (
            "JSON {score}, grammar-constrained where the backend supports it."
            if structured
            else "free text, first number parsed, as in the paper."
        ),
        f"Tukey HSD is randomised with B={B} (the paper used 10,000) over the items every system has a "
        "score for.",
    ]
    if settings.llm.backend == "embedded":
        notes.append(
            "The embedded Gemma-3-270M is a base model: as a judge it exercises the real path (prompts, "
            "parsing, statistics) but its scores say little about answer quality."
        )
    metrics = _json_safe(
        {
            "n_items": len(items),
            "system_names": list(systems),
            "lambda": lam,
            "alpha": alpha,
            "per_system": agg["systems"],
            "correlations": agg["correlations"],
            "tukey": agg["tukey"],
            "modes": agg["modes"],
        }
    )
    return SuiteResult("ccrs", metrics, tables, plots, notes, stages)

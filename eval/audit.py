"""Source-dependence audit (HERO-QA §4-6): one question set asked of many sources, judged pairwise.

    cometa eval audit --llm embedded [--subsets northbridge,riverside,pubmed] \
        [--param questions=my_questions.jsonl] [--server http://node:8000]

Every question goes to every source (local collections, ``node/collection`` on federated nodes, and/or
``pubmed``) through the same code as ``/ask`` with ``sources`` (:mod:`app.sources`): answered per source
with the ``NOT ADDRESSED`` rule, then every pair classified by the cross-source judge. Sources default to
every collection of the configured store (``COMETA_COLLECTIONS__ROOT``); the question set defaults to
``eval/fixtures/audit_questions.jsonl`` (transplant-handbook questions), one JSON object per line with
``id`` and ``question`` (``topic`` optional).

Rates (paper, Table 3), reported per question, per source and overall:

* ``r_abs`` - absence, as the paper defines it: per source, the share of answered questions it does not
  address (the per-handbook absence rate); overall: the mean over sources; per question: the share of the
  answered sources that do not address it. ``r_abs_pairs`` - ABSENT pairs / judged pairs (per question and
  overall): a pair is ABSENT when either side is, so this is not the absence rate.
* ``R_div`` - DIVERGENT + CONTRADICTORY pairs / non-absent judged pairs (per source: the pairs it is in).
* ``R_con`` - CONSISTENT pairs / non-absent judged pairs.
* ``any_div`` - per question: at least one divergent pair; per source and overall: the share of questions.

The per-question N x N matrices go to ``items.jsonl`` and, with per-pair label counts over the whole set,
to ``matrices.json``. The per-source answers are written by the reader (``--llm``) and judged by a separate
judge (``--judge-llm`` / ``COMETA_JUDGE_LLM__*``); the run refuses to start without one, or when the judge is
the reader, unless ``--allow-self-judge`` (the report is then marked SELF-JUDGED).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._runner import (
    ITEMS_FILE,
    EvalInputError,
    ItemLog,
    Plot,
    RunOptions,
    StageTimes,
    SuiteResult,
    Table,
    eval_settings,
    progress,
    select_items,
)

if TYPE_CHECKING:
    from app.sources import SourcesService
    from llm import LLMClient

__all__ = ["DEFAULT_QUESTIONS", "AuditQuestion", "aggregate", "load_questions", "run_audit"]

DEFAULT_QUESTIONS = Path(__file__).resolve().parent / "fixtures" / "audit_questions.jsonl"
DIVERGENT = ("DIVERGENT", "CONTRADICTORY")


@dataclass(frozen=True)
class AuditQuestion:
    id: str
    question: str
    topic: str = ""


def load_questions(path: Path) -> list[AuditQuestion]:
    if not path.is_file():
        raise EvalInputError(f"question set not found: {path}")
    out: list[AuditQuestion] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out.append(AuditQuestion(str(obj["id"]), str(obj["question"]), str(obj.get("topic", ""))))
        except (ValueError, KeyError, TypeError) as exc:
            raise EvalInputError(
                f"{path.name} line {n}: needs JSON with 'id' and 'question' ({exc})"
            ) from exc
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        raise EvalInputError(f"{path.name}: question ids must be unique")
    if not out:
        raise EvalInputError(f"{path.name}: no questions")
    return out


def _record(q: AuditQuestion, body: Mapping[str, Any]) -> dict[str, Any]:
    """One item of the log from an ``/ask`` response with ``sources`` (in-process or from a server)."""
    judge = body.get("judge") or {}
    pairs = [
        {
            "a": p["a"],
            "b": p["b"],
            "label": p["classification"],
            "topic": p.get("divergence_topic"),
            "significance": p.get("clinical_significance"),
        }
        for p in judge.get("pairs", [])
    ]
    return {
        "key": q.id,
        "topic": q.topic,
        "question": q.question,
        "sources": [s["source"] for s in body.get("sources", [])],
        "status": {s["source"]: s["status"] for s in body.get("sources", [])},
        "reasons": {s["source"]: s["reason"] for s in body.get("sources", []) if s["status"] != "ok"},
        "absent": {s["source"]: s["absent"] for s in body.get("sources", [])},  # None: not answered
        "errors": [s["source"] for s in body.get("sources", []) if s.get("answer_mode") == "error"],
        "judged": list(judge.get("sources", [])),
        "matrix": judge.get("matrix", []),
        "counts": judge.get("counts", {}),
        "r_abs": judge.get("r_abs"),
        "r_abs_pairs": judge.get("r_abs_pairs"),
        "r_div": judge.get("r_div"),
        "r_con": judge.get("r_con"),
        "any_div": judge.get("any_div"),
        "pairs": pairs,
        "timings_ms": body.get("timings_ms", {}),
        "warnings": body.get("warnings", []),
    }


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def aggregate(records: Sequence[Mapping[str, Any]], sources: Sequence[str]) -> dict[str, Any]:
    """Per source and overall rates from the item records (see the module docstring)."""
    per: dict[str, dict[str, Any]] = {}
    for s in sources:
        answered = [r for r in records if r["status"].get(s) == "ok" and r["absent"].get(s) is not None]
        absent = sum(1 for r in answered if r["absent"][s])
        pairs = [p for r in records for p in r["pairs"] if s in (p["a"], p["b"]) and p["label"] is not None]
        present = [p for p in pairs if p["label"] != "ABSENT"]
        div = sum(1 for p in present if p["label"] in DIVERGENT)
        con = sum(1 for p in present if p["label"] == "CONSISTENT")
        div_q = sum(
            1 for r in answered if any(p["label"] in DIVERGENT and s in (p["a"], p["b"]) for p in r["pairs"])
        )
        per[s] = {
            "questions": len(answered),
            # Access denial is neither absence nor failure: counted apart, never in r_abs.
            "not_available": sum(1 for r in records if r["status"].get(s) == "denied"),
            "not_searched": sum(1 for r in records if r["status"].get(s, "ok") not in ("ok", "denied")),
            "answer_errors": sum(1 for r in records if s in r.get("errors", ())),
            "r_abs": _rate(absent, len(answered)),
            "R_div": _rate(div, len(present)),
            "R_con": _rate(con, len(present)),
            "any_div": _rate(div_q, len(answered)),
            "pairs_judged": len(pairs),
        }
    judged = [r for r in records if r["judged"]]
    all_pairs = [p for r in judged for p in r["pairs"] if p["label"] is not None]
    present = [p for p in all_pairs if p["label"] != "ABSENT"]
    abs_rates = [v["r_abs"] for v in per.values() if v["r_abs"] is not None]
    overall = {
        "questions": len(records),
        "questions_judged": len(judged),
        "r_abs": sum(abs_rates) / len(abs_rates) if abs_rates else None,
        "r_abs_pairs": _rate(sum(1 for p in all_pairs if p["label"] == "ABSENT"), len(all_pairs)),
        "R_div": _rate(sum(1 for p in present if p["label"] in DIVERGENT), len(present)),
        "R_con": _rate(sum(1 for p in present if p["label"] == "CONSISTENT"), len(present)),
        "any_div": _rate(sum(1 for r in judged if r["any_div"]), len(judged)),
        "pairs_judged": len(all_pairs),
    }
    # Label counts per unordered source pair over the whole set: the aggregate N x N matrices.
    index = {s: i for i, s in enumerate(sources)}
    n = len(sources)
    labels = ("ABSENT", "CONSISTENT", "COMPLEMENTARY", "DIVERGENT", "CONTRADICTORY")
    counts = {label: [[0] * n for _ in range(n)] for label in labels}
    for p in all_pairs:
        i, j = index.get(p["a"]), index.get(p["b"])
        if i is not None and j is not None:
            counts[p["label"]][i][j] += 1
            counts[p["label"]][j][i] += 1
    return {"per_source": per, "overall": overall, "pair_counts": counts}


def _name(client: LLMClient | None) -> str:
    return str(getattr(client, "model_name", None) or "n/a")


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if value is None:
        return "-"
    return value


async def _server_answers(
    opts: RunOptions, todo: Sequence[AuditQuestion], sources: list[str], log: ItemLog, times: StageTimes
) -> list[str]:
    import httpx

    assert opts.server_url is not None
    headers = {}
    if os.environ.get("COMETA_EVAL_API_KEY"):
        headers["X-API-Key"] = os.environ["COMETA_EVAL_API_KEY"]
    if os.environ.get("COMETA_EVAL_BEARER"):  # the auditor's JWT: the nodes decide what it may read
        headers["Authorization"] = f"Bearer {os.environ['COMETA_EVAL_BEARER']}"
    base = opts.server_url.rstrip("/")
    async with httpx.AsyncClient(
        base_url=base, headers=headers, timeout=httpx.Timeout(600, connect=10)
    ) as http:
        if not sources:
            r = await http.get("/collections")
            r.raise_for_status()
            sources = [c["name"] for c in r.json()["collections"]]
            if len(sources) < 2:
                raise EvalInputError(
                    f"the server lists {len(sources)} collection(s) for this caller; need 2+"
                )
        with progress(len(todo), "audit (server)") as advance:
            for q in todo:
                r = await http.post("/ask", json={"question": q.question, "sources": sources})
                if r.status_code != 200:
                    raise EvalInputError(f"server answered HTTP {r.status_code} for {q.id}: {r.text[:200]}")
                body = r.json()
                for stage, ms in body.get("timings_ms", {}).items():
                    times.add(stage, float(ms))
                log.append(_record(q, body))
                advance(1)
    return sources


async def run_audit(
    opts: RunOptions,
    *,
    llm: LLMClient | None = None,
    service: SourcesService | None = None,
    judge: LLMClient | None = None,
) -> SuiteResult:
    """The audit (module docstring). ``llm`` / ``judge`` / ``service`` inject the reader, the judge and a
    sources service (tests: scripted models over a temporary store); by default all come from the
    settings. The judge is ``--judge-llm`` / ``COMETA_JUDGE_LLM__*``; judge = reader is refused unless
    ``opts.allow_self_judge`` (an injected ``llm`` without ``judge`` is the reader judging itself)."""
    from eval.judging import SELF_JUDGE_WARNING, resolve_judge

    judge_info: dict[str, Any]
    if opts.server_url:
        # The server's cross-source judge runs on the server's own LLM: its reader, by construction.
        if not opts.allow_self_judge:
            raise EvalInputError(
                "a server's audit is judged by the server's own LLM, which also writes the per-source "
                "answers: pass --allow-self-judge to accept that (the report is marked), or audit in-process "
                "with --judge-llm"
            )
        judge_info = {"reader": "the server's LLM", "judge": "the server's LLM", "self_judged": True}
    elif judge is not None and judge is not llm:
        judge_info = {"reader": _name(llm), "judge": _name(judge), "self_judged": False}
    elif llm is not None:
        if not opts.allow_self_judge:
            raise EvalInputError("the audit's judge would be the reader: inject a judge or self-judge")
        judge, judge_info = llm, {"reader": _name(llm), "judge": _name(llm), "self_judged": True}
    else:
        choice = resolve_judge(opts, "audit")
        judge_info = choice.metrics()
        if not choice.self_judged:
            from llm import build_llm

            judge = build_llm(choice.settings)
    path = Path(str(opts.params.get("questions", DEFAULT_QUESTIONS)))
    questions = select_items(load_questions(path), opts.limit, opts.seed)
    sources = list(opts.subsets) or [str(s) for s in opts.params.get("sources", [])]
    log = ItemLog(opts.out_dir / ITEMS_FILE, resume=opts.resume)
    done = log.done()
    todo = [q for q in questions if q.id not in done]
    times = StageTimes()
    started = time.perf_counter()

    if opts.server_url:
        sources = await _server_answers(opts, todo, sources, log, times)
    else:
        try:
            sources = await _in_process(opts, todo, sources, log, times, llm, service, judge)
        finally:
            if judge is not None and judge is not llm and service is None:
                await judge.aclose()

    records = [log.done()[q.id] for q in questions if q.id in log.done()]
    agg = aggregate(records, sources)
    matrices = {
        "sources": sources,
        "labels": list(agg["pair_counts"]),
        "pair_counts": agg["pair_counts"],
        "questions": {r["key"]: {"sources": r["judged"], "matrix": r["matrix"]} for r in records},
    }
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    (opts.out_dir / "matrices.json").write_text(json.dumps(matrices, indent=1), encoding="utf-8")

    per_q = Table(
        "Per question",
        ["question", "topic", "sources judged", "r_abs", "R_div", "R_con", "any_div", "divergent pairs"],
        [
            [
                r["key"],
                r["topic"],
                len(r["judged"]),
                _fmt(r["r_abs"]),
                _fmt(r["r_div"]),
                _fmt(r["r_con"]),
                _fmt(r["any_div"]),
                "; ".join(f"{p['a']}~{p['b']}" for p in r["pairs"] if p["label"] in DIVERGENT) or "-",
            ]
            for r in records
        ],
    )
    per_s = Table(
        "Per source",
        [
            "source",
            "questions answered",
            "not available",
            "not searched",
            "answer errors",
            "r_abs",
            "R_div",
            "R_con",
            "any_div",
        ],
        [
            [
                s,
                v["questions"],
                v["not_available"],
                v["not_searched"],
                v["answer_errors"],
                _fmt(v["r_abs"]),
                _fmt(v["R_div"]),
                _fmt(v["R_con"]),
                _fmt(v["any_div"]),
            ]
            for s, v in agg["per_source"].items()
        ],
    )
    o = agg["overall"]
    overall = Table(
        "Overall",
        ["questions", "judged", "r_abs (mean per source)", "r_abs_pairs", "R_div", "R_con", "pct any_div"],
        [
            [
                o["questions"],
                o["questions_judged"],
                _fmt(o["r_abs"]),
                _fmt(o["r_abs_pairs"]),
                _fmt(o["R_div"]),
                _fmt(o["R_con"]),
                _fmt(o["any_div"]),
            ]
        ],
    )
    per_source = agg["per_source"]
    plots = [
        Plot(
            "audit_absence.png",
            "Absence rate per source",
            "bar",
            list(per_source),
            {"r_abs": [v["r_abs"] or 0.0 for v in per_source.values()]},
            ylabel="share of questions not addressed",
        ),
        Plot(
            "audit_divergence.png",
            "Per-pair divergence and consistency per source",
            "bar",
            list(per_source),
            {
                "R_div": [v["R_div"] or 0.0 for v in per_source.values()],
                "R_con": [v["R_con"] or 0.0 for v in per_source.values()],
            },
            ylabel="share of non-absent pairs",
        ),
    ]
    notes = [
        f"Reader (per-source answers): {judge_info['reader']}. Judge (absence screen, pairwise labels): "
        f"{judge_info['judge']}.",
        "r_abs per source = questions the source does not address / questions it answered; overall = the "
        "mean over sources (HERO-QA's average handbook absence rate); r_abs_pairs = ABSENT / judged pairs "
        "(not an absence rate).",
        "R_div = (DIVERGENT + CONTRADICTORY) / non-absent judged pairs; R_con = CONSISTENT / non-absent "
        "judged pairs; any_div = share of questions with at least one divergent pair.",
        "Per-question and aggregate N x N matrices: matrices.json (labels counted per unordered pair).",
    ]
    if judge_info["self_judged"]:
        notes.insert(0, SELF_JUDGE_WARNING)
    denied = {s: v["not_available"] for s, v in per_source.items() if v["not_available"]}
    if denied:
        notes.append(f"sources not available to the auditor for some questions (access denied): {denied}")
    not_ok = {s: v["not_searched"] for s, v in per_source.items() if v["not_searched"]}
    if not_ok:
        notes.append(f"sources not searched for some questions (failed/timeout): {not_ok}")
    failed = {s: v["answer_errors"] for s, v in per_source.items() if v["answer_errors"]}
    if failed:
        notes.append(
            f"per-source answers that failed (LLM errors or timeouts; excluded from every rate): {failed}. "
            "A slow local model may need COMETA_LLM__TIMEOUT_S raised."
        )
    return SuiteResult(
        suite="audit",
        metrics={
            "overall": o,
            "per_source": per_source,
            "per_question": {
                r["key"]: {k: r.get(k) for k in ("r_abs", "r_abs_pairs", "r_div", "r_con", "any_div")}
                for r in records
            },
            "wall_s": round(time.perf_counter() - started, 2),
            **judge_info,
        },
        tables=[per_q, per_s, overall],
        plots=plots,
        notes=notes,
        stage_times=times,
    )


async def _in_process(
    opts: RunOptions,
    todo: Sequence[AuditQuestion],
    sources: list[str],
    log: ItemLog,
    times: StageTimes,
    llm: LLMClient | None,
    service: SourcesService | None,
    judge_llm_in: LLMClient | None = None,
) -> list[str]:
    from app import Answerer, CrossSourceJudge, across_response, build_pipeline
    from app.sources import (
        ANONYMOUS,
        InvalidToken,
        SourcesService,
        UnknownSource,
        parse_sources,
    )
    from llm import build_llm
    from retrieval.embed import load_encoder, load_reranker

    settings = eval_settings(opts)
    reader_llm = llm if llm is not None else build_llm(settings.llm)
    judge_llm = judge_llm_in if judge_llm_in is not None else reader_llm
    if judge_llm is None or reader_llm is None:
        raise EvalInputError("the audit needs a reader and a judge: pass --llm and --judge-llm (or --server)")
    owned = service is None  # an injected service's pipeline belongs to the caller
    pipeline = service.pipeline if service is not None else build_pipeline(settings, llm=reader_llm)
    try:
        if service is None:
            encoder = reranker = None
            if "pubmed" not in sources:  # collections only: the encoder alone, not the PubMed index
                encoder = await asyncio.to_thread(load_encoder, settings.dense)
                reranker = await asyncio.to_thread(load_reranker, settings.rerank, encoder=encoder)
            service = SourcesService(
                settings, pipeline, encoder=encoder, reranker=reranker, models=pipeline.models
            )
        sources = sources or service.local_names()
        if len(sources) < 2:
            raise EvalInputError(
                f"the audit compares sources: got {sources or 'none'}; ingest collections "
                "(cometa collections add) or pass --subsets a,b,..."
            )
        try:
            refs = parse_sources(
                sources, local=service.local_names(), nodes=list(service.federation.nodes), strict=True
            )
        except UnknownSource as exc:
            raise EvalInputError(str(exc)) from exc
        judge = CrossSourceJudge(
            judge_llm, max_sources=max(2, min(8, len(sources))), concurrency=settings.api.judge_concurrency
        )
        answerer = Answerer(reader_llm, settings.answer)
        # The auditor's JWT, if any: this node's policies decide what it may read, as for /ask.
        bearer = os.environ.get("COMETA_EVAL_BEARER")
        try:
            subject = service.subject(f"Bearer {bearer}") if bearer else ANONYMOUS
        except InvalidToken as exc:
            raise EvalInputError(f"COMETA_EVAL_BEARER: {exc}") from exc
        with progress(len(todo), "audit") as advance:
            for q in todo:
                understanding = await pipeline.understander.understand(q.question)
                if not understanding.scope.in_scope:  # as on /ask: nothing is searched or judged
                    log.append(_record(q, {}))
                    advance(1)
                    continue
                out = await service.ask(
                    q.question,
                    refs,
                    subject=subject,
                    answerer=answerer,
                    judge=judge,
                    understanding=understanding,
                    reader=reader_llm,
                )
                for stage, ms in out.timings_ms.items():
                    times.add(stage, ms)
                log.append(_record(q, across_response(out, q.id, 0).model_dump(mode="json")))
                advance(1)
    finally:
        if owned:
            await pipeline.aclose()
    return sources

"""``cometa eval <suite>``: every evaluation suite behind one set of options; JSON + markdown + PNG out.

    cometa eval retrieval [--limit N] [--seed S] [--out DIR] [--llm none|embedded|openai] [--server URL]
                          [--subsets a,b] [--no-resume] [--param k=v ...]

Each suite module is imported only when its command runs, so a suite that cannot load (missing optional
dependency, work in progress) fails alone, with a message, instead of breaking the whole CLI. Exit codes:
0 done, 1 the run failed, 2 bad input (unknown subset, malformed ``--param``, out folder of another config).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape

from ._runner import (
    EvalInputError,
    RunOptions,
    SuiteResult,
    check_figure_file,
    check_run_dir,
    default_out_dir,
    figure_files,
    parse_param,
    run_metadata,
    write_result,
)

__all__ = ["eval_app", "run_suite"]

eval_app = typer.Typer(
    no_args_is_help=True,
    help="Evaluation suites (retrieval, chunking, qa, medrgb, ccrs, audit): JSON + markdown report + plots.",
)
_out = Console()
_err = Console(stderr=True)


def _exit(message: str, code: int) -> typer.Exit:
    """Print ``error: message`` (already escaped: text, not markup) on stderr; the exit to raise with ``code``
    (1: the run or a builder failed, 2: bad input)."""
    _err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


LLMChoice = Literal["none", "embedded", "openai"]

LimitOpt = Annotated[
    int | None, typer.Option("--limit", min=0, help="At most N items per subset (seeded sample).")
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the --limit sample and of any sampling.")]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", help="Output folder (default: var/eval/<suite>-<config hash>, resumable)."),
]
LLMOpt = Annotated[
    LLMChoice | None,
    typer.Option(
        "--llm",
        help="Reader/generator/judge backend; COMETA_LLM__* configure it. Default: the offline default "
        "(none unless COMETA_LLM__BACKEND is set).",
    ),
]
ServerOpt = Annotated[
    str | None, typer.Option("--server", help="Answer through a running CoMeta server (POST URL/ask).")
]
SubsetsOpt = Annotated[str | None, typer.Option("--subsets", help="Comma-separated subset names.")]
NoResumeOpt = Annotated[
    bool, typer.Option("--no-resume", help="Start over instead of skipping items already in items.jsonl.")
]
JudgeLLMOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-llm",
        help="The judge, apart from the reader: none, embedded, embedded:FILE.gguf, openai or "
        "openai:MODEL@URL, over COMETA_JUDGE_LLM__* (default: COMETA_JUDGE_LLM__* if set). "
        "Judge = reader is refused.",
    ),
]
SelfJudgeOpt = Annotated[
    bool,
    typer.Option(
        "--allow-self-judge", help="Let the reader grade its own answers (the report is marked SELF-JUDGED)."
    ),
]
DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="Your own items (JSONL: question, reference answer, optional options/answer, documents).",
    ),
]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option("--param", help="Suite knob key=value (value read as JSON when it parses), repeatable."),
]


def _llm_settings(choice: LLMChoice | None) -> Any:
    if choice is None:
        return None
    from app import Settings

    # The backend from the flag; model, URL and key from COMETA_LLM__* as everywhere else.
    return Settings().llm.model_copy(update={"backend": choice})


def _judge_settings(spec: str | None) -> Any:
    if spec is None:
        return None
    from eval import EvalSettings
    from eval.judging import parse_llm_spec

    # Model, URL and key from COMETA_JUDGE_LLM__* when set, else the LLM layer's defaults.
    return parse_llm_spec(spec, EvalSettings().judge_llm)


def _options(
    suite: str,
    *,
    limit: int | None,
    seed: int,
    out: Path | None,
    llm: LLMChoice | None,
    server: str | None,
    subsets: str | None,
    no_resume: bool,
    params: list[str] | None,
    judge_llm: str | None = None,
    allow_self_judge: bool = False,
    extra_params: dict[str, Any] | None = None,
    system: dict[str, Any] | None = None,
) -> RunOptions:
    if server is not None and not server.startswith(("http://", "https://")):
        raise EvalInputError(f"--server wants an http(s) URL, got {server!r}")
    parsed = dict(parse_param(p) for p in params or [])
    parsed.update(extra_params or {})
    names = tuple(s.strip() for s in (subsets or "").split(",") if s.strip())
    opts = RunOptions(
        out_dir=Path("."),
        limit=limit,
        seed=seed,
        resume=not no_resume,
        llm=_llm_settings(llm),
        server_url=server,
        subsets=names,
        params=parsed,
        system=system or {},
        judge_llm=_judge_settings(judge_llm),
        allow_self_judge=allow_self_judge,
    )
    return replace(opts, out_dir=out if out is not None else default_out_dir(suite, opts))


def run_suite(
    suite: str,
    load: Callable[[], Callable[[RunOptions], Coroutine[Any, Any, SuiteResult]]],
    opts: RunOptions,
) -> list[Path]:
    """Load the suite, run it, write its report; raise ``typer.Exit`` with the contract's exit codes."""
    # Evaluation is offline by default: a Hugging Face hub lookup would stall for a minute before failing.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        runner = load()
    except (ImportError, AttributeError) as exc:
        raise _exit(f"suite {suite!r} is unavailable: {type(exc).__name__}: {escape(str(exc))}", 1) from exc
    try:
        metadata = run_metadata(suite, opts)
        check_run_dir(opts, metadata)
        result = asyncio.run(runner(opts))
    except EvalInputError as exc:
        raise _exit(escape(str(exc)), 2) from exc
    except Exception as exc:  # any failure of a run: one line, exit 1, no traceback wall
        from core import CometaError

        if not isinstance(exc, CometaError | OSError):
            raise
        # The message is text, not markup: "cometa[llm]" must print as written.
        raise _exit(f"{suite} failed: {type(exc).__name__}: {escape(str(exc))}", 1) from exc
    paths = write_result(result, opts, metadata)
    for table in result.tables:
        _out.print(f"\n{table.title}\n", markup=False, highlight=False)
        _out.print(table.markdown(), markup=False, highlight=False, soft_wrap=True)
    for note in result.notes:
        _out.print(f"- {note}", markup=False, highlight=False)
    _out.print(f"\nreport: {opts.out_dir / 'report.md'} ({len(paths)} files)", markup=False)
    return paths


def _suite(
    module: str, function: str
) -> Callable[[], Callable[[RunOptions], Coroutine[Any, Any, SuiteResult]]]:
    def load() -> Callable[[RunOptions], Coroutine[Any, Any, SuiteResult]]:
        fn: Callable[[RunOptions], Coroutine[Any, Any, SuiteResult]] = getattr(
            importlib.import_module(f"eval.{module}"), function
        )
        return fn

    return load


def _judged_command(suite: str, module: str, function: str, doc: str, *, data: bool = False) -> None:
    """A suite that grades with a judge model: ``--judge-llm``, ``--allow-self-judge`` (and ``--data``)."""

    def command(
        limit: LimitOpt = None,
        seed: SeedOpt = 0,
        out: OutOpt = None,
        llm: LLMOpt = None,
        judge_llm: JudgeLLMOpt = None,
        allow_self_judge: SelfJudgeOpt = False,
        server: ServerOpt = None,
        subsets: SubsetsOpt = None,
        no_resume: NoResumeOpt = False,
        param: ParamOpt = None,
        data_file: DataOpt = None,
    ) -> None:
        try:
            if data_file is not None and not data:
                raise EvalInputError(f"{suite} takes no --data")
            if data_file is not None and not data_file.is_file():
                raise EvalInputError(f"--data: no such file: {data_file}")
            opts = _options(
                suite,
                limit=limit,
                seed=seed,
                out=out,
                llm=llm,
                server=server,
                subsets=subsets,
                no_resume=no_resume,
                params=param,
                judge_llm=judge_llm,
                allow_self_judge=allow_self_judge,
                extra_params={"data": str(data_file.resolve())} if data_file is not None else None,
            )
        except EvalInputError as exc:
            raise _exit(escape(str(exc)), 2) from exc
        run_suite(suite, _suite(module, function), opts)

    command.__doc__ = doc
    eval_app.command(suite)(command)


def _command(suite: str, module: str, function: str, doc: str) -> None:
    def command(
        limit: LimitOpt = None,
        seed: SeedOpt = 0,
        out: OutOpt = None,
        llm: LLMOpt = None,
        server: ServerOpt = None,
        subsets: SubsetsOpt = None,
        no_resume: NoResumeOpt = False,
        param: ParamOpt = None,
    ) -> None:
        try:
            opts = _options(
                suite,
                limit=limit,
                seed=seed,
                out=out,
                llm=llm,
                server=server,
                subsets=subsets,
                no_resume=no_resume,
                params=param,
            )
        except EvalInputError as exc:
            raise _exit(escape(str(exc)), 2) from exc
        run_suite(suite, _suite(module, function), opts)

    command.__doc__ = doc
    eval_app.command(suite)(command)


_command(
    "retrieval",
    "retrieval",
    "run_retrieval",
    "CoMeta Tables 1/5: raw E-utilities vs Adapt-E vs dense vs hybrid; Hit@10, MRR@10, Recall@10/50, Hit0. "
    "Subsets: standard, narrative, handwritten, the world's gold sets (cohen-topic, cohen-narrative, ei, "
    "unanswerable; NAME@dev|test for one split) or a JSONL file. --llm adds the LLM-rewriter rows.",
)
_command(
    "chunking",
    "chunking",
    "run_chunking",
    "CoMeta Table 3: passage Hit@5/MRR@5 by segmenter (SEOS, fixed, sentence window, TextTiling) and "
    "retriever (BM25, dense, dense+rerank). Subsets: segmenter names. Params: "
    "source=fixture|ei|ei@dev|ei@test (ei: the world's Evidence Inference spans, needs "
    "COMETA_LOCAL_SERVER__CORPUS_DIR), depth=fulltext|abstract|both (Table 2 analogue), "
    "scope=pool|article|both, reranker=, max_length=.",
)
_command(
    "qa",
    "qa",
    "run_qa",
    "CoMeta Table 4: LLM+CoT (no retrieval) vs naive RAG (top-5 documents) vs the CoMeta pipeline; "
    "accuracy per subset ± sqrt(acc(1-acc)/n). Needs --llm embedded|openai (or --server). "
    "Subsets: medqa, medmcqa, pubmedqa, bioasq, mmlu. "
    "Params: variant=standard|narrative, source=cmmqa|mirage, arms=[...].",
)
_judged_command(
    "medrgb",
    "medrgb",
    "run_medrgb",
    "MedRGB scenarios: standard RAG, sufficiency (signal share rho), integration, robustness. The judge "
    "(--judge-llm) checks signal relevance, writes sub-QA pairs and counterfactuals and grades sub-answers.",
)
_judged_command(
    "ccrs",
    "ccrs",
    "run_ccrs",
    "CCRS LLM-judge metrics (CC, QR, ID, AC, IR) and their validity statistics across systems; "
    "--data FILE.jsonl for your own questions and reference answers.",
    data=True,
)
_judged_command(
    "audit",
    "audit",
    "run_audit",
    "Source-dependence audit over a question set (judge matrix per question and aggregated).",
)

_judged_command(
    "judge",
    "judging",
    "run_judge",
    "Validate the five-label cross-source judge (the judge under test: --judge-llm / COMETA_JUDGE_LLM__* "
    "when set, else --llm; there is no reader here) against human labels: "
    "Citation-Integrity, HealthVer, COVID-Fact, SciFact-RTE; accuracy, per-label P/R, Cohen's kappa, "
    "confusion matrices. Subsets: citation_integrity, healthver, covidfact, scifact_rte.",
)

_command(
    "pubmedrs",
    "pubmedrs",
    "run_pubmedrs",
    "Clinfo.AI's PubMedRS-200: ROUGE-L vs the human answers and recall of the reviews' reference PMIDs. "
    "Live mode: --server URL of a CoMeta on live NCBI with an LLM (in process: the offline corpus, "
    "labelled so).",
)


@eval_app.command("build-cmmqa")
def build_cmmqa_command(
    benchmark: Annotated[
        Path | None, typer.Option("--benchmark", help="MIRAGE benchmark.json (default: found).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("var/eval/cmmqa"),
    narratives: Annotated[
        bool, typer.Option("--narratives", help="Also write the clinical-narrative variant (needs an LLM).")
    ] = False,
    llm: Annotated[Literal["embedded", "openai"], typer.Option("--llm", help="Narrative writer.")] = "openai",
    limit: LimitOpt = None,
    seed: SeedOpt = 0,
    no_resume: NoResumeOpt = False,
) -> None:
    """CMMQA: the cancer filter over MIRAGE (MeSH C04 terms), counts per subset; optionally narratives."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        module = importlib.import_module("eval.cmmqa")
        build = module.build_cmmqa
    except (ImportError, AttributeError) as exc:
        raise _exit(f"CMMQA builder unavailable: {type(exc).__name__}: {escape(str(exc))}", 1) from exc
    if benchmark is not None and not benchmark.is_file():
        raise _exit(f"no such benchmark file: {escape(str(benchmark))}", 2)
    try:
        summary = build(
            benchmark=benchmark,
            out_dir=out,
            narratives=narratives,
            llm=_llm_settings(llm),
            limit=limit,
            seed=seed,
            resume=not no_resume,
        )
    except EvalInputError as exc:
        raise _exit(escape(str(exc)), 2) from exc
    table = summary.get("table")
    if table is not None:
        _out.print(table.markdown(), markup=False, highlight=False, soft_wrap=True)
    if "narratives" in summary:
        _out.print(f"narratives: {summary['narratives']}", markup=False)
    _out.print(f"wrote {out / 'cmmqa.json'}", markup=False)


@eval_app.command("build-gold")
def build_gold_command(
    source: Annotated[
        Path | None,
        typer.Option(
            "--from", help="The shared data folder (default: $COMETA_SHARED_DIR/data or ../shared/data)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output folder (default: $COMETA_GOLD_DIR or var/eval/gold).")
    ] = None,
    seed: SeedOpt = 0,
    ei_items: Annotated[
        int, typer.Option("--ei-items", min=1, help="Evidence Inference items (one prompt per article).")
    ] = 300,
) -> None:
    """The world's gold sets (Cohen topics/narratives, Evidence Inference, unanswerable), dev/test split."""
    from app import progress_bar

    try:
        gold = importlib.import_module("eval.gold")
    except ImportError as exc:
        raise _exit(f"gold-set builder unavailable: {type(exc).__name__}: {escape(str(exc))}", 1) from exc
    shared = gold.find_shared_data(source)
    if shared is None:
        where = source if source is not None else "$COMETA_SHARED_DIR/data or ../shared/data"
        raise _exit(f"no shared data folder (cohen2006/ ...) at {escape(str(where))}", 2)
    target = out if out is not None else gold.default_gold_dir()
    try:
        with progress_bar("evidence inference articles") as on_progress:
            summary = gold.build_gold(shared, target, seed=seed, ei_items=ei_items, on_progress=on_progress)
    except EvalInputError as exc:
        raise _exit(escape(str(exc)), 2) from exc
    for name, counts in summary.counts.items():
        _out.print(f"{name}: dev {counts['dev']}, test {counts['test']}", markup=False)
    overlap = summary.overlap
    _out.print(
        f"cohen-narrative title overlap: mean share {overlap['title_share_mean']:.3f}, "
        f"max {overlap['title_share_max']:.3f} (allowed {overlap['max_share_allowed']}), "
        f"max Jaccard {overlap['jaccard_max']:.3f}",
        markup=False,
    )
    _out.print(f"wrote {target}", markup=False)


@eval_app.command("compare")
def compare_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="CCRS run folders (each with items.jsonl).")],
    out: OutOpt = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="A name per run folder, in order (default: folder names)."),
    ] = None,
    hypothesis: Annotated[
        list[str] | None,
        typer.Option(
            "--hypothesis",
            help="A>B or A<B (one-sided), A!=B (two-sided), optionally @CC,QR: Holm-corrected together.",
        ),
    ] = None,
    b: Annotated[
        int, typer.Option("--B", min=100, help="Randomised Tukey HSD trials (CCRS: 10,000).")
    ] = 10_000,
    alpha: Annotated[float, typer.Option("--alpha", min=0.0, max=1.0, help="Significance level.")] = 0.05,
    seed: SeedOpt = 0,
) -> None:
    """Merge CCRS runs into one statistics report over all systems: Tukey HSD, DP, Holm, ASL, box plots."""
    from eval.compare import compare_runs

    params = {
        "runs": [str(d.resolve()) for d in run_dirs],
        "labels": list(label or []),
        "hypotheses": list(hypothesis or []),
        "B": b,
        "alpha": alpha,
    }
    opts = RunOptions(out_dir=Path("."), seed=seed, params=params, llm=_llm_settings("none"))
    opts = replace(opts, out_dir=out if out is not None else default_out_dir("compare", opts))
    try:
        result = compare_runs(
            run_dirs, labels=label or None, B=b, seed=seed, alpha=alpha, hypotheses=hypothesis or ()
        )
    except EvalInputError as exc:
        raise _exit(escape(str(exc)), 2) from exc
    write_result(result, opts, run_metadata("compare", opts))
    for table in result.tables:
        _out.print(f"\n{table.title}\n", markup=False, highlight=False)
        _out.print(table.markdown(), markup=False, highlight=False, soft_wrap=True)
    for note in result.notes:
        _out.print(f"- {note}", markup=False, highlight=False)
    _out.print(f"\nreport: {opts.out_dir / 'report.md'}", markup=False)


@eval_app.command("backbones")
def backbones_command(
    backbone: Annotated[
        list[str],
        typer.Option(
            "--backbone",
            help="A reader LLM: embedded, embedded:FILE.gguf, openai or openai:MODEL@URL (over "
            "COMETA_LLM__*); repeat for each backbone.",
        ),
    ],
    limit: LimitOpt = None,
    seed: SeedOpt = 0,
    out: OutOpt = None,
    subsets: SubsetsOpt = None,
    no_resume: NoResumeOpt = False,
    param: ParamOpt = None,
) -> None:
    """CoMeta Table 6: the QA suite (naive RAG vs CoMeta by default) once per reader LLM, one report."""
    from app import Settings
    from eval.compare import run_backbones
    from eval.judging import parse_llm_spec

    try:
        base = Settings().llm
        specs = [parse_llm_spec(b, base) for b in backbone]
        opts = _options(
            "backbones",
            limit=limit,
            seed=seed,
            out=out,
            llm=None,
            server=None,
            subsets=subsets,
            no_resume=no_resume,
            params=param,
            system={"backbones": list(backbone)},  # what the run compares: hashed into its configuration
        )
    except EvalInputError as exc:
        raise _exit(escape(str(exc)), 2) from exc

    async def runner(o: RunOptions) -> SuiteResult:
        return await run_backbones(replace(o, system={}), specs)  # each arm is one reader, not the list

    run_suite("backbones", lambda: runner, opts)


@eval_app.command("calibrate-gate")
def calibrate_gate_command(
    out: Annotated[Path, typer.Option("--out", help="Output folder (records.jsonl, report.json).")] = Path(
        "var/eval/gate"
    ),
    limit: LimitOpt = None,
    keep: Annotated[
        float,
        typer.Option("--keep", min=0.5, max=1.0, help="Answerable gold citations kept on dev, vs no gate."),
    ] = 0.98,
    no_resume: NoResumeOpt = False,
) -> None:
    """The evidence gate's thresholds: calibrated on the dev split of the world's gold sets, reported on test.

    Run it on the world (COMETA_LOCAL_SERVER__CORPUS_DIR) with the models you serve: the defaults fit the
    offline MiniLM encoder; recalibrate for MedCPT / your cross-encoder and set the printed COMETA_GATE__*.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app import Settings, progress_bar

    try:
        module = importlib.import_module("eval.answers")
    except ImportError as exc:
        raise _exit(f"gate calibration unavailable: {type(exc).__name__}: {escape(str(exc))}", 1) from exc
    settings = Settings().offline()
    try:
        with progress_bar("questions") as on_progress:
            report = asyncio.run(
                module.run_calibrate_gate(
                    settings, out, limit=limit, keep=keep, reuse=not no_resume, on_item=on_progress
                )
            )
    except EvalInputError as exc:
        raise _exit(escape(str(exc)), 2) from exc
    t = report["thresholds"]
    for key in (
        "min_dense",
        "min_coverage",
        "min_dense_generic",
        "absent_max_dense",
        "min_dense_strict",
        "absent_min_share",
        "absent_phrase_max_dense",
        "absent_technical_max_dense",
    ):
        _out.print(f"COMETA_GATE__{key.upper()}={t[key]}", markup=False)
    for split in ("dev", "test", "test_without_gate"):
        m = report[split]
        _out.print(
            f"{split}: off-topic abstain {m['off_topic_abstain']:.1%}, out-of-world abstain "
            f"{m['out_of_world_abstain']:.1%}, answerable gold cited {m['answerable_gold_cited_after']:.1%} "
            f"(kept {m['answerable_kept_ratio']:.1%} of {m['answerable_gold_cited_before']:.1%}), "
            f"abstain precision {m['abstain_precision']:.1%} recall {m['abstain_recall']:.1%}",
            markup=False,
        )
    for split, batches in report["unanswerable_by_batch"].items():
        for batch, b in batches.items():
            _out.print(
                f"{split} {batch}: off-topic abstain {b['off_topic_abstain']:.1%} (n {b['n_off_topic']}), "
                f"out-of-world abstain {b['out_of_world_abstain']:.1%} (n {b['n_out_of_world']})",
                markup=False,
            )
    _out.print(f"wrote {out / 'report.json'}", markup=False)


@eval_app.command("safety")
def safety_command(
    split: Annotated[
        str, typer.Option("--split", help="dev (calibration), test (the reported number) or all.")
    ] = "dev",
    gold_dir: Annotated[
        Path | None,
        typer.Option("--gold", help="Built gold sets (cometa eval build-gold); default $COMETA_GOLD_DIR."),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report (JSON) here.")] = None,
) -> None:
    """The safety step (issue 28): urgent recall on the blind urgent set, false urgency on the blind
    look-alikes, ordinary questions and the answerable gold sets. Calibrate on dev; read test once
    (eval/expected/safety.yaml)."""
    if split not in ("dev", "test", "all"):
        raise _exit("--split is dev, test or all", 2)
    from eval.safety import run_safety

    try:
        report = run_safety(split, gold_dir)
    except EvalInputError as exc:
        raise _exit(escape(str(exc)), 2) from exc
    for group, m in report["urgent"].items():
        _out.print(
            f"urgent {group}: recall {m['recall']:.1%} ({m['caught']}/{m['n']}; "
            f"{m['by_model']} by the model)",
            markup=False,
        )
    for name, label in (("lookalike", "look-alikes"), ("ordinary", "ordinary questions")):
        m = report[name]
        _out.print(
            f"{label}: false urgent {m['rate']:.1%} ({m['urgent']}/{m['n']}; {m['by_model']} by the model)",
            markup=False,
        )
    for name, m in report["answerable"].items():
        _out.print(f"answerable {name}: false urgent {m['urgent']}/{m['n']}", markup=False)
    aa = report["answerable_all"]
    _out.print(f"answerable all: false urgent {aa['rate']:.1%} ({aa['urgent']}/{aa['n']})", markup=False)
    ev = report["exam_vignettes"]
    _out.print(f"exam vignettes (CMMQA, beside): urgent {ev['urgent']}/{ev['n']}", markup=False)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        _out.print(f"wrote {out}", markup=False)


def _safety_figures(split: str = "dev", answerable: bool = False) -> dict[str, Any]:
    from eval.safety import run_safety

    return run_safety(split, answerable=answerable)


@eval_app.command("scope")
def scope_command(
    split: Annotated[
        str,
        typer.Option("--split", help="dev (calibration), test or test2 (reported numbers, each read once)."),
    ] = "dev",
    out: Annotated[Path | None, typer.Option("--out", help="Write the report (JSON) here.")] = None,
) -> None:
    """The scope check (issue 30): non-medical requests refused before any search, health questions in
    everyday words refused by mistake, on the blind sets of eval/data/scope (eval/expected/scope.yaml)."""
    if split not in ("dev", "test", "test2"):
        raise _exit("--split is dev, test or test2", 2)
    report = _scope_figures(split)
    for label in ("non_medical", "health"):
        m = report[label]
        _out.print(
            f"{label}: refused before search {m['rate']:.1%} ({m['refused']}/{m['n']}; {m['reasons']})",
            markup=False,
        )
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        _out.print(f"wrote {out}", markup=False)


def _scope_figures(split: str = "dev") -> dict[str, Any]:
    from eval.scope import run_scope

    return run_scope(split)


# What an eval/expected file's check block may re-run: deterministic, offline, seconds.
FIGURE_RUNNERS: dict[str, Callable[..., dict[str, Any]]] = {
    "safety": _safety_figures,
    "scope": _scope_figures,
}


@eval_app.command("expected")
def expected_command(
    check: Annotated[
        bool, typer.Option("--check", help="Re-run each file's check block and compare its figures.")
    ] = False,
) -> None:
    """Measured figures as data (eval/expected/*.yaml): list them, or with --check re-run the deterministic
    ones and fail (exit 1) unless the shipped code reproduces them within their tolerance."""
    failed = 0
    for path in figure_files():
        if not check:
            _out.print(f"{path.name}", markup=False)
            continue
        try:
            result = check_figure_file(path, FIGURE_RUNNERS)
        except EvalInputError as exc:
            raise _exit(escape(str(exc)), 2) from exc
        if isinstance(result, str):
            _out.print(f"{path.name}: not checked ({result})", markup=False)
            continue
        for c in result:
            got = "missing" if c.actual is None else f"{c.actual:.4f}"
            verdict = "ok" if c.ok else "DIFFERS"
            failed += not c.ok
            _out.print(
                f"{path.name}: {c.metric} expected {c.expected:.4f} ± {c.tolerance:g}, got {got}: {verdict}",
                markup=False,
            )
    if failed:
        raise _exit(f"{failed} figure(s) differ from eval/expected", 1)


@eval_app.command("cited")
def cited_command(
    data: Annotated[
        list[str],
        typer.Option("--data", help="A JSON Lines file of items, or a built gold set (ei@dev); repeatable."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Output file (JSON report).")] = Path(
        "var/eval/cited.json"
    ),
    limit: LimitOpt = None,
) -> None:
    """What the patient reads is about the question (issue 29): gold study cited, another study cited
    instead, near misses abstained, unanswerable handled; through the Asker as /ask answers offline. Run it
    on the corpus the items were written for (the world: COMETA_LOCAL_SERVER__CORPUS_DIR)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from app import Settings, progress_bar

    module = importlib.import_module("eval.answers")
    try:
        items = [item for spec in data for item in module.load_items(spec)[:limit]]
        kinds = {module.item_kind(item) for item in items}
    except EvalInputError as exc:
        raise _exit(escape(str(exc)), 2) from exc
    if not items:
        raise _exit("no items", 2)
    with progress_bar("questions") as on_progress:
        report = asyncio.run(module.run_cited(Settings().offline(), items, on_item=on_progress))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for key, m in report["summary"].items():
        shown = {k: v for k, v in m.items() if k not in ("n", "modes")}
        _out.print(f"{key}: n={m['n']} {shown} modes={m['modes']}", markup=False)
    _out.print(f"wrote {out} ({len(items)} items; kinds: {', '.join(sorted(kinds))})", markup=False)


@eval_app.command("answer-quality")
def answer_quality_command(
    out: Annotated[Path, typer.Option("--out", help="Output file (JSON report).")] = Path(
        "var/eval/answer-quality.json"
    ),
    split: Annotated[
        str, typer.Option("--split", help="Evidence Inference split: dev, test or all.")
    ] = "dev",
    sets: Annotated[str, typer.Option("--sets", help="Comma-separated: pubmedqa, ei.")] = "pubmedqa,ei",
    limit: LimitOpt = None,
) -> None:
    """The extractive answer (no LLM) against the gold: PubMedQA conclusions and Evidence Inference spans.

    Asks every question through the Asker as /ask does offline; run it on the world
    (COMETA_LOCAL_SERVER__CORPUS_DIR) with the gold sets built (cometa eval build-gold).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from app import Settings, progress_bar

    try:
        module = importlib.import_module("eval.answers")
        gold = importlib.import_module("eval.gold")
    except ImportError as exc:
        raise _exit(f"answer quality unavailable: {type(exc).__name__}: {escape(str(exc))}", 1) from exc
    chosen = tuple(s.strip() for s in sets.split(",") if s.strip())
    if not set(chosen) <= {"pubmedqa", "ei"} or split not in ("dev", "test", "all"):
        raise _exit("--sets takes pubmedqa,ei and --split dev, test or all", 2)
    with progress_bar("questions") as on_progress:
        report = asyncio.run(
            module.run_answer_quality(
                Settings().offline(),
                sets=chosen,
                split=None if split == "all" else split,
                limit=limit,
                gold_dir=gold.default_gold_dir(),
                on_item=on_progress,
            )
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    for name, m in report.items():
        _out.print(
            f"{name}: n={m['n']}, gold contained {m['contains_gold']:.1%} (of {m['gold_known']} with a known "
            f"gold; in the gold study's own line {m['contains_gold_in_study_line']:.1%}), "
            f"gold cited {m['cited_gold']:.1%}, gold study first {m['gold_first']:.1%}, "
            f"{m['studies_per_answer']:.2f} studies per extractive answer, answers with section labels "
            f"{m['with_section_labels']}, modes {m['modes']}",
            markup=False,
        )
    _out.print(f"wrote {out}", markup=False)

"""The shared frame of every evaluation suite: options, a resumable item log, timings, reports.

A suite is ``async def run_<suite>(opts: RunOptions) -> SuiteResult``. It records one line per finished item
in ``opts.out_dir/items.jsonl`` (:class:`ItemLog`), so a killed run picks up where it stopped; it sums
latency and tokens per stage (:class:`StageTimes`); and it returns tables, plots and caveats, which
:func:`write_result` turns into ``result.json``, ``report.md`` and PNG plots next to the item log.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import yaml

from app import progress_bar
from core import CometaError
from llm import LLMSettings

if TYPE_CHECKING:
    from app import Answerer, Asker, Pipeline, Settings
    from llm import LLMClient

__all__ = [
    "EXPECTED_DIR",
    "ITEMS_FILE",
    "AskRunner",
    "EvalInputError",
    "EvalServerError",
    "FigureCheck",
    "ItemLog",
    "Plot",
    "RunOptions",
    "StageTimes",
    "SuiteResult",
    "Table",
    "build_offline_services",
    "check_figure_file",
    "check_run_dir",
    "config_hash",
    "corpus_snapshot",
    "default_out_dir",
    "describe_llm",
    "eval_settings",
    "figure_files",
    "parse_param",
    "progress",
    "read_item_records",
    "run_metadata",
    "select_items",
    "write_result",
]

T = TypeVar("T")

ITEMS_FILE = "items.jsonl"
_REPO_ROOT = Path(__file__).resolve().parent.parent


class EvalInputError(CometaError, ValueError):
    """Bad suite input (unknown subset, malformed parameter, missing data): the CLI exits 2 with it."""


@dataclass(frozen=True)
class RunOptions:
    out_dir: Path  # everything for this run goes here
    limit: int | None = None  # max items per subset (after a seeded shuffle when seed is used)
    seed: int = 0
    resume: bool = True  # skip item ids already in out_dir/items.jsonl
    llm: LLMSettings | None = None  # None = the offline default of Settings().offline()
    server_url: str | None = None  # answer through a running CoMeta server (POST /ask) instead
    system: Mapping[str, Any] = field(default_factory=dict)  # hashed into config_hash
    subsets: tuple[str, ...] = ()  # () = the suite's default subsets
    params: Mapping[str, Any] = field(default_factory=dict)  # suite-specific knobs
    # The judged suites' grader (CCRS, MedRGB generation/grading, audit); None = COMETA_JUDGE_LLM__* if set.
    judge_llm: LLMSettings | None = None
    allow_self_judge: bool = False  # let the reader grade itself (refused by default; reports are marked)


# --- resumable item log -------------------------------------------------------------------------------


class ItemLog:
    """``items.jsonl``: one JSON object per finished item, flushed per line so a kill loses at most one."""

    def __init__(self, path: Path, *, resume: bool) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._done: dict[str, dict[str, Any]] = {}
        if resume and path.exists():
            self._done = read_item_records(path)
            # Rewrite without a torn last line, so appends start on a fresh line.
            with path.open("w", encoding="utf-8") as fh:
                for record in self._done.values():
                    fh.write(json.dumps(record, ensure_ascii=False, default=_json_default) + "\n")
        else:
            path.write_text("", encoding="utf-8")

    def done(self) -> dict[str, dict[str, Any]]:
        """key -> record from an earlier partial run (empty when not resuming)."""
        return dict(self._done)

    def append(self, record: dict[str, Any]) -> None:
        key = record.get("key")
        if not isinstance(key, str) or not key:
            raise ValueError("an item record needs a non-empty string 'key'")
        if key in self._done:
            raise ValueError(f"item {key!r} is already in {self.path.name}")
        line = json.dumps(record, ensure_ascii=False, default=_json_default)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
        self._done[key] = record


def read_item_records(path: Path) -> dict[str, dict[str, Any]]:
    """An ``items.jsonl``'s records by key, in file order; torn lines and records without a key skipped."""
    records: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by a kill mid-write: that item simply runs again
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            records[record["key"]] = record
    return records


# --- timings ------------------------------------------------------------------------------------------


@dataclass
class StageTimes:
    """Latency (ms) and tokens per stage, summed over a run."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)

    def add(self, stage: str, ms: float, tokens: int = 0) -> None:
        self.samples.setdefault(stage, []).append(float(ms))
        self.tokens[stage] = self.tokens.get(stage, 0) + int(tokens)

    def merge(self, other: Mapping[str, Any]) -> None:
        """Fold in ``{stage: ms}``, ``{stage: {"ms": ..., "tokens": ...}}`` or another StageTimes' fields
        (``{"samples": {...}, "tokens": {...}}``), e.g. a record's timings read back from the item log."""
        if "samples" in other and isinstance(other["samples"], Mapping):
            for stage, values in other["samples"].items():
                self.samples.setdefault(stage, []).extend(float(v) for v in values)
            for stage, n in (other.get("tokens") or {}).items():
                self.tokens[stage] = self.tokens.get(stage, 0) + int(n)
            return
        for stage, value in other.items():
            if isinstance(value, Mapping):
                self.add(stage, float(value.get("ms", 0.0)), int(value.get("tokens", 0)))
            elif isinstance(value, int | float):
                self.add(stage, float(value))

    def summary(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for stage in sorted(self.samples):
            values = sorted(self.samples[stage])
            total = sum(values)
            out[stage] = {
                "count": float(len(values)),
                "ms_total": round(total, 2),
                "ms_mean": round(total / len(values), 2) if values else 0.0,
                "ms_p50": round(_percentile(values, 50), 2),
                "ms_p95": round(_percentile(values, 95), 2),
                "tokens": float(self.tokens.get(stage, 0)),
            }
        return out


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), without numpy."""
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


# --- results ------------------------------------------------------------------------------------------


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[Any]]

    def markdown(self) -> str:
        def cell(value: Any) -> str:
            if value is None:
                return "n/a"
            if isinstance(value, float):
                return f"{value:.3f}"
            return str(value).replace("|", "\\|").replace("\n", " ")

        lines = ["| " + " | ".join(self.header) + " |", "|" + "|".join("---" for _ in self.header) + "|"]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in self.rows]
        return "\n".join(lines)


@dataclass
class Plot:
    filename: str
    title: str
    kind: Literal["bar", "hist", "line", "box", "heatmap"]
    labels: list[str]  # bar/line: x categories; hist: ignored; box: one label per series; heatmap: columns
    series: dict[str, list[float]]  # name -> values (one per label; hist: raw samples)
    ylabel: str = ""
    xlabel: str = ""


@dataclass
class SuiteResult:
    suite: str
    metrics: dict[str, Any]  # JSON-able numbers for machines
    tables: list[Table]
    plots: list[Plot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # caveats printed in the report
    stage_times: StageTimes | None = None


# --- metadata -----------------------------------------------------------------------------------------


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=str)
    if hasattr(obj, "get_secret_value"):
        return "**********"  # never a key in a hash input or a report
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def config_hash(obj: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no whitespace), first 12 hex digits."""
    canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def eval_settings(opts: RunOptions) -> Settings:
    """``Settings().offline()`` with ``opts.llm`` applied: the components every suite runs on."""
    from app import Settings

    settings = Settings().offline()
    if opts.llm is not None:
        settings = settings.model_copy(update={"llm": opts.llm})
    return settings


def judge_settings(opts: RunOptions) -> LLMSettings | None:
    """The judged suites' grader: ``opts.judge_llm``, else ``COMETA_JUDGE_LLM__*`` when set (None: none)."""
    if opts.judge_llm is not None:
        return opts.judge_llm
    from ._settings import EvalSettings

    return EvalSettings().judge_llm


def describe_llm(llm: LLMSettings) -> dict[str, Any]:
    """What names a model in reports and config hashes: backend, model (or GGUF file), URL, sampling."""
    return _llm_description(llm)


def _llm_description(llm: LLMSettings) -> dict[str, Any]:
    if llm.backend == "none":
        return {"backend": "none", "model": None}
    if llm.backend == "embedded":
        model = str(llm.embedded_model_path) if llm.embedded_model_path else "gemma3-270m-q4-k-m (bundled)"
        return {
            "backend": "embedded",
            "model": model,
            "temperature": llm.temperature,
            "seed": llm.embedded_seed,
            "n_ctx": llm.embedded_n_ctx,
            "max_tokens": llm.max_tokens,
        }
    return {
        "backend": "openai",
        "model": llm.model,
        "base_url": llm.base_url,
        "temperature": llm.temperature,
        "max_tokens": llm.max_tokens,
    }


def _dense_description(settings: Settings) -> str:
    d = settings.dense
    if not d.enabled:
        return "disabled"
    if d.encoder == "medcpt":
        return f"medcpt: {d.query_model} / {d.article_model}"
    return f"sentence-transformers: {d.st_model or 'all-MiniLM-L6-v2 (bundled)'}"


def corpus_snapshot() -> str:
    """Id of the bundled corpus: the hash of its manifest (inputs and counts), or "unknown"."""
    from retrieval.ncbi import BUNDLED_CORPUS_DIR

    manifest = BUNDLED_CORPUS_DIR / "MANIFEST.json"
    try:
        return "sha256:" + hashlib.sha256(manifest.read_bytes()).hexdigest()[:12]
    except OSError:
        return "unknown"


def _git_commit() -> str | None:
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=_REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    if proc.returncode != 0 or not commit:
        return None
    try:
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=_REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        dirty = ""
    return commit + ("-dirty" if dirty else "")


def _hashable_options(suite: str, opts: RunOptions, settings: Settings) -> dict[str, Any]:
    """What defines a system configuration; out_dir/resume do not change results, so they stay out."""
    return {
        "suite": suite,
        "limit": opts.limit,
        "seed": opts.seed,
        "subsets": list(opts.subsets),
        "params": dict(opts.params),
        "system": dict(opts.system),
        "server_url": opts.server_url,
        "llm": _llm_description(settings.llm),
        "dense": {"encoder": settings.dense.encoder, "enabled": settings.dense.enabled},
        "rerank": settings.rerank.model,
        # Only when a judge is configured, so the hashes (and resumable folders) of unjudged runs stay put.
        **({"judge_llm": _llm_description(judge)} if (judge := judge_settings(opts)) is not None else {}),
        **({"allow_self_judge": True} if opts.allow_self_judge else {}),
    }


def run_metadata(suite: str, opts: RunOptions) -> dict[str, Any]:
    """Config hash, models, prompt versions, corpus snapshot, seed/limit, git commit, start time, host."""
    from prompts import available_prompts

    settings = eval_settings(opts)
    judge = judge_settings(opts)
    hashed = _hashable_options(suite, opts, settings)
    return {
        "suite": suite,
        "config_hash": config_hash(hashed),
        "config": hashed,
        "models": {
            "llm": _llm_description(settings.llm),
            "judge_llm": _llm_description(judge) if judge is not None else "none configured",
            "dense_encoder": _dense_description(settings),
            "reranker": settings.rerank.model,
        },
        "prompts": {name: f"{name}@{versions[-1]}" for name, versions in available_prompts().items()},
        "corpus_snapshot": corpus_snapshot(),
        "seed": opts.seed,
        "limit": opts.limit,
        "subsets": list(opts.subsets),
        "server_url": opts.server_url,
        "git_commit": _git_commit(),
        "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }


# --- progress -----------------------------------------------------------------------------------------


@contextlib.contextmanager
def progress(total: int, description: str) -> Iterator[Callable[[int], None]]:
    """The CLI's bar (:func:`app.progress_bar`) over ``total`` items; yields ``advance(n)``, which counts the
    items done and reports ``(done, total)`` to it. Silent when stderr is not a terminal."""
    with progress_bar(description) as on_progress:
        done = 0
        on_progress(done, total)

        def advance(n: int = 1) -> None:
            nonlocal done
            done += n
            on_progress(done, total)

        yield advance


# --- writing ------------------------------------------------------------------------------------------


def write_result(result: SuiteResult, opts: RunOptions, metadata: dict[str, Any]) -> list[Path]:
    """``result.json``, ``report.md`` and one PNG per plot in ``opts.out_dir``; returns the paths written."""
    out = opts.out_dir
    out.mkdir(parents=True, exist_ok=True)
    stages = result.stage_times.summary() if result.stage_times else {}
    written: list[Path] = []
    for plot in result.plots:
        written.append(_draw(plot, out))
    payload = {
        "suite": result.suite,
        "metadata": metadata,
        "metrics": result.metrics,
        "tables": [asdict(t) for t in result.tables],
        "plots": [p.filename for p in result.plots],
        "notes": result.notes,
        "stage_times": stages,
    }
    result_path = out / "result.json"
    result_path.write_text(
        json.dumps(payload, indent=2, ensure_ascii=False, default=_json_default) + "\n", encoding="utf-8"
    )
    report_path = out / "report.md"
    report_path.write_text(render_report(result, metadata, stages), encoding="utf-8")
    return [result_path, report_path, *written]


def render_report(result: SuiteResult, metadata: Mapping[str, Any], stages: Mapping[str, Any]) -> str:
    lines = [f"# `{result.suite}` evaluation", ""]
    for table in result.tables:
        lines += [f"## {table.title}", "", table.markdown(), ""]
    for plot in result.plots:
        lines += [f"![{plot.title}]({plot.filename})", ""]
    if result.notes:
        lines += ["## Notes", ""] + [f"- {note}" for note in result.notes] + [""]
    if stages:
        lines += ["## Latency and tokens per stage", ""]
        stage_table = Table(
            "stages",
            ["stage", "count", "mean ms", "p50 ms", "p95 ms", "total ms", "tokens"],
            [
                [s, int(v["count"]), v["ms_mean"], v["ms_p50"], v["ms_p95"], v["ms_total"], int(v["tokens"])]
                for s, v in stages.items()
            ],
        )
        lines += [stage_table.markdown(), ""]
    lines += ["## Run metadata", ""]
    for key in (
        "config_hash",
        "git_commit",
        "corpus_snapshot",
        "seed",
        "limit",
        "subsets",
        "server_url",
        "started_at",
        "python",
        "platform",
        "cpu_count",
    ):
        if key in metadata:
            lines.append(f"- **{key}**: `{metadata[key]}`")
    if "models" in metadata:
        lines.append(
            f"- **models**: `{json.dumps(metadata['models'], sort_keys=True, default=_json_default)}`"
        )
    if "prompts" in metadata:
        lines.append(f"- **prompts**: {', '.join(f'`{v}`' for v in metadata['prompts'].values())}")
    if "config" in metadata:
        lines.append(
            f"- **config**: `{json.dumps(metadata['config'], sort_keys=True, default=_json_default)}`"
        )
    lines.append("")
    return "\n".join(lines)


def _draw(plot: Plot, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * max(len(plot.labels), 1) + 4), 4.5))
    try:
        names = list(plot.series)
        if plot.kind == "bar":
            width = 0.8 / max(len(names), 1)
            for i, name in enumerate(names):
                xs = [x + (i - (len(names) - 1) / 2) * width for x in range(len(plot.labels))]
                values = [v if v is not None else 0.0 for v in plot.series[name]]
                ax.bar(xs, values, width=width, label=name)
            ax.set_xticks(range(len(plot.labels)))
            ax.set_xticklabels(plot.labels, rotation=20, ha="right")
        elif plot.kind == "box":
            # One box per series (raw samples), labelled in series order (CCRS Fig. 5).
            ax.boxplot([plot.series[name] for name in names], showmeans=True)
            ax.set_xticks(range(1, len(names) + 1))
            ax.set_xticklabels(names, rotation=20, ha="right")
            names = []  # no legend: the ticks name the boxes
        elif plot.kind == "heatmap":
            # Rows = series (in order), columns = labels: a confusion matrix with its counts written in.
            grid = [plot.series[name] for name in names]
            ax.imshow(grid, cmap="Blues")
            ax.set_xticks(range(len(plot.labels)))
            ax.set_xticklabels(plot.labels, rotation=20, ha="right")
            ax.set_yticks(range(len(names)))
            ax.set_yticklabels(names)
            top = max((v for row in grid for v in row), default=0.0)
            for r, row in enumerate(grid):
                for c, value in enumerate(row):
                    colour = "white" if top and value > top / 2 else "black"  # readable on dark cells
                    ax.text(c, r, f"{value:g}", ha="center", va="center", fontsize="small", color=colour)
            names = []
        elif plot.kind == "line":
            for name in names:
                ax.plot(plot.labels, plot.series[name], marker="o", label=name)
        else:
            for name in names:
                ax.hist(plot.series[name], bins=20, alpha=0.6, label=name)
        ax.set_title(plot.title)
        ax.set_ylabel(plot.ylabel)
        ax.set_xlabel(plot.xlabel)
        if len(names) > 1:
            # Outside the axes: bars reaching 100 % would otherwise hide under it.
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        path = out / plot.filename
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path


# --- services -----------------------------------------------------------------------------------------


async def build_offline_services(opts: RunOptions) -> tuple[Pipeline, Answerer, LLMClient | None]:
    """The same components as ``/ask`` (Pipeline + Answerer), from the composition root
    (:class:`app.container.Container`) on ``Settings().offline()`` with ``opts.llm``.

    The caller owns the pipeline: ``async with pipeline:`` (or ``await pipeline.aclose()``) closes the
    E-utilities client and the LLM. The dense retriever and passage stage load here, as the server's
    lifespan does, so the first item is not the slow one.
    """
    from app import Container

    container = Container(eval_settings(opts))
    try:
        await container.warm()
    except BaseException:
        await container.aclose()
        raise
    return container.pipeline, container.answerer, container.llm


# --- small helpers shared by the suites and the CLI ---------------------------------------------------


def select_items(items: Sequence[T], limit: int | None, seed: int) -> list[T]:
    """All items, or ``limit`` of them drawn with ``random.Random(seed)``, kept in their original order."""
    import random

    if limit is None or limit >= len(items):
        return list(items)
    if limit < 0:
        raise EvalInputError("--limit must be >= 0")
    chosen = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in chosen]


def parse_param(text: str) -> tuple[str, Any]:
    """``k=v`` from the command line; ``v`` is read as JSON when it parses (numbers, lists), else a string.

    ``rho=[0,20,40]`` -> ``("rho", [0, 20, 40])``; ``B=1000`` -> ``("B", 1000)``; ``judge=gemma`` -> str.
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise EvalInputError(f"--param wants key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def default_out_dir(suite: str, opts: RunOptions) -> Path:
    """``var/eval/<suite>-<config hash>``: one folder per configuration, so a rerun resumes it."""
    settings = eval_settings(opts)
    return _REPO_ROOT / "var" / "eval" / f"{suite}-{config_hash(_hashable_options(suite, opts, settings))}"


def check_run_dir(opts: RunOptions, metadata: Mapping[str, Any]) -> None:
    """Refuse to resume into a folder whose items came from another configuration; record this one.

    ``out_dir/config.json`` holds the config hash of the run that wrote ``items.jsonl``.
    """
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    path = opts.out_dir / "config.json"
    if opts.resume and path.exists() and (opts.out_dir / ITEMS_FILE).exists():
        try:
            earlier = json.loads(path.read_text(encoding="utf-8")).get("config_hash")
        except (json.JSONDecodeError, AttributeError):
            earlier = None
        if earlier not in (None, metadata["config_hash"]):
            raise EvalInputError(
                f"{opts.out_dir} holds items of another configuration (config {earlier}, this run "
                f"{metadata['config_hash']}): pass --no-resume to start over, or another --out"
            )
    payload = {"config_hash": metadata["config_hash"], "config": metadata.get("config")}
    path.write_text(json.dumps(payload, indent=2, default=_json_default) + "\n", encoding="utf-8")


class EvalServerError(CometaError):
    """A running CoMeta server refused or failed an evaluation request."""


class AskRunner:
    """``POST /ask`` semantics for the suites: in-process through the endpoint's own
    :class:`~app.asker.Asker` (over a Pipeline + Answerer, no judge), or against ``opts.server_url``.

    ``body`` is an ``AskRequest`` JSON object (question, options, documents, ...); the reply is the
    ``AskResponse`` JSON. A server's API key comes from ``COMETA_EVAL_API_KEY`` (never from options,
    which are hashed into reports).
    """

    def __init__(
        self,
        opts: RunOptions,
        *,
        pipeline: Pipeline | None = None,
        answerer: Answerer | None = None,
        timeout_s: float = 300.0,
    ) -> None:
        self.opts = opts
        self.pipeline = pipeline
        self.answerer = answerer
        self.timeout_s = timeout_s
        self._owned = False
        self._http: Any = None
        self._asker: Asker | None = None

    async def __aenter__(self) -> AskRunner:
        if self.opts.server_url:
            import httpx

            headers = {}
            key = os.environ.get("COMETA_EVAL_API_KEY")
            if key:
                headers["X-API-Key"] = key
            self._http = httpx.AsyncClient(
                base_url=self.opts.server_url.rstrip("/"), timeout=self.timeout_s, headers=headers
            )
        elif self.pipeline is None:
            self.pipeline, self.answerer, _ = await build_offline_services(self.opts)
            self._owned = True
        elif self.answerer is None:
            from app import Answerer

            self.answerer = Answerer(self.pipeline.llm, self.pipeline.settings.answer)
        if self.pipeline is not None and self.answerer is not None:
            from app import Asker, PhiPolicy

            phi = PhiPolicy.from_settings(self.pipeline.settings.llm)
            self._asker = Asker(self.pipeline, self.answerer, None, phi=phi)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.aclose()
        if self._owned and self.pipeline is not None:
            await self.pipeline.aclose()

    @property
    def model_name(self) -> str | None:
        llm = self.pipeline.llm if self.pipeline is not None else None
        return llm.model_name if llm is not None else None

    async def ask(self, body: Mapping[str, Any]) -> dict[str, Any]:
        if self._http is not None:
            return await self._ask_server(body)
        return await self._ask_in_process(body)

    async def _ask_server(self, body: Mapping[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            resp = await self._http.post("/ask", json=dict(body))
        except httpx.HTTPError as exc:
            raise EvalServerError(f"{self.opts.server_url}: {type(exc).__name__}") from exc
        if resp.status_code != 200:
            try:
                detail = resp.json().get("error")
            except ValueError:
                detail = resp.text[:200]
            raise EvalServerError(f"{self.opts.server_url}/ask answered {resp.status_code}: {detail}")
        data: dict[str, Any] = resp.json()
        return data

    async def _ask_in_process(self, body: Mapping[str, Any]) -> dict[str, Any]:
        from pydantic import ValidationError

        from app import AskRequest
        from app.frontends import ask_response

        assert self._asker is not None, "use AskRunner in `async with`"
        try:
            req = AskRequest.model_validate(dict(body))
        except ValidationError as exc:
            raise EvalInputError(f"not a valid /ask request: {exc.errors()[0].get('msg')}") from exc
        response = ask_response(await self._asker.ask(req, "eval"))
        return response.model_dump(mode="json")


# --- Measured figures as data (pyserini style) ---------------------------------------------------------
# eval/expected/*.yaml hold what was measured, with the command that measured it; a file's ``check`` block
# names a deterministic re-run and the figures the shipped code must reproduce, which ``cometa eval expected
# --check`` runs and compares::
#
#     check:
#       runner: safety            # a runner the caller passes (the CLI: FIGURE_RUNNERS in eval/cli.py)
#       args: {split: dev}        # the runner's keyword arguments
#       metrics:                  # a dotted path into the runner's report: [expected, tolerance]
#         urgent.all.recall: [0.986, 0.0]
#
# Files without one (figures that need the offline world or minutes) are listed as not checked, with why.

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"


@dataclass(frozen=True, slots=True)
class FigureCheck:
    """One figure: where it is in the report, what the file expects, what the run gave."""

    file: str
    metric: str
    expected: float
    tolerance: float
    actual: float | None

    @property
    def ok(self) -> bool:
        return self.actual is not None and abs(self.actual - self.expected) <= self.tolerance


def figure_files(folder: Path = EXPECTED_DIR) -> list[Path]:
    """The figure files, sorted."""
    return sorted(folder.glob("*.yaml"))


def _figure_at(report: dict[str, Any], dotted: str) -> float | None:
    node: Any = report
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return float(node) if isinstance(node, int | float) else None


def check_figure_file(
    path: Path, runners: Mapping[str, Callable[..., dict[str, Any]]]
) -> list[FigureCheck] | str:
    """Re-run ``path``'s check block with its runner from ``runners`` (deterministic, offline, seconds) and
    compare; the reason it is not checked when it has none."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise EvalInputError(f"{path.name}: not YAML ({exc})") from exc
    block = data.get("check") if isinstance(data, dict) else None
    if block is None:
        return "no check block: its figures need the offline world or minutes to re-run"
    if not isinstance(block, dict) or block.get("runner") not in runners:
        raise EvalInputError(f"{path.name}: check.runner must be one of {', '.join(runners)}")
    metrics = block.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise EvalInputError(f"{path.name}: check.metrics must map a report path to [expected, tolerance]")
    report = runners[block["runner"]](**(block.get("args") or {}))
    out = []
    for metric, pair in metrics.items():
        if not (isinstance(pair, list) and len(pair) == 2):
            raise EvalInputError(f"{path.name}: check.metrics.{metric} must be [expected, tolerance]")
        out.append(
            FigureCheck(
                path.name, str(metric), float(pair[0]), float(pair[1]), _figure_at(report, str(metric))
            )
        )
    return out

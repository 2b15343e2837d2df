"""Shared helpers of the service benchmarks (ask_latency, throughput, soak): statistics, markdown tables,
the machine description, our own server processes on loopback, and an instrumented API launcher.

``python bench/_common.py serve-api --port N`` runs the offline ``/ask`` service (uvicorn on
``create_app(Settings().offline())``) with timing hooks around the E-utilities client and the passage
sub-stages (segment, passage scoring, rerank); each response then carries an ``X-Bench-Timings`` header
with that request's sub-stage times. The hooks only observe: they call the real methods unchanged.
"""

from __future__ import annotations

import contextvars
import json
import math
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run as a plain script: make the project importable without installing

__all__ = [
    "REPO",
    "TIMINGS_HEADER",
    "ServerProcess",
    "bound_questions_per_min",
    "fmt_ms",
    "free_port",
    "interval_union",
    "load_average",
    "load_questions",
    "machine_line",
    "markdown_table",
    "percentile",
    "rss_bytes",
    "start_server",
    "stop_process",
    "summarise_spans",
]

TIMINGS_HEADER = "x-bench-timings"


# --- statistics and tables ------------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default method); NaN for no values."""
    if not values:
        return math.nan
    xs = sorted(values)
    if len(xs) == 1:
        return float(xs[0])
    rank = (len(xs) - 1) * p / 100
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (rank - lo))


def interval_union(intervals: Sequence[tuple[float, float]]) -> float:
    """Length covered by possibly overlapping ``(start, end)`` intervals (concurrent calls count once)."""
    total = 0.0
    cur_start: float | None = None
    cur_end = 0.0
    for start, end in sorted(intervals):
        if cur_start is None or start > cur_end:
            if cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_start is not None:
        total += cur_end - cur_start
    return total


def bound_questions_per_min(rate_per_s: float, calls_per_question: float) -> float:
    """The rate-limit ceiling: no client can finish more questions per minute than rate × 60 ÷ calls."""
    if calls_per_question <= 0:
        return math.inf
    return rate_per_s * 60 / calls_per_question


def fmt_ms(value: float) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table (pipes in cells escaped)."""

    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# --- the machine ----------------------------------------------------------------------------------------


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def machine_line() -> str:
    """Cores, RAM, CPU model, GPU (none unless nvidia-smi answers) and the load average, for the record."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
                break
    except OSError:
        pass
    gpu = "no GPU"
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if out.returncode == 0 and out.stdout.strip():
            gpu = out.stdout.strip().replace("\n", ", ")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}), {ram} RAM, {gpu}, Python {platform.python_version()}; "
        f"load average (1/5/15 min) {load_average()}"
    )


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# --- questions ------------------------------------------------------------------------------------------

FIXTURES = REPO / "eval" / "fixtures"


def load_questions(limit: int | None = None) -> list[str]:
    """The fixture narratives: the hand-written ones first, then the PubMedQA-derived patient narratives."""
    out: list[str] = []
    for name in ("handwritten_narratives.jsonl", "pubmedqa_cancer_narratives.jsonl"):
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line)["narrative"])
    return out[:limit] if limit else out


# --- server processes -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ServerProcess:
    proc: subprocess.Popen[bytes]
    base_url: str
    log: IO[bytes] = field(repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_tail(self, chars: int = 4000) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-chars:]


@contextmanager
def stop_process(proc: subprocess.Popen[Any]) -> None:
    """Terminate a server we started, killing it when it does not stop within 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def start_server(
    args: Sequence[str],
    *,
    port: int,
    ready_path: str,
    env: Mapping[str, str] | None = None,
    deadline_s: float = 300,
) -> Iterator[ServerProcess]:
    """Run ``python ARGS`` (loopback) until ``ready_path`` answers 200; stop it on exit.

    Output goes to a temporary file, not a pipe: nobody reads a pipe during the run, and a chatty server
    would block once the pipe buffer filled.
    """
    import httpx

    log = tempfile.TemporaryFile()
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT
    )
    server = ServerProcess(proc, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                if httpx.get(server.base_url + ready_path, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server {args} did not start:\n{server.log_tail()}")
            time.sleep(0.25)
        yield server
    finally:
        stop_process(proc)
        log.close()


# --- the instrumented API launcher ----------------------------------------------------------------------

_SPANS: contextvars.ContextVar[list[tuple[str, float, float]] | None] = contextvars.ContextVar(
    "bench_spans", default=None
)


def _record(name: str, start: float) -> None:
    spans = _SPANS.get()
    if spans is not None:  # asyncio.to_thread copies the context: the list object is shared
        spans.append((name, start, time.perf_counter()))


def summarise_spans(spans: Sequence[tuple[str, float, float]]) -> dict[str, float]:
    """Per-span-name total ms, plus ``eutils_wall`` = the union of all E-utilities call intervals."""
    out: dict[str, float] = {}
    for name, start, end in spans:
        out[name] = out.get(name, 0.0) + (end - start) * 1000
    eutils = [(s, e) for n, s, e in spans if n.startswith("eutils:")]
    out["eutils_wall"] = interval_union(eutils) * 1000
    out["eutils_calls"] = float(len(eutils))
    return out


def _instrument() -> None:
    """Wrap (not replace) the E-utilities call and the passage sub-stages with span recorders."""
    from retrieval.eutils import EutilsClient
    from retrieval.passages import PassageRetriever

    call = EutilsClient._call

    async def timed_call(self: Any, endpoint: str, params: Any, *args: Any, **kwargs: Any) -> Any:
        db = dict(params).get("db", "")
        name = f"eutils:{endpoint}" + (":pmc" if endpoint == "efetch" and db == "pmc" else "")
        start = time.perf_counter()
        try:
            return await call(self, endpoint, params, *args, **kwargs)
        finally:
            _record(name, start)

    EutilsClient._call = timed_call  # type: ignore[method-assign]

    items, dense = PassageRetriever._items, PassageRetriever._dense

    def timed_items(self: Any, docs: Any) -> Any:
        start = time.perf_counter()
        try:
            return items(self, docs)
        finally:
            _record("segment", start)

    def timed_dense(self: Any, query: Any, its: Any) -> Any:
        start = time.perf_counter()
        try:
            return dense(self, query, its)
        finally:
            _record("passage_scoring", start)

    PassageRetriever._items = timed_items  # type: ignore[method-assign]
    PassageRetriever._dense = timed_dense  # type: ignore[method-assign]

    init = PassageRetriever.__init__

    class TimedReranker:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

        def rerank(self, query: str, texts: Sequence[str]) -> Any:
            start = time.perf_counter()
            try:
                return self._inner.rerank(query, texts)
            finally:
                _record("rerank", start)

    def timed_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.reranker = TimedReranker(self.reranker)

    PassageRetriever.__init__ = timed_init  # type: ignore[method-assign]


def _with_timing_header(app: Any) -> Any:
    """ASGI wrapper: one span list per request; its summary goes out as the ``X-Bench-Timings`` header."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        spans: list[tuple[str, float, float]] = []
        token = _SPANS.set(spans)

        async def send_with_header(message: Any) -> None:
            if message["type"] == "http.response.start":
                summary = json.dumps({k: round(v, 2) for k, v in summarise_spans(spans).items()})
                message["headers"] = [
                    *message.get("headers", []),
                    (TIMINGS_HEADER.encode(), summary.encode()),
                ]
            await send(message)

        try:
            await app(scope, receive, send_with_header)
        finally:
            _SPANS.reset(token)

    return wrapped


def serve_api(port: int) -> None:
    import logging

    import uvicorn

    from app import Settings, create_app

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _instrument()
    settings = Settings().offline()
    logging.basicConfig(level=settings.log_level, format="%(message)s")
    app = _with_timing_header(create_app(settings))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def main(argv: Sequence[str]) -> None:
    if len(argv) == 3 and argv[0] == "serve-api" and argv[1] == "--port" and re.fullmatch(r"\d+", argv[2]):
        serve_api(int(argv[2]))
        return
    raise SystemExit("usage: python bench/_common.py serve-api --port N")


if __name__ == "__main__":
    main(sys.argv[1:])

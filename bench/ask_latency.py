"""``/ask`` latency per stage, cold and warm, at 1, 10 and 50 concurrent clients on the offline default.

    .venv/bin/python bench/ask_latency.py [--concurrency 1,10,50] [--questions 10] [--corpus-dir WORLD]
                                          [--no-eutils-cache] [--no-warm]

For each concurrency level a fresh offline service starts on loopback (uvicorn on
``create_app(Settings().offline())``, through ``bench/_common.py serve-api``: the bundled corpus, or
``--corpus-dir``'s world, behind the in-process local E-utilities server, MiniLM, bi-encoder rerank, no LLM,
so answers are extractive). Two warm-up questions load the models (not measured). Then **cold**: that many
concurrent HTTP clients send ``max(--questions, concurrency)`` fixture narratives (``eval/fixtures``) this
service has never seen (no level repeats another's), so every cache starts empty of them; then **warm**: the
same questions again on the same service (the passage, query-vector and E-utilities caches now hold them).

Per-stage times come from the response's ``timings_ms`` (understand, esearch = Adapt-E, dense, fuse,
tier_check, metadata = EFetch + ELink + PMC JATS, passages, answer) and from the launcher's
``X-Bench-Timings`` header (each E-utility's time, segment, passage scoring, rerank). Service overhead =
end-to-end (client-side) − E-utilities wall time − LLM time (none offline): our own code, the HTTP layer and
queueing included. Requests refused by the admission bound (503 + ``Retry-After``) are counted apart, with
how fast they were refused.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _common import (
    TIMINGS_HEADER,
    fmt_ms,
    free_port,
    load_average,
    load_questions,
    machine_line,
    markdown_table,
    percentile,
    start_server,
)

STAGES = ("understand", "esearch", "dense", "fuse", "tier_check", "metadata", "passages", "answer", "judge")
SUBSTAGES = (
    ("eutils:esearch", "ESearch calls"),
    ("eutils:efetch", "EFetch PubMed"),
    ("eutils:elink", "ELink pubmed_pmc"),
    ("eutils:efetch:pmc", "EFetch PMC JATS"),
    ("segment", "segment (SEOS)"),
    ("passage_scoring", "passage dense scoring"),
    ("rerank", "rerank"),
)


async def one_level(
    base: str, questions: list[str], concurrency: int, n: int, timeout_s: float
) -> dict[str, Any]:
    queue: asyncio.Queue[str] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(questions[i % len(questions)])
    results: list[dict[str, Any]] = []
    failures: dict[str, int] = defaultdict(int)
    refused: list[float] = []  # ms until a 503 refusal came back

    async def client(http: httpx.AsyncClient) -> None:
        while True:
            try:
                q = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            t = time.perf_counter()
            try:
                r = await http.post("/ask", json={"question": q})
            except httpx.HTTPError as exc:
                failures[type(exc).__name__] += 1
                continue
            e2e = (time.perf_counter() - t) * 1000
            if r.status_code == 503 and "retry-after" in r.headers:
                refused.append(e2e)
                continue
            if r.status_code != 200:
                failures[f"HTTP {r.status_code}"] += 1
                continue
            body = r.json()
            results.append(
                {
                    "e2e": e2e,
                    "stages": body["timings_ms"],
                    "sub": json.loads(r.headers.get(TIMINGS_HEADER, "{}")),
                    "mode": body["mode"],
                }
            )

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=base, timeout=timeout_s, limits=limits) as http:
        await asyncio.gather(*(client(http) for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return {
        "results": results,
        "failures": dict(failures),
        "refused": refused,
        "wall": wall,
        "load": load_average(),
        "clients": concurrency,
    }


def report(levels: dict[str, dict[str, Any]]) -> None:
    header = ["stage"] + [f"{label} {p}" for label in levels for p in ("p50", "p95")]
    rows: list[list[str]] = []

    def row(label: str, get: Any) -> None:
        cells = [label]
        present = False
        for level in levels.values():
            vals = [v for v in (get(r) for r in level["results"]) if v is not None]
            present |= bool(vals)
            cells += [fmt_ms(percentile(vals, 50)), fmt_ms(percentile(vals, 95))]
        if present:
            rows.append(cells)

    for stage in STAGES:
        row(stage, lambda r, s=stage: r["stages"].get(s))
    for key, label in SUBSTAGES:
        row(f"  {label}", lambda r, k=key: r["sub"].get(k))
    row("E-utilities wall time (union)", lambda r: r["sub"].get("eutils_wall"))
    row("E-utilities calls (count)", lambda r: r["sub"].get("eutils_calls"))
    row("**end-to-end (client)**", lambda r: r["e2e"])
    row(
        "**service overhead** (e2e − E-utilities − LLM)",
        lambda r: r["e2e"] - r["sub"].get("eutils_wall", 0.0) - _llm_ms(r),
    )
    print("\nPer-stage latency, ms (stage times from `timings_ms`; indented rows are sub-stages)\n")
    print(markdown_table(header, rows))

    summary = []
    for label, level in levels.items():
        ok = len(level["results"])
        refused = level["refused"]
        modes: dict[str, int] = defaultdict(int)
        for r in level["results"]:
            modes[r["mode"]] += 1
        summary.append(
            [
                label,
                ok + len(refused) + sum(level["failures"].values()),
                ok,
                len(refused),
                fmt_ms(percentile(refused, 95)) if refused else "-",
                ", ".join(f"{k} {v}" for k, v in level["failures"].items()) or "0",
                f"{level['wall']:.1f}",
                f"{60 * ok / level['wall']:.1f}",
                ", ".join(f"{k} {v}" for k, v in modes.items()),
                level["load"],
            ]
        )
    print("\nThroughput per concurrency level\n")
    header = ["level", "sent", "200", "503 refused", "refusal p95 ms", "failed", "wall s", "questions/min"]
    print(markdown_table([*header, "answer modes", "load after"], summary))


def _llm_ms(r: dict[str, Any]) -> float:
    # LLM time lives in the answer (and judge) stages only when an LLM answered; offline there is none.
    if r["mode"] != "llm":
        return 0.0
    return float(r["stages"].get("answer", 0.0)) + float(r["stages"].get("judge", 0.0))


async def run(args: argparse.Namespace) -> None:
    questions = load_questions()
    levels = [int(c) for c in args.concurrency.split(",")]
    env = {
        "COMETA_API__RATE_LIMIT_PER_MINUTE": "0",
        "COMETA_LOG_LEVEL": "WARNING",
        # The flat cache spellings: read by every version of the client settings.
        "COMETA_EUTILS__CACHE__TTL_S": "3600",
        "COMETA_EUTILS__CACHE__MAX_ENTRIES": "4096" if args.eutils_cache else "0",
    }
    if args.corpus_dir:
        env["COMETA_LOCAL_SERVER__CORPUS_DIR"] = args.corpus_dir
    print(f"machine: {machine_line()}")
    cache = "on" if args.eutils_cache else "off"
    corpus = args.corpus_dir or "bundled corpus"
    print(f"{len(questions)} fixture narratives; levels {levels}; {corpus}; E-utilities cache {cache}")
    warmup = questions[-args.warmup :] if args.warmup else []
    out: dict[str, dict[str, Any]] = {}
    offset = 0
    for c in levels:
        n = max(args.questions, c)
        fresh = [questions[(offset + i) % (len(questions) - len(warmup))] for i in range(n)]
        offset += n
        port = free_port()
        serve = ["bench/_common.py", "serve-api", "--port", str(port)]
        with start_server(serve, port=port, ready_path="/readyz", env=env) as server:
            # Warm-up outside the measurement: model loading, first-call allocations, thread pools.
            if warmup:
                await one_level(server.base_url, warmup, 1, len(warmup), args.timeout)
            print(f"  {c} client(s), {n} new questions, cold ...", flush=True)
            out[f"c={c} cold"] = await one_level(server.base_url, fresh, c, n, args.timeout)
            if args.warm:
                print(f"  {c} client(s), the same {n} questions, warm ...", flush=True)
                out[f"c={c} warm"] = await one_level(server.base_url, fresh, c, n, args.timeout)
    report(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", default="1,10,50", help="comma-separated client counts")
    ap.add_argument("--questions", type=int, default=10, help="requests per level (at least one per client)")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured questions first (model loading)")
    ap.add_argument(
        "--eutils-cache",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the E-utilities client cache, on as in production (off: warm still repeats every call)",
    )
    ap.add_argument("--warm", action=argparse.BooleanOptionalAction, default=True, help="the warm pass")
    ap.add_argument("--corpus-dir", default=None, help="a world built by cometa corpus build")
    ap.add_argument("--timeout", type=float, default=1800, help="client timeout per request, s")
    args = ap.parse_args()
    if args.corpus_dir:
        args.corpus_dir = str(Path(args.corpus_dir).resolve())
    asyncio.run(run(args))


if __name__ == "__main__":
    main()

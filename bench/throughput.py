"""Rate-limit-bound throughput: our pipeline vs a sequential Bio.Entrez-style baseline. Prints markdown.

    .venv/bin/python bench/throughput.py [--questions 20] [--concurrency N] [--rates 3,10] [--passages]
                                         [--timeline]

The local E-utilities server runs as its own process on loopback, configured like NCBI: HTTP 429 above
3 req/s (10 with an ``api_key``; the 10 req/s rows send one) and 150-400 ms injected latency per request.

* **CoMeta**: ``Pipeline.search`` (Understand with the deterministic rewriter, Adapt-E ladder, dense arm,
  fusion, one EFetch batch, ELink + PMC JATS for reviews; passages only with ``--passages``: they call no
  E-utility) for the fixture narratives, ``--concurrency`` at a time (default: what the API's admission
  gate admits at that rate, ``app.api.admission_slots``: 4 at 3 req/s, 6 at 10), over the HTTP client with its
  process-wide limiter (NCBI's rate × 0.95). Cold = a fresh client cache; warm = the same questions again.
* **Baseline**: what most scripts do: ``Bio.Entrez`` itself (its own 0.37 s / 0.1 s pacing by ``sleep``,
  its 3 tries with a 15 s sleep on 429/5xx, no cache), one question after the other: ESearch for the
  question's first Boolean query (the same deterministic rewrite our tier 1 uses, so the baseline is not
  fed raw narratives), then EFetch of the top 10 PMIDs, both parsed with ``Entrez.read``. Bio.Entrez's
  ``urlopen`` is redirected to the local server (the URL's host and path prefix are rewritten).

The bound is rate × 60 ÷ (E-utility calls that succeeded per question): no client can do better at
that rate with that many calls. The baseline makes fewer calls per question because it does less (one
query, no fallback tiers, no full texts), so compare calls/question alongside questions/min.

``--timeline`` records every E-utilities call of the cold runs (``_timeline``: limiter waits, HTTP exchanges,
429s, retry sleeps, the questions' CPU stages) and prints where the wall time above the bound went.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    bound_questions_per_min,
    free_port,
    load_average,
    load_questions,
    machine_line,
    markdown_table,
    start_server,
)
from _timeline import Timeline

try:
    import Bio.Entrez  # noqa: F401  (the baseline's client; the `bench` extra)

    HAVE_BIO = True
except ImportError:
    HAVE_BIO = False

NCBI_PREFIX = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
BENCH_KEY = "BENCHKEY0123456789"


@dataclass
class Run:
    label: str
    rate: float
    questions: int
    wall_s: float
    calls: int  # HTTP exchanges answered (429s included)
    rate_limited: int
    other_retries: int
    cache_hits: int
    cache_misses: int
    failed: int
    load: str

    @property
    def ok_calls(self) -> int:
        return self.calls - self.rate_limited - self.other_retries

    def row(self) -> list[str]:
        per_q = self.ok_calls / self.questions if self.questions else 0.0
        qpm = 60 * (self.questions - self.failed) / self.wall_s if self.wall_s else 0.0
        bound = bound_questions_per_min(self.rate, per_q)
        lookups = self.cache_hits + self.cache_misses
        hit_rate = f"{100 * self.cache_hits / lookups:.0f} %" if lookups else "- (no cache)"
        return [
            f"{self.rate:g}",
            self.label,
            str(self.questions),
            str(self.failed),
            f"{self.wall_s:.1f}",
            f"{qpm:.1f}",
            f"{per_q:.2f}",
            "∞ (no calls)" if bound == float("inf") else f"{bound:.1f}",
            f"{100 * qpm / bound:.0f} %" if bound not in (0.0, float("inf")) else "-",
            str(self.rate_limited),
            hit_rate,
            self.load,
        ]


HEADER = [
    "req/s",
    "client",
    "questions",
    "failed",
    "wall s",
    "questions/min",
    "E-utility calls/question",
    "bound q/min",
    "of bound",
    "429s",
    "cache hit rate",
    "load",
]


# --- CoMeta -------------------------------------------------------------------------------------------


async def cometa_runs(
    base_url: str,
    rate: float,
    questions: list[str],
    concurrency: int | None,
    passages: bool,
    timeline: Timeline | None = None,
) -> list[Run]:
    import httpx
    from pydantic import SecretStr

    from app import Settings, build_dense_retriever, build_pipeline
    from app.api import admission_slots
    from retrieval.eutils import EutilsClient, open_limiter

    offline = Settings().offline()
    dense = await asyncio.to_thread(build_dense_retriever, offline)  # the bundled index, loaded once
    eutils = offline.eutils.model_copy(
        update={
            "backend": "http",
            "base_url": base_url,
            "api_key": SecretStr(BENCH_KEY) if rate > 3 else None,
            "requests_per_second": None,  # NCBI's own 3 or 10 (x rate_safety)
        }
    )
    settings = offline.model_copy(update={"eutils": eutils})
    runs: list[Run] = []
    client = None
    if timeline is not None:  # the same client the pipeline would build, with observers around its parts
        client = EutilsClient(
            eutils,
            transport=timeline.transport(httpx.AsyncHTTPTransport()),
            limiter=timeline.limiter(open_limiter(eutils)),
            sleep=timeline.sleep(asyncio.sleep),
        )
    async with build_pipeline(
        settings, client=client, dense=dense, use_llm=False, use_passages=passages
    ) as pipe:
        if timeline is not None:
            timeline.wrap_async(pipe.understander, "understand", "understand")
            timeline.wrap_async(dense, "asearch", "dense")
            timeline.wrap_sync(pipe.adapte, "rank_locally", "tier_check")
            retriever = await pipe.passage_retriever()
            if retriever is not None:
                timeline.wrap_async(retriever, "retrieve", "passages")
        for label in ("CoMeta, cold cache", "CoMeta, warm cache"):
            stats = pipe.client.stats
            before = (
                stats.total_requests,
                stats.retries.get("rate_limited", 0),
                sum(stats.retries.values()),
                stats.cache_hits,
                stats.cache_misses,
            )
            failed = 0
            slots = concurrency or admission_slots(settings)  # the API admits this many questions at once
            sem = asyncio.Semaphore(slots)
            if timeline is not None:
                timeline.slots = slots

            record = timeline is not None and label.endswith("cold cache")

            async def one(n: int, q: str, sem: asyncio.Semaphore = sem, record: bool = record) -> None:
                nonlocal failed
                async with sem:
                    try:
                        if record and timeline is not None:
                            with timeline.question(n):
                                await pipe.search(q)
                        else:
                            await pipe.search(q)
                    except Exception as exc:  # counted and shown: a failed question is a result too
                        failed += 1
                        print(f"    question failed: {type(exc).__name__}", flush=True)

            t = time.perf_counter()
            await asyncio.gather(*(one(n, q) for n, q in enumerate(questions)))
            wall = time.perf_counter() - t
            rl = stats.retries.get("rate_limited", 0) - before[1]
            runs.append(
                Run(
                    label=f"{label} ({slots} in flight)",
                    rate=rate,
                    questions=len(questions),
                    wall_s=wall,
                    calls=stats.total_requests - before[0],
                    rate_limited=rl,
                    other_retries=sum(stats.retries.values()) - before[2] - rl,
                    cache_hits=stats.cache_hits - before[3],
                    cache_misses=stats.cache_misses - before[4],
                    failed=failed,
                    load=load_average(),
                )
            )
            print(f"  {rate:g} req/s {label}: {wall:.1f} s", flush=True)
    return runs


# --- the Bio.Entrez baseline --------------------------------------------------------------------------


def baseline_run(base_url: str, rate: float, queries: list[str]) -> Run:
    from urllib.error import HTTPError

    from Bio import Entrez

    counts = {"calls": 0, "429": 0, "other": 0}
    real_urlopen = urllib.request.urlopen

    def local_urlopen(request: urllib.request.Request) -> Any:
        # Same request, sent to the local server instead of NCBI; a timeout as on any network call.
        request.full_url = request.full_url.replace(NCBI_PREFIX, base_url)
        counts["calls"] += 1
        try:
            return real_urlopen(request, timeout=30)
        except HTTPError as exc:
            counts["429" if exc.code == 429 else "other"] += 1
            raise

    Entrez.urlopen = local_urlopen  # Bio.Entrez calls the urlopen it imported into its own namespace
    Entrez.email = "bench@example.org"
    Entrez.tool = "cometa-bench-baseline"
    Entrez.api_key = BENCH_KEY if rate > 3 else None
    failed = 0
    t = time.perf_counter()
    for q in queries:
        try:
            handle = Entrez.esearch(db="pubmed", term=q, retmax=10)
            ids = Entrez.read(handle)["IdList"]
            handle.close()
            if ids:
                handle = Entrez.efetch(db="pubmed", id=",".join(ids), retmode="xml")
                Entrez.read(handle)
                handle.close()
        except Exception as exc:  # what a script would see; counted, the run goes on
            failed += 1
            print(f"    baseline question failed: {type(exc).__name__}: {exc}", flush=True)
    wall = time.perf_counter() - t
    print(f"  {rate:g} req/s Bio.Entrez baseline: {wall:.1f} s", flush=True)
    return Run(
        label="Bio.Entrez sequential (baseline)",
        rate=rate,
        questions=len(queries),
        wall_s=wall,
        calls=counts["calls"],
        rate_limited=counts["429"],
        other_retries=counts["other"],
        cache_hits=0,
        cache_misses=0,
        failed=failed,
        load=load_average(),
    )


async def first_queries(questions: list[str]) -> list[str]:
    from retrieval.understand import QueryUnderstander

    understander = QueryUnderstander(llm=None)
    return [(await understander.understand(q)).plan.ladder[0] for q in questions]


async def run(args: argparse.Namespace) -> None:
    questions = load_questions(args.questions)
    queries = await first_queries(questions)
    rates = [float(r) for r in args.rates.split(",")]
    port = free_port()
    env = {
        "COMETA_LOCAL_SERVER__FAULTS__LATENCY_MS_MIN": "150",
        "COMETA_LOCAL_SERVER__FAULTS__LATENCY_MS_MAX": "400",
        "COMETA_LOCAL_SERVER__FAULTS__SEED": "7",
    }
    print(f"machine: {machine_line()}")
    print(
        f"{len(questions)} fixture narratives; CoMeta concurrency "
        f"{args.concurrency or 'the admission gate’s at each rate'}; "
        f"passages {'on' if args.passages else 'off'}; server latency 150-400 ms, 429 above the rate"
    )
    runs: list[Run] = []
    timelines: list[tuple[float, Timeline]] = []
    for rate in rates:
        # One server per rate: NCBI's 3 req/s is per IP without a key, 10 with one.
        server_env = {
            **env,
            "COMETA_LOCAL_SERVER__RATE_NO_KEY": str(rate),
            "COMETA_LOCAL_SERVER__RATE_WITH_KEY": str(rate),
        }
        args_ = ["-m", "app.cli", "eutils", "serve", "--rate-limit", "--port", str(port)]
        with start_server(args_, port=port, ready_path="/entrez/eutils/einfo.fcgi", env=server_env) as server:
            base_url = f"{server.base_url}/entrez/eutils/"
            await asyncio.sleep(1.5)  # let the readiness probe's requests leave the 1 s window
            timeline = Timeline() if args.timeline else None
            runs += await cometa_runs(base_url, rate, questions, args.concurrency, args.passages, timeline)
            if timeline is not None:
                timelines.append((rate, timeline))
            await asyncio.sleep(1.5)
            if args.no_baseline:
                pass
            elif HAVE_BIO:
                runs.append(await asyncio.to_thread(baseline_run, base_url, rate, queries))
            else:
                print("  Bio.Entrez baseline skipped: pip install -e '.[bench]' (biopython)", flush=True)
    print("\nThroughput under NCBI-like rate limits (429 above the rate, 150-400 ms latency)\n")
    print(markdown_table(HEADER, [r.row() for r in runs]))
    if timelines:
        print_timelines(timelines)


def print_timelines(timelines: list[tuple[float, Timeline]]) -> None:
    """Where the cold runs' wall time above the bound went (``--timeline``)."""
    analysed = [(rate, t.slots, t.analyse(rate)) for rate, t in timelines]
    found = [(rate, a) for rate, _, a in analysed if a]
    if not found:
        return
    print("\nTimeline of the cold runs: wall time against the bound (calls answered 200 / rate)\n")
    header = ["", *(f"{rate:g} req/s" for rate, _ in found)]
    rows: list[list[str]] = [
        ["questions in flight (at most)", *(str(slots) for _, slots, a in analysed if a)],
        ["wall s", *(f"{a['wall_s']:.2f}" for _, a in found)],
        ["bound s (200s / rate)", *(f"{a['bound_s']:.2f}" for _, a in found)],
        ["head s (first question in → first call out)", *(f"{a['head_s']:.2f}" for _, a in found)],
        ["tail s (last call out → last answer)", *(f"{a['tail_s']:.2f}" for _, a in found)],
        ["calls sent / answered 200", *(f"{a['sends']} / {a['ok']}" for _, a in found)],
        ["statuses", *(", ".join(f"{k} x{v}" for k, v in sorted(a["statuses"].items())) for _, a in found)],
        ["most sends in any 1 s (client side)", *(str(a["busiest_1s_sends"]) for _, a in found)],
        ["mean call latency ms", *(f"{a['call_latency_ms_mean']:.0f}" for _, a in found)],
        ["retry backoff s (all calls)", *(f"{a['retry_sleep_s']:.2f}" for _, a in found)],
        ["send gaps beyond 1/rate, s (sum)", *(f"{a['idle_s']:.2f}" for _, a in found)],
        ["wall with a call waiting for a limiter slot s", *(f"{a['limiter_bound_s']:.2f}" for _, a in found)],
        ["wall with no call waiting s", *(f"{sum(a['no_wait'].values()):.2f}" for _, a in found)],
    ]
    causes = sorted(
        {k for _, a in found for k in a["no_wait"]},
        key=lambda k: -max(a["no_wait"].get(k, 0.0) for _, a in found),
    )
    for cause in causes:
        rows.append(
            [
                f"  of which question slots: {cause}",
                *(f"{a['no_wait'].get(cause, 0.0):.2f}" for _, a in found),
            ]
        )
    print(markdown_table(header, rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="CoMeta questions in flight (default: the API admission gate's bound at each rate)",
    )
    ap.add_argument("--rates", default="3,10", help="server rate limits to run, req/s")
    ap.add_argument("--passages", action="store_true", help="also run SEOS + rerank (CPU, no E-utilities)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the Bio.Entrez baseline rows")
    ap.add_argument(
        "--timeline",
        action="store_true",
        help="record the cold runs' E-utilities calls; print where time went",
    )
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()

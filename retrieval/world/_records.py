"""PubMed records built from the shared data sets, each with the list of fields it had to synthesise.

The builders return ``(record, extras, synthesized)``: the record and the XML extras go to
:func:`retrieval.ncbi.pubmed_article_xml` (the one writer), ``synthesized`` maps a field to what was put
there instead of real data, for the provenance sidecar. Placeholder publication types carry
``inferred=True`` so the search index and the evidence policy never take them for NCBI's indexing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval.ncbi import (
    AbstractSection,
    JatsFront,
    MeshHeading,
    PubDate,
    PublicationType,
    PubmedRecord,
    PubmedXmlExtras,
    nlm_category,
)

__all__ = [
    "JOURNAL_ARTICLE",
    "PLACEHOLDER_JOURNAL_ARTICLE",
    "RANDOMIZED_CONTROLLED_TRIAL",
    "RETRACTED_PUBLICATION",
    "Built",
    "c04_uis",
    "cohen_record",
    "hoc_record",
    "jats_pubmed_record",
    "mark_retracted",
    "pubmedqa_record",
    "world_pubmedqa_record",
    "world_trial_record",
]

JOURNAL_ARTICLE = PublicationType("Journal Article", "D016428")
PLACEHOLDER_JOURNAL_ARTICLE = PublicationType("Journal Article", "D016428", inferred=True)
RANDOMIZED_CONTROLLED_TRIAL = PublicationType("Randomized Controlled Trial", "D016449", inferred=True)
RETRACTED_PUBLICATION = PublicationType("Retracted Publication", "D016441")

_PUBLICATION_TYPES = {
    "research-article": JOURNAL_ARTICLE,
    "correction": PublicationType("Published Erratum", "D016425"),
    "review-article": PublicationType("Review", "D016454"),
}

# What the writer puts where a record has nothing (retrieval.ncbi.pubmed_article_xml's defaults).
_NO_JOURNAL = "placeholder MedlineTA 'Unknown' (journal unknown), marked inferred"
_MARKED = PubmedXmlExtras(mark_placeholders=True)
_NO_LANGUAGE = "'und' (language unknown)"
_NO_PAGES = "empty MedlinePgn (pages unknown; the DTD requires Pagination or ELocationID)"
_NO_YEAR = "PubDate/MedlineDate 'Unknown' (year unknown)"
_PLACEHOLDER_PT = "placeholder 'Journal Article' (D016428), marked inferred"

Built = tuple[PubmedRecord, PubmedXmlExtras | None, dict[str, Any]]


def c04_uis(mesh_json: bytes) -> dict[str, str]:
    """Descriptor name (2025 and 2019) -> UI, for the C04 descriptors of ``mesh_c04_neoplasms.json``."""
    descriptors = json.loads(mesh_json)["descriptors"]
    uis: dict[str, str] = {}
    for d in descriptors:
        uis.setdefault(d["name"], d["ui"])
    for d in descriptors:
        if d.get("name_2019"):
            uis.setdefault(d["name_2019"], d["ui"])
    return uis


def pubmedqa_record(pmid: str, item: Mapping[str, Any], uis: Mapping[str, str]) -> PubmedRecord:
    """A PubMedQA PQA-L item as a record (the bundled corpus' placeholders: scripts/build_corpus.py)."""
    sections = [
        AbstractSection(text=text, label=label, nlm_category=nlm_category(label))
        for text, label in zip(item["CONTEXTS"], item["LABELS"], strict=True)
    ]
    sections.append(
        AbstractSection(text=item["LONG_ANSWER"], label="CONCLUSIONS", nlm_category="CONCLUSIONS")
    )
    year = item.get("YEAR")
    return PubmedRecord(
        pmid=pmid,
        title=item["QUESTION"],
        abstract=tuple(sections),
        pub_date=PubDate(year=int(year)) if year else PubDate(),
        publication_types=(JOURNAL_ARTICLE,),
        mesh=tuple(MeshHeading(descriptor=name, ui=uis.get(name)) for name in item["MESHES"]),
        languages=("eng",),
        status="MEDLINE",
    )


def _missing_uis(mesh: Sequence[MeshHeading]) -> dict[str, Any]:
    missing = [h.descriptor for h in mesh if not h.ui]
    return {"DescriptorName/@UI": {"value": "", "names": missing}} if missing else {}


def world_pubmedqa_record(pmid: str, item: Mapping[str, Any], uis: Mapping[str, str]) -> Built:
    record = pubmedqa_record(pmid, item, uis)
    record = dataclasses.replace(record, publication_types=(PLACEHOLDER_JOURNAL_ARTICLE,))
    syn: dict[str, Any] = {
        "ArticleTitle": "the PubMedQA QUESTION (derived from the real title; not the title)",
        "AbstractText[CONCLUSIONS]": "the PubMedQA LONG_ANSWER",
        "Journal": _NO_JOURNAL,
        "Pagination": _NO_PAGES,
        "Language": "placeholder 'eng'",
        "PublicationType": _PLACEHOLDER_PT,
        "MedlineCitation/@Status": "placeholder 'MEDLINE'",
    }
    if record.year is None:
        syn["PubDate"] = _NO_YEAR
    syn.update(_missing_uis(record.mesh))
    return record, _MARKED, syn


def _authors(names: str, *, comma: bool) -> tuple[tuple[str, str, str], ...]:
    """Cohen's author lists: ``'Reimer, E J; Dunn, G S'`` (raw) or ``'E J Reimer; G S Dunn'`` (online)."""
    out: list[tuple[str, str, str]] = []
    for name in (n.strip() for n in names.split(";")):
        if not name:
            continue
        if comma and "," in name:
            last, _, initials = name.partition(",")
        elif not comma and " " in name:
            initials, _, last = name.rpartition(" ")
        else:
            last, initials = name, ""
        out.append((last.strip(), "", "".join(initials.split())))
    return tuple(out)


def cohen_record(row: Mapping[str, str], mesh_names: Sequence[str], uis: Mapping[str, str]) -> Built:
    """A Cohen 2006 row (ASReview ``online`` CSV, MeSH names from the ``raw`` CSV) as a record."""
    year = row.get("year", "").strip()
    year_value = int(float(year)) if year.replace(".", "", 1).isdigit() else None
    mesh = tuple(MeshHeading(descriptor=n, ui=uis.get(n)) for n in mesh_names)
    abstract = row.get("abstract", "").strip()
    title = row.get("title", "").strip()
    record = PubmedRecord(
        pmid=row["pubmedID"].strip(),
        title=title,
        abstract=(AbstractSection(text=abstract),) if abstract else (),
        pub_date=PubDate(year=year_value),
        publication_types=(PLACEHOLDER_JOURNAL_ARTICLE,),
        mesh=mesh,
        status="MEDLINE" if mesh else "PubMed-not-MEDLINE",
    )
    extras = PubmedXmlExtras(authors=_authors(row.get("authors", ""), comma=False), mark_placeholders=True)
    syn: dict[str, Any] = {
        "Journal": _NO_JOURNAL,
        "Pagination": _NO_PAGES,
        "Language": _NO_LANGUAGE,
        "PublicationType": _PLACEHOLDER_PT,
        "MedlineCitation/@Status": f"'{record.status}' (from whether MeSH names are known)",
    }
    if not title:
        syn["ArticleTitle"] = "missing (empty)"
    if year_value is None:
        syn["PubDate"] = _NO_YEAR
    syn.update(_missing_uis(mesh))
    return record, extras, syn


def hoc_record(pmid: str, sentences: Sequence[str]) -> Built:
    """A Hallmarks of Cancer abstract (tokenised sentences, no title, no metadata) as a record."""
    text = " ".join(s.strip() for s in sentences if s.strip())
    record = PubmedRecord(
        pmid=pmid,
        title="",
        abstract=(AbstractSection(text=text),) if text else (),
        publication_types=(PLACEHOLDER_JOURNAL_ARTICLE,),
        status="PubMed-not-MEDLINE",
    )
    syn: dict[str, Any] = {
        "ArticleTitle": "missing (empty; HoC has no titles)",
        "AbstractText": "HoC's tokenised sentences joined by spaces (not the original spacing)",
        "Journal": _NO_JOURNAL,
        "Pagination": _NO_PAGES,
        "PubDate": _NO_YEAR,
        "Language": _NO_LANGUAGE,
        "PublicationType": _PLACEHOLDER_PT,
        "MedlineCitation/@Status": "placeholder 'PubMed-not-MEDLINE'",
    }
    return record, _MARKED, syn


def _int_or_none(value: str) -> int | None:
    return int(value) if value.isdigit() else None


def _padded(date: tuple[str, str, str] | None) -> tuple[str, str, str] | None:
    """A full electronic date as PubMed writes ArticleDate (zero-padded month/day), else None."""
    if not date or not all(p.isdigit() for p in date):
        return None
    return date[0], f"{int(date[1]):02d}", f"{int(date[2]):02d}"


def jats_pubmed_record(front: JatsFront) -> tuple[PubmedRecord, PubmedXmlExtras]:
    """A PubMed record for a PMC article, from its JATS front matter only."""
    sections = tuple(
        AbstractSection(text=text, label=title.upper() or None, nlm_category=nlm_category(title))
        for title, text in front.abstract
    )
    ptype = _PUBLICATION_TYPES.get(front.article_type, JOURNAL_ARTICLE)
    issn_types = {"ppub": "Print", "print": "Print", "epub": "Electronic", "electronic": "Electronic"}
    issns = tuple((issn_types[t], v) for t, v in front.issns if t in issn_types)
    if front.ppub and front.epub:
        pub_model = "Print-Electronic"
    elif front.epub and not front.ppub:
        pub_model = "Electronic"
    else:
        pub_model = "Print"
    pages = f"{front.fpage}-{front.lpage}" if front.fpage and front.lpage else front.fpage or front.elocation
    record = PubmedRecord(
        pmid=front.pmid,
        title=front.title,
        abstract=sections,
        journal=front.journal_title or None,
        journal_iso=front.iso_abbrev or front.nlm_ta or None,
        pub_date=PubDate(
            year=_int_or_none(front.pub_year),
            month=_int_or_none(front.pub_month),
            day=_int_or_none(front.pub_day) if front.pub_month else None,
        ),
        publication_types=(ptype,),
        keywords=front.keywords,
        languages=("eng",) if front.language in ("", "en") else (front.language,),
        authors=tuple(f"{last} {initials}".strip() for last, _fore, initials in front.authors),
        doi=front.doi or None,
        pmcid=f"PMC{front.pmc}",
        status="PubMed-not-MEDLINE",
    )
    extras = PubmedXmlExtras(
        authors=front.authors,
        volume=front.volume,
        issue=front.issue,
        pages=pages,
        issns=issns,
        medline_ta=front.nlm_ta,
        pub_model=pub_model,
        cited_medium="Print" if front.ppub else "Internet",
        publication_status="ppublish" if front.ppub else "epublish",
        pii=front.pii,
        article_date=_padded(front.epub),
    )
    return record, extras


def world_trial_record(front: JatsFront) -> Built:
    """An Evidence Inference trial article's PubMed record: JATS front matter plus an inferred RCT type."""
    record, extras = jats_pubmed_record(front)
    extras = dataclasses.replace(extras, mark_placeholders=True)
    record = dataclasses.replace(
        record, publication_types=(*record.publication_types, RANDOMIZED_CONTROLLED_TRIAL)
    )
    syn: dict[str, Any] = {
        "PublicationType": "'Randomized Controlled Trial' (D016449) inferred from membership in the "
        "Evidence Inference RCT corpus, marked inferred; 'Journal Article' from the JATS article-type",
        "Language": f"'{record.languages[0]}' from the JATS xml:lang (default en)",
        "MedlineCitation/@Status": "placeholder 'PubMed-not-MEDLINE' (no MeSH indexing available)",
        "Article/@PubModel, PublicationStatus, CitedMedium": "derived from the JATS pub-dates (ppub/epub)",
    }
    if not record.journal and not extras.medline_ta and not record.journal_iso:
        syn["Journal"] = _NO_JOURNAL
    if not record.title:
        syn["ArticleTitle"] = "missing (empty)"
    if record.year is None:
        syn["PubDate"] = _NO_YEAR
    if not extras.pages and not record.doi:
        syn["Pagination"] = _NO_PAGES
    return record, extras, syn


def mark_retracted(record: PubmedRecord) -> PubmedRecord:
    """Add NCBI's 'Retracted Publication' type (from the retraction list) unless the record has it."""
    if any(pt.name == RETRACTED_PUBLICATION.name for pt in record.publication_types):
        return dataclasses.replace(record, retracted=True)
    return dataclasses.replace(
        record, publication_types=(*record.publication_types, RETRACTED_PUBLICATION), retracted=True
    )

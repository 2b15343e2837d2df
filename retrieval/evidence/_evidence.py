"""Metadata stage of CHSDR: fetch fused candidates, filter them, and pick each document's retrieval depth.

CoMeta §3.2.1 uses three metadata fields: publication type (document class), publication date (recency
window) and abstract availability (quality). §4.1.2 / Table 2 sets the depth per class: reviews gain from
full text (D1 + D2 is the best mix), other full texts add noise, so their abstracts stand in for them.

Classes:

- **D1** PubMed abstract: everything that is not D2/D3 (primary research without a PMC copy).
- **D2** PMC review: Review, Systematic Review, Meta-Analysis, Practice Guideline or Guideline *and*
  a PMCID on the record.
- **D3** other PMC full text: a PMCID, not a review type.

Classification reads the record only (PubMed EFetch carries ``ArticleId IdType="pmc"`` whenever PMC holds
the article); ELink ``pubmed_pmc`` is only consulted to find full text for a class configured to
``"fulltext"`` whose record lacks the PMCID (e.g. ``depth_d1="fulltext"``).

Network budget per build: one PubMed EFetch for all candidates, at most one ELink and one PMC EFetch
(the client batches each call by ``efetch_batch_size``). A PubMed EFetch failure propagates — without
records there is no evidence and the caller degrades; a PMC/ELink failure only downgrades the affected
documents to their abstracts, with the reason recorded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from retrieval.eutils import EutilsClient
from retrieval.ncbi import EutilsError, License, PmcArticle, PubmedRecord, normalise_pmcid
from retrieval.search import FusedHit, Provenance

from ._config import EvidenceSettings
from ._notices import CONCERN_TYPES, Notice, notice_of, superseded

__all__ = [
    "DROP_NOT_FOUND",
    "DROP_NO_ABSTRACT",
    "DROP_NO_YEAR",
    "DROP_OUT_OF_WINDOW",
    "DROP_RETRACTED",
    "DROP_SUPERSEDED",
    "FALLBACK_EMPTY_BODY",
    "FALLBACK_LINK_FAILED",
    "FALLBACK_NO_LINK",
    "FALLBACK_PMC_FAILED",
    "FALLBACK_PMC_MISSING",
    "FALLBACK_WITHHELD",
    "REVIEW_TYPE_NAMES",
    "REVIEW_TYPE_UIS",
    "Depth",
    "DocClass",
    "Dropped",
    "EvidenceBuilder",
    "EvidenceDoc",
    "EvidenceSet",
    "PolicyRow",
    "TextUnit",
    "classify",
    "depth_for",
    "policy_table",
    "pubmed_url",
]

DocClass = Literal["D1", "D2", "D3"]
Depth = Literal["abstract", "fulltext"]

# MeSH publication-type UIs (EUTILS.md §12). Guideline is Practice Guideline's parent: guidelines are
# synthesised evidence for patients' questions just as reviews are.
REVIEW_TYPE_UIS: frozenset[str] = frozenset(
    {
        "D016454",  # Review
        "D000078182",  # Systematic Review
        "D017418",  # Meta-Analysis
        "D017065",  # Practice Guideline
        "D016431",  # Guideline
    }
)
REVIEW_TYPE_NAMES: frozenset[str] = frozenset(
    {"review", "systematic review", "meta-analysis", "practice guideline", "guideline"}
)

DROP_NOT_FOUND = "not found"
DROP_RETRACTED = "retracted"
DROP_NO_ABSTRACT = "no abstract"
DROP_NO_YEAR = "no publication year"
DROP_OUT_OF_WINDOW = "outside date window"
DROP_SUPERSEDED = "newer version in the evidence"  # Dropped.replaced_by names it

FALLBACK_WITHHELD = "publisher withheld body"
FALLBACK_NO_LINK = "no PMC link"
FALLBACK_LINK_FAILED = "PMC link failed"
FALLBACK_PMC_FAILED = "PMC fetch failed"
FALLBACK_PMC_MISSING = "PMC article not found"
FALLBACK_EMPTY_BODY = "no body text"

_CLASS_DESCRIPTIONS: dict[DocClass, str] = {
    "D1": "PubMed abstract (primary research, no PMC copy)",
    "D2": "PMC review (Review, Systematic Review, Meta-Analysis, Practice Guideline/Guideline) with a PMCID",
    "D3": "other PMC full text (PMCID, not a review type)",
}


def pubmed_url(pmid: str) -> str:
    return f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/"


def _is_review_type(ui: str | None, name: str) -> bool:
    # The UI is authoritative when present (names get respelled across MeSH years); the name is the
    # fallback for sources that drop UIs (ESummary, hand-built records).
    if ui:
        return ui.strip().upper() in REVIEW_TYPE_UIS
    return " ".join(name.split()).lower() in REVIEW_TYPE_NAMES


def classify(record: PubmedRecord) -> DocClass:
    """D2 (review type + PMCID), D3 (PMCID otherwise) or D1."""
    if not record.pmcid:
        return "D1"
    # A synthesised type (world placeholder or guess) is no evidence of a review.
    if any(_is_review_type(pt.ui, pt.name) for pt in record.publication_types if not pt.inferred):
        return "D2"
    return "D3"


def depth_for(doc_class: DocClass, settings: EvidenceSettings) -> Depth:
    depth: Depth = {"D1": settings.depth_d1, "D2": settings.depth_d2, "D3": settings.depth_d3}[doc_class]
    return depth


class PolicyRow(NamedTuple):
    doc_class: DocClass
    description: str
    depth: Depth


def policy_table(settings: EvidenceSettings | None = None) -> tuple[PolicyRow, ...]:
    """The depth policy in force, one row per class (default: CoMeta Table 2 — only D2 in full text)."""
    settings = settings or EvidenceSettings()
    classes: tuple[DocClass, ...] = ("D1", "D2", "D3")
    return tuple(PolicyRow(c, _CLASS_DESCRIPTIONS[c], depth_for(c, settings)) for c in classes)


@dataclass(frozen=True, slots=True)
class TextUnit:
    """A piece of a document for the splitter: the whole abstract, or one full-text body section."""

    kind: Literal["abstract", "section"]
    text: str
    label: str  # "Abstract" or the section heading (sec-type when the heading is empty)
    path: tuple[str, ...]  # heading path, outermost first, ending with this section's own heading
    source: Literal["pubmed", "pmc"]
    index: int  # 0-based position within the document


@dataclass(frozen=True, slots=True)
class EvidenceDoc:
    pmid: str
    pmcid: str | None
    title: str
    year: int | None
    journal: str | None
    publication_types: tuple[str, ...]
    doc_class: DocClass
    depth_used: Depth
    depth_fallback_reason: str | None  # why a "fulltext" class ended up with its abstract
    license: License | None  # of the PMC full text actually used; None for abstracts
    url: str
    fused_rank: int  # rank in the fusion (gaps where candidates were dropped)
    rrf_score: float
    provenance: tuple[Provenance, ...]
    text_units: tuple[TextUnit, ...]
    doi: str | None = None
    mesh: tuple[str, ...] = ()  # the record's MeSH descriptor names (what the relevance decision reads)
    notices: tuple[Notice, ...] = ()  # what PubMed says happened to the study since (retrieval.ncbi)

    @property
    def concern(self) -> bool:
        """An expression of concern or a partial retraction was published about it: read it with care."""
        return any(n.type in CONCERN_TYPES for n in self.notices)


class Dropped(NamedTuple):
    pmid: str
    reason: str
    replaced_by: str | None = None  # DROP_SUPERSEDED: the newer version kept in its place


@dataclass(frozen=True, slots=True)
class EvidenceSet:
    # Ordered by fused rank, except that a newer version of a review takes the place of the one it replaced.
    docs: tuple[EvidenceDoc, ...]
    dropped: tuple[Dropped, ...]  # in fused order
    candidates: int  # fused hits considered (after ``max_candidates``)
    fetched: int  # PubMed records returned
    by_class: dict[str, int] = field(default_factory=dict)
    fulltext: int = 0  # documents carrying full-text sections
    fallbacks: int = 0  # "fulltext" documents downgraded to their abstract

    @property
    def pmids(self) -> tuple[str, ...]:
        return tuple(d.pmid for d in self.docs)

    @property
    def dropped_by_reason(self) -> dict[str, int]:
        return dict(Counter(d.reason for d in self.dropped))


def _abstract_unit(record: PubmedRecord) -> tuple[TextUnit, ...]:
    # Abstracts are single passages (CoMeta §3.2.2): one unit, section labels kept inline.
    text = record.abstract_text.strip()
    return (TextUnit("abstract", text, "Abstract", ("Abstract",), "pubmed", 0),) if text else ()


def _section_units(record: PubmedRecord, article: PmcArticle) -> tuple[TextUnit, ...]:
    # The abstract leads (it is part of the full text, and the review's own summary); body sections follow.
    units = list(_abstract_unit(record))
    for section in article.sections:
        text = section.text.strip()
        if not text:
            continue
        heading = section.heading.strip()
        path = tuple(h for h in (*section.path, heading) if h.strip())
        label = heading or (section.sec_type or "").strip() or (path[-1] if path else "Body")
        units.append(TextUnit("section", text, label, path, "pmc", len(units)))
    return tuple(units)


def _unusable(article: PmcArticle | None, fetch_failed: bool) -> str | None:
    """Why a PMC fetch gave no usable body, or None when the article can be read."""
    if fetch_failed:
        return FALLBACK_PMC_FAILED
    if article is None:
        return FALLBACK_PMC_MISSING
    if article.body_withheld:
        return FALLBACK_WITHHELD  # EUTILS.md §6.4: publishers may forbid the XML body
    return None


def _license_of(article: PmcArticle) -> License | None:
    if article.license is not None:
        return article.license
    # No <license>: keep the copyright line, so the answer does not present the text as open.
    return License(text=article.copyright) if article.copyright else None


class EvidenceBuilder:
    """Turn fused hits into an ordered, filtered evidence list with the text units to segment next."""

    def __init__(self, client: EutilsClient, settings: EvidenceSettings | None = None) -> None:
        self.client = client
        self.settings = settings or EvidenceSettings()

    async def build(
        self,
        fused: Sequence[FusedHit],
        *,
        min_year: int | None = None,
        max_year: int | None = None,
        api_key: str | None = None,
        records: Mapping[str, PubmedRecord] | None = None,
    ) -> EvidenceSet:
        """Fetch, filter, classify and deepen the top ``max_candidates`` fused hits.

        The date window is re-checked on every fetched record: the Boolean arm already sent it as
        ``mindate``/``maxdate``, but the dense index knows no dates. Pass ``None`` for both when Adapt-E
        had to relax its dates (``AdaptEResult.date_limits_relaxed``), or the older evidence is dropped here.
        """
        settings = self.settings
        if min_year is not None and max_year is not None and min_year > max_year:
            raise ValueError(f"min_year {min_year} > max_year {max_year}")
        hits = _unique_by_pmid(sorted(fused, key=lambda h: h.rank))[: settings.max_candidates]
        # ``records`` already fetched for this question (Adapt-E's local tier check) are not fetched again.
        known = dict(records or {})
        missing = [h.pmid for h in hits if h.pmid not in known]
        if missing:
            known.update((r.pmid, r) for r in await self.client.efetch_pubmed(missing, api_key=api_key))
        records = {h.pmid: known[h.pmid] for h in hits if h.pmid in known}

        dropped: list[Dropped] = []
        kept: list[tuple[FusedHit, PubmedRecord, DocClass]] = []
        for hit in hits:
            record = records.get(hit.pmid)
            reason = DROP_NOT_FOUND if record is None else self._drop_reason(record, min_year, max_year)
            if record is None or reason is not None:
                dropped.append(Dropped(hit.pmid, reason or DROP_NOT_FOUND))
            else:
                kept.append((hit, record, classify(record)))
        if settings.prefer_updates:
            kept = _prefer_updates(kept, dropped)
            ranks = {h.pmid: h.rank for h in hits}
            dropped.sort(key=lambda d: ranks[d.pmid])
        kept_pmids = frozenset(record.pmid for _, record, _ in kept)

        wanted = [rec for _, rec, cls in kept if depth_for(cls, settings) == "fulltext"]
        pmcids, reasons = await self._pmcids(wanted, api_key)
        articles, fetch_failed = await self._fetch_pmc(sorted(set(pmcids.values())), api_key)

        docs: list[EvidenceDoc] = []
        for hit, record, doc_class in kept:
            pmcid = pmcids.get(record.pmid) or record.pmcid
            units = _abstract_unit(record)
            depth: Depth = "abstract"
            fallback: str | None = None
            license_: License | None = None
            if depth_for(doc_class, settings) == "fulltext":
                article = articles.get(pmcid) if pmcid else None
                fallback = reasons.get(record.pmid) or _unusable(article, fetch_failed)
                if fallback is None and article is not None:
                    full = _section_units(record, article)
                    if any(u.kind == "section" for u in full):
                        units, depth, license_ = full, "fulltext", _license_of(article)
                    else:
                        fallback = FALLBACK_EMPTY_BODY
            docs.append(
                EvidenceDoc(
                    pmid=record.pmid,
                    pmcid=pmcid,
                    title=record.title,
                    year=record.year,
                    journal=record.journal or record.journal_iso,
                    publication_types=tuple(pt.name for pt in record.publication_types if not pt.inferred),
                    doc_class=doc_class,
                    depth_used=depth,
                    depth_fallback_reason=fallback,
                    license=license_,
                    url=pubmed_url(record.pmid),
                    fused_rank=hit.rank,
                    rrf_score=hit.rrf_score,
                    provenance=hit.provenance,
                    text_units=units,
                    doi=record.doi,
                    mesh=tuple(h.descriptor for h in record.mesh),
                    notices=tuple(notice_of(n, kept_pmids) for n in record.notices),
                )
            )
        return EvidenceSet(
            docs=tuple(docs),
            dropped=tuple(dropped),
            candidates=len(hits),
            fetched=len(records),
            by_class=dict(Counter(d.doc_class for d in docs)),
            fulltext=sum(d.depth_used == "fulltext" for d in docs),
            fallbacks=sum(d.depth_fallback_reason is not None for d in docs),
        )

    def _drop_reason(self, record: PubmedRecord, min_year: int | None, max_year: int | None) -> str | None:
        if self.settings.exclude_retracted and record.retracted:
            return DROP_RETRACTED
        if self.settings.require_abstract and not record.has_abstract:
            return DROP_NO_ABSTRACT
        if min_year is None and max_year is None:
            return None
        if record.year is None:
            return DROP_NO_YEAR  # cannot show it is inside the window
        if (min_year is not None and record.year < min_year) or (
            max_year is not None and record.year > max_year
        ):
            return DROP_OUT_OF_WINDOW
        return None

    async def _pmcids(
        self, records: Sequence[PubmedRecord], api_key: str | None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """PMID -> PMCID for ``records`` (record first, then one ELink), and PMID -> fallback reason."""
        pmcids: dict[str, str] = {}
        reasons: dict[str, str] = {}
        missing: list[str] = []
        for record in records:
            if record.pmcid:
                pmcids[record.pmid] = normalise_pmcid(record.pmcid)
            else:
                missing.append(record.pmid)
        if not missing:
            return pmcids, reasons
        try:
            links = await self.client.elink_pubmed_pmc(missing, api_key=api_key)
        except EutilsError:
            return pmcids, {pmid: FALLBACK_LINK_FAILED for pmid in missing}
        for pmid in missing:
            linked = links.get(pmid)
            if linked:
                pmcids[pmid] = normalise_pmcid(linked)
            else:
                reasons[pmid] = FALLBACK_NO_LINK
        return pmcids, reasons

    async def _fetch_pmc(
        self, pmcids: Sequence[str], api_key: str | None
    ) -> tuple[dict[str, PmcArticle], bool]:
        if not pmcids:
            return {}, False
        try:
            articles = await self.client.efetch_pmc(pmcids, api_key=api_key)
        except EutilsError:
            return {}, True
        return {a.pmcid: a for a in articles}, False


_Kept = tuple[FusedHit, PubmedRecord, DocClass]


def _prefer_updates(kept: Sequence[_Kept], dropped: list[Dropped]) -> list[_Kept]:
    """``kept`` without the reviews a newer version of which is among them (each added to ``dropped``);
    the newest version moves up to the best place of the versions it replaced, so it is not cut off by a
    document limit the older one was within."""
    newest = superseded(record for _, record, _ in kept)
    if not newest:
        return list(kept)
    by_pmid = {entry[1].pmid: entry for entry in kept}
    out: list[_Kept] = []
    placed: set[str] = set()
    for _, record, _ in kept:
        target = newest.get(record.pmid, record.pmid)
        if target != record.pmid:
            dropped.append(Dropped(record.pmid, DROP_SUPERSEDED, target))
        if target not in placed:
            placed.add(target)
            out.append(by_pmid[target])
    return out


def _unique_by_pmid(hits: Iterable[FusedHit]) -> list[FusedHit]:
    seen: set[str] = set()
    out: list[FusedHit] = []
    for hit in hits:
        if hit.pmid not in seen:
            seen.add(hit.pmid)
            out.append(hit)
    return out

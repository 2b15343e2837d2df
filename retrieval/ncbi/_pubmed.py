"""PubMed XML (``<PubmedArticleSet>``: EFetch ``db=pubmed``, the baseline files), read and written.

Reading gives :class:`PubmedRecord` (all at once, or streamed from a gzip baseline file); writing gives the
local server's EFetch body and a ``<PubmedArticle>`` for records that have no raw bytes (build script, user
records).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Final

from lxml import etree

from ._errors import EutilsError, MalformedResponse
from ._models import AbstractSection, MeshHeading, MeshQualifier, PubDate, PublicationType, PubmedRecord
from ._xml import (
    _MONTH_ABBRS,
    _PARSER_KWARGS,
    PUBMED_ARTICLESET_PROLOG,
    _as_bytes,
    _Element,
    _guard,
    _head,
    _int,
    _load_xml,
    _localname,
    _opt,
    _pmcid_or_none,
    _sub,
    _text,
    _xml,
)

__all__ = [
    "INFERRED_MARK",
    "PubmedXmlExtras",
    "iter_pubmed_articles",
    "nlm_category",
    "parse_pubmed_articles",
    "pubmed_article_xml",
    "pubmed_articleset",
]


_MONTHS: Final = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
    )
}
_YEAR_RE: Final = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")
# The comment written right after a synthesised <PublicationType> (see PublicationType.inferred).
INFERRED_MARK: Final = "cometa:inferred"


# ----------------------------------------------------------------------------------------------------
# Reading (EFetch db=pubmed, baseline files)
# ----------------------------------------------------------------------------------------------------


def _month(value: str | None) -> int | None:
    if not value:
        return None
    v = value.strip()
    if v.isdecimal():
        n = int(v)
        return n if 1 <= n <= 12 else None
    return _MONTHS.get(v[:3].lower())


def _pub_date(pd: _Element | None) -> PubDate:
    if pd is None:
        return PubDate()
    medline = pd.findtext("MedlineDate")
    if medline:
        medline = " ".join(medline.split())
        m = _YEAR_RE.search(medline)
        return PubDate(year=int(m.group(1)) if m else None, medline_date=medline)
    season = pd.findtext("Season")
    return PubDate(
        year=_int(pd.findtext("Year")),
        month=_month(pd.findtext("Month")),
        day=_int(pd.findtext("Day")),
        season=season.strip() or None if season else None,
    )


def _author(a: _Element) -> str | None:
    # One pass over the children: find() per field costs more than the rest of the record.
    parts: dict[str, _Element] = {}
    for c in a:
        tag = c.tag
        if isinstance(tag, str) and tag not in parts:
            parts[tag] = c
    collective = parts.get("CollectiveName")
    if collective is not None:
        return _text(collective) or None
    last = _text(parts.get("LastName"))
    if not last:
        return None
    initials = _text(parts.get("Initials"))
    if not initials:
        # Some records carry ForeName only; derive initials the way NCBI's DocSums display them.
        initials = "".join(
            p[0] for p in _text(parts.get("ForeName")).replace("-", " ").split() if p[0].isalpha()
        )
    suffix = _text(parts.get("Suffix"))
    if suffix:
        return " ".join(p for p in (last, initials, suffix) if p)
    return f"{last} {initials}" if initials else last


def _mesh_heading(mh: _Element) -> MeshHeading | None:
    d = mh.find("DescriptorName")
    if d is None or not (dname := _text(d)):
        return None
    quals = tuple(
        MeshQualifier(name=qn, ui=q.get("UI"), major=q.get("MajorTopicYN") == "Y")
        for q in mh.iterchildren("QualifierName")
        if (qn := _text(q))
    )
    return MeshHeading(descriptor=dname, ui=d.get("UI"), major=d.get("MajorTopicYN") == "Y", qualifiers=quals)


def _pubmed_record(article: _Element, endpoint: str = "efetch") -> PubmedRecord:
    mc = article.find("MedlineCitation")
    pmid = ""
    art = journal_info = None
    mesh: list[MeshHeading] = []
    keywords: list[str] = []
    retraction_in = False
    if mc is not None:
        # Single pass over MedlineCitation's children instead of one path lookup per field.
        for c in mc:
            tag = c.tag
            if tag == "PMID":
                pmid = _text(c)
            elif tag == "Article":
                art = c
            elif tag == "MedlineJournalInfo":
                journal_info = c
            elif tag == "MeshHeadingList":
                mesh.extend(h for mh in c.iterchildren("MeshHeading") if (h := _mesh_heading(mh)))
            elif tag == "KeywordList":
                keywords.extend(k for kw in c.iterchildren("Keyword") if (k := _text(kw)))
            elif tag == "CommentsCorrectionsList":
                retraction_in = retraction_in or any(
                    cc.get("RefType") == "RetractionIn" for cc in c.iterchildren("CommentsCorrections")
                )
    if mc is None or not pmid:
        raise MalformedResponse(f"{endpoint}: PubmedArticle without MedlineCitation/PMID", endpoint=endpoint)

    title = vernacular = ""
    sections: list[AbstractSection] = []
    journal = journal_iso = None
    pub_date = PubDate()
    pts: list[PublicationType] = []
    languages: list[str] = []
    authors: list[str] = []
    eloc_doi = None
    for c in art if art is not None else ():  # Article is DTD-required; tolerate its absence anyway
        tag = c.tag
        if tag == "ArticleTitle":
            title = _text(c)
        elif tag == "VernacularTitle":
            vernacular = _text(c)
        elif tag == "Journal":
            journal = _opt(c.find("Title"))
            journal_iso = _opt(c.find("ISOAbbreviation"))
            pub_date = _pub_date(c.find("JournalIssue/PubDate"))
        elif tag == "Abstract":
            for at in c.iterchildren("AbstractText"):
                text = _text(at)
                label = (at.get("Label") or "").strip() or None
                if text or label:
                    sections.append(
                        AbstractSection(text=text, label=label, nlm_category=at.get("NlmCategory"))
                    )
        elif tag == "AuthorList":
            # ValidYN="N" marks an author name published in error (kept by NLM for the record); skip it.
            authors.extend(
                au for a in c.iterchildren("Author") if a.get("ValidYN") != "N" and (au := _author(a))
            )
        elif tag == "Language":
            if lang := _text(c):
                languages.append(lang)
        elif tag == "PublicationTypeList":
            for pt in c:
                if pt.tag == "PublicationType":
                    if name := _text(pt):
                        pts.append(PublicationType(name=name, ui=pt.get("UI")))
                elif isinstance(pt, etree._Comment) and pts and (pt.text or "").strip() == INFERRED_MARK:
                    pts[-1] = PublicationType(pts[-1].name, pts[-1].ui, inferred=True)
        elif tag == "ELocationID":
            if eloc_doi is None and c.get("EIdType") == "doi" and c.get("ValidYN") != "N":
                eloc_doi = _opt(c)
    if journal_iso is None and journal_info is not None:
        ta = journal_info.find("MedlineTA")
        if ta is not None and not _marked_inferred(ta):  # a placeholder journal is no journal
            journal_iso = _opt(ta)

    doi = pmcid = None
    # Only PubmedData/ArticleIdList: ReferenceList/Reference/ArticleIdList holds the *cited* papers' ids.
    for aid in article.iterfind("PubmedData/ArticleIdList/ArticleId"):
        kind = aid.get("IdType")
        if kind == "doi" and doi is None:
            doi = _opt(aid)
        elif kind in ("pmc", "pmcid") and pmcid is None:
            pmcid = _pmcid_or_none(_text(aid))

    retracted = retraction_in or any(pt.name == "Retracted Publication" for pt in pts)

    return PubmedRecord(
        pmid=pmid,
        title=title or vernacular,
        abstract=tuple(sections),
        journal=journal,
        journal_iso=journal_iso,
        pub_date=pub_date,
        publication_types=tuple(pts),
        mesh=tuple(mesh),
        keywords=tuple(keywords),
        languages=tuple(languages),
        authors=tuple(authors),
        doi=doi or eloc_doi,
        pmcid=pmcid,
        status=mc.get("Status"),
        retracted=retracted,
    )


def _marked_inferred(el: _Element) -> bool:
    nxt = el.getnext()
    return isinstance(nxt, etree._Comment) and (nxt.text or "").strip() == INFERRED_MARK


@_guard("efetch")
def parse_pubmed_articles(data: bytes) -> list[PubmedRecord]:
    """EFetch ``db=pubmed&retmode=xml`` (``PubmedArticleSet``, any DTD year) -> records in body order.

    ``PubmedBookArticle`` and ``DeleteCitation`` entries are skipped. An empty set gives ``[]``.
    """
    data = _as_bytes(data, "efetch")
    root = _load_xml(data, "efetch", ("PubmedArticleSet", "PubmedArticle"))
    if _localname(root) == "PubmedArticle":
        return [_pubmed_record(root)]
    return [_pubmed_record(el) for el in root.iterchildren("PubmedArticle")]


class _PrefixedReader(io.RawIOBase):
    """A read-only stream that replays already-consumed ``prefix`` bytes before ``stream``.

    Lets us sniff the gzip magic on non-seekable file objects without losing those bytes.
    """

    def __init__(self, prefix: bytes, stream: IO[bytes]) -> None:
        self._prefix = prefix
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._prefix:
            n = min(len(view), len(self._prefix))
            view[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        chunk = self._stream.read(len(view))
        view[: len(chunk)] = chunk
        return len(chunk)


def iter_pubmed_articles(source: str | os.PathLike[str] | BinaryIO) -> Iterator[PubmedRecord]:
    """Stream :class:`PubmedRecord` s from a PubMed baseline/update file (``.xml`` or ``.xml.gz``).

    ``source`` is a path or a binary file object; gzip is detected from the magic bytes, not the name.
    Memory stays flat: each ``PubmedArticle`` is cleared (and dropped from the tree) once parsed.
    ``PubmedBookArticle`` and ``DeleteCitation`` are skipped. Errors opening a *path* propagate as
    ``OSError``; anything wrong with the content raises :class:`MalformedResponse`.
    """
    endpoint = "efetch"
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as fh:
            yield from _iter_pubmed_stream(fh, endpoint)
    else:
        yield from _iter_pubmed_stream(source, endpoint)


def _iter_pubmed_stream(raw: IO[bytes], endpoint: str) -> Iterator[PubmedRecord]:
    try:
        magic = raw.read(2)
        stream: io.BufferedReader | gzip.GzipFile = io.BufferedReader(_PrefixedReader(magic, raw))
        if magic == b"\x1f\x8b":
            stream = gzip.GzipFile(fileobj=stream, mode="rb")
        _head(stream.peek(512)[:512], endpoint)
        context = etree.iterparse(
            stream,
            events=("end",),
            tag=("PubmedArticle", "PubmedBookArticle", "DeleteCitation"),
            **_PARSER_KWARGS,
        )
        root_checked = False
        for _event, el in context:
            if not root_checked:
                root = el.getroottree().getroot()
                if _localname(root) != "PubmedArticleSet":
                    raise MalformedResponse(
                        f"{endpoint}: unexpected root element <{_localname(root)}>", endpoint=endpoint
                    )
                root_checked = True
            record = _pubmed_record(el, endpoint) if el.tag == "PubmedArticle" else None
            # Free what we have seen: the element itself and the siblings that preceded it.
            el.clear(keep_tail=False)
            parent = el.getparent()
            if parent is not None:
                while el.getprevious() is not None:
                    del parent[0]
            if record is not None:
                yield record
        if not root_checked:
            root = context.root
            if root is None or _localname(root) != "PubmedArticleSet":
                name = _localname(root) if root is not None else ""
                raise MalformedResponse(f"{endpoint}: unexpected root element <{name}>", endpoint=endpoint)
    except EutilsError:
        raise
    except (
        etree.LxmlError,
        OSError,  # gzip.BadGzipFile included
        EOFError,  # truncated gzip member
        zlib.error,
        ValueError,
        KeyError,
        IndexError,
        TypeError,
        RecursionError,
    ) as exc:
        raise MalformedResponse(f"{endpoint}: cannot read PubMed XML ({exc})", endpoint=endpoint) from exc


# ----------------------------------------------------------------------------------------------------
# Writing (EFetch body; records without raw bytes: build script, user records)
# ----------------------------------------------------------------------------------------------------


def pubmed_articleset(articles: Iterable[bytes]) -> bytes:
    """Wrap raw ``<PubmedArticle>`` bytes under the 2025 prolog, laid out exactly as pubmed1.xml: a newline
    after the opening tag, the articles back to back, no newline at the end."""
    parts = [PUBMED_ARTICLESET_PROLOG, b"<PubmedArticleSet>\n"]
    parts += [raw.strip() for raw in articles]
    parts.append(b"</PubmedArticleSet>")
    return b"".join(parts)


_NLM_CATEGORIES = {
    "BACKGROUND": "BACKGROUND",
    "BACKGROUNDS": "BACKGROUND",
    "OBJECTIVE": "OBJECTIVE",
    "OBJECTIVES": "OBJECTIVE",
    "METHOD": "METHODS",
    "METHODS": "METHODS",
    "RESULT": "RESULTS",
    "RESULTS": "RESULTS",
    "CONCLUSION": "CONCLUSIONS",
    "CONCLUSIONS": "CONCLUSIONS",
}


def nlm_category(label: str | None) -> str | None:
    """NlmCategory only where the label *clearly* maps (the five names, singular or plural); NLM's own
    mapping of e.g. PURPOSE->OBJECTIVE is not ours to guess (data/README.md §2.5)."""
    if not label:
        return None
    return _NLM_CATEGORIES.get(label.strip().rstrip(":").upper())


@dataclass(frozen=True, slots=True)
class PubmedXmlExtras:
    """PubMed XML fields :class:`PubmedRecord` does not carry; all optional, defaults satisfy the DTD."""

    authors: tuple[tuple[str, str, str], ...] = ()  # (LastName, ForeName, Initials)
    volume: str = ""
    issue: str = ""
    pages: str = ""
    issns: tuple[tuple[str, str], ...] = ()  # (IssnType Print|Electronic, value)
    medline_ta: str = ""
    nlm_unique_id: str = ""
    pub_model: str = "Print"
    cited_medium: str = "Print"
    publication_status: str = "ppublish"
    pii: str = ""
    article_date: tuple[str, str, str] | None = None  # electronic (Year, Month, Day)
    medline_date_placeholder: str = "Unknown"  # PubDate/MedlineDate when the year is unknown
    mark_placeholders: bool = False  # flag the placeholder MedlineTA with INFERRED_MARK (world builds)


def pubmed_article_xml(record: PubmedRecord, extras: PubmedXmlExtras | None = None) -> bytes:
    """One ``<PubmedArticle>`` on a single line, with every element pubmed_250101.dtd requires.

    Unknown required values get neutral placeholders (empty ``MedlinePgn``, ``UI=""`` for a descriptor
    whose UI is unknown, ``Journal Article``/D016428 when no type is known); the build script flags them.
    """
    ex = extras or PubmedXmlExtras()
    art = etree.Element("PubmedArticle")
    mc = _sub(art, "MedlineCitation", Status=record.status or "MEDLINE", Owner="NLM")
    _sub(mc, "PMID", record.pmid, Version="1")
    article = _sub(mc, "Article", PubModel=ex.pub_model)
    journal = _sub(article, "Journal")
    for issn_type, value in ex.issns[:1]:
        _sub(journal, "ISSN", value, IssnType=issn_type)
    ji = _sub(journal, "JournalIssue", CitedMedium=ex.cited_medium)
    if ex.volume:
        _sub(ji, "Volume", ex.volume)
    if ex.issue:
        _sub(ji, "Issue", ex.issue)
    pd = _sub(ji, "PubDate")
    date = record.pub_date
    if date.year:
        _sub(pd, "Year", str(date.year))
        if date.month:
            _sub(pd, "Month", _MONTH_ABBRS[date.month - 1])
            if date.day:
                _sub(pd, "Day", f"{date.day:02d}")
        elif date.season:
            _sub(pd, "Season", date.season)
    else:
        _sub(pd, "MedlineDate", date.medline_date or ex.medline_date_placeholder)
    if record.journal:
        _sub(journal, "Title", record.journal)
    if record.journal_iso:
        _sub(journal, "ISOAbbreviation", record.journal_iso)
    _sub(article, "ArticleTitle", record.title)
    if ex.pages or not record.doi:
        _sub(_sub(article, "Pagination"), "MedlinePgn", ex.pages)
    if record.doi:
        _sub(article, "ELocationID", record.doi, EIdType="doi", ValidYN="Y")
    if record.abstract:
        ab = _sub(article, "Abstract")
        for sec in record.abstract:
            attrs: dict[str, str] = {}
            if sec.label:
                attrs["Label"] = sec.label
            if sec.nlm_category:
                attrs["NlmCategory"] = sec.nlm_category
            _sub(ab, "AbstractText", sec.text, **attrs)
    authors = ex.authors or tuple(_split_author(a) for a in record.authors)
    if authors:
        al = _sub(article, "AuthorList", CompleteYN="Y")
        for last, fore, initials in authors:
            au = _sub(al, "Author", ValidYN="Y")
            _sub(au, "LastName", last)
            if fore:
                _sub(au, "ForeName", fore)
            if initials:
                _sub(au, "Initials", initials)
    for lang in record.languages or ("und",):
        _sub(article, "Language", lang)
    ptl = _sub(article, "PublicationTypeList")
    for pt in record.publication_types or ():
        _sub(ptl, "PublicationType", pt.name, UI=pt.ui or "")
        if pt.inferred:  # the DTD has no attribute for it; a comment validates and survives EFetch
            ptl.append(etree.Comment(INFERRED_MARK))
    if not record.publication_types:
        _sub(ptl, "PublicationType", "Journal Article", UI="D016428")
    if ex.article_date:
        ad = _sub(article, "ArticleDate", DateType="Electronic")
        for tag, val in zip(("Year", "Month", "Day"), ex.article_date, strict=True):
            _sub(ad, tag, val)
    mji = _sub(mc, "MedlineJournalInfo")
    medline_ta = ex.medline_ta or record.journal_iso or record.journal
    _sub(mji, "MedlineTA", medline_ta or "Unknown")
    if not medline_ta and ex.mark_placeholders:
        mji.append(etree.Comment(INFERRED_MARK))
    if ex.nlm_unique_id:
        _sub(mji, "NlmUniqueID", ex.nlm_unique_id)
    if record.mesh:
        mhl = _sub(mc, "MeshHeadingList")
        for mh in record.mesh:
            h = _sub(mhl, "MeshHeading")
            _sub(h, "DescriptorName", mh.descriptor, UI=mh.ui or "", MajorTopicYN="Y" if mh.major else "N")
            for q in mh.qualifiers:
                _sub(h, "QualifierName", q.name, UI=q.ui or "", MajorTopicYN="Y" if q.major else "N")
    if record.keywords:
        kl = _sub(mc, "KeywordList", Owner="NOTNLM")
        for kw in record.keywords:
            _sub(kl, "Keyword", kw, MajorTopicYN="N")
    pdata = _sub(art, "PubmedData")
    _sub(pdata, "PublicationStatus", ex.publication_status)
    ids = _sub(pdata, "ArticleIdList")
    _sub(ids, "ArticleId", record.pmid, IdType="pubmed")
    if ex.pii:
        _sub(ids, "ArticleId", ex.pii, IdType="pii")
    if record.doi:
        _sub(ids, "ArticleId", record.doi, IdType="doi")
    if record.pmcid:
        _sub(ids, "ArticleId", record.pmcid, IdType="pmc")
    return _xml(art)


def _split_author(name: str) -> tuple[str, str, str]:
    """``'Cock PJ'`` -> (Cock, '', PJ); anything else is kept whole as the last name."""
    parts = name.rsplit(" ", 1)
    if len(parts) == 2 and parts[1].isalpha() and parts[1].isupper() and len(parts[1]) <= 4:
        return parts[0], "", parts[1]
    return name, "", ""

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
from ._models import (
    NOTICE_REF_TYPES,
    AbstractSection,
    MeshHeading,
    MeshQualifier,
    PubDate,
    PublicationType,
    PubmedNotice,
    PubmedRecord,
)
from ._xml import (
    _MONTH_ABBRS,
    _PARSER_KWARGS,
    PUBMED_ARTICLESET_PROLOG,
    _as_bytes,
    _Element,
    _guard,
    _head,
    _int,
    _itertext,
    _load_xml,
    _localname,
    _month_number,
    _opt,
    _pmcid_or_none,
    _pubdate_text,
    _sub,
    _text,
    _xml,
)
from ._xml import (
    _path_text as _t,
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


_YEAR_RE: Final = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")
# The comment written right after a synthesised <PublicationType> (see PublicationType.inferred).
INFERRED_MARK: Final = "cometa:inferred"


# ----------------------------------------------------------------------------------------------------
# Reading (EFetch db=pubmed, baseline files)
# ----------------------------------------------------------------------------------------------------


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
        month=_month_number(pd.findtext("Month")),
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


def _notice(cc: _Element) -> PubmedNotice | None:
    """A ``CommentsCorrections`` that is a notice about this record (:data:`NOTICE_REF_TYPES`), else None."""
    ref_type = cc.get("RefType") or ""
    if ref_type not in NOTICE_REF_TYPES:
        return None
    return PubmedNotice(ref_type, _text(cc.find("RefSource")), _text(cc.find("PMID")) or None)


def _pubmed_record(article: _Element, endpoint: str = "efetch") -> PubmedRecord:
    mc = article.find("MedlineCitation")
    pmid = ""
    art = journal_info = None
    mesh: list[MeshHeading] = []
    keywords: list[str] = []
    notices: list[PubmedNotice] = []
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
                notices.extend(n for cc in c.iterchildren("CommentsCorrections") if (n := _notice(cc)))
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
    if journal_iso is None:
        journal_iso = real_medline_ta(journal_info) or None

    doi = pmcid = None
    # Only PubmedData/ArticleIdList: ReferenceList/Reference/ArticleIdList holds the *cited* papers' ids.
    for aid in article.iterfind("PubmedData/ArticleIdList/ArticleId"):
        kind = aid.get("IdType")
        if kind == "doi" and doi is None:
            doi = _opt(aid)
        elif kind in ("pmc", "pmcid") and pmcid is None:
            pmcid = _pmcid_or_none(_text(aid))

    # RetractionIn among the notices sets the flag too (PubmedRecord.__post_init__).
    retracted = any(pt.name == "Retracted Publication" for pt in pts)

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
        notices=tuple(dict.fromkeys(notices)),  # a notice listed twice is one notice
    )


def marked_inferred(el: _Element) -> bool:
    """Whether ``el`` is a world placeholder: the ``<!--cometa:inferred-->`` comment follows it."""
    nxt = el.getnext()
    return isinstance(nxt, etree._Comment) and (nxt.text or "").strip() == INFERRED_MARK


def real_medline_ta(journal_info: _Element | None) -> str:
    """The ``MedlineTA`` of a ``<MedlineJournalInfo>``; "" when absent or a world placeholder (marked
    inferred): a placeholder journal is no journal, in parsing, summaries, MEDLINE text and ECitMatch."""
    ta = journal_info.find("MedlineTA") if journal_info is not None else None
    return _text(ta) if ta is not None and not marked_inferred(ta) else ""


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
    if record.notices:  # the DTD's place: after CitationSubset, before MeshHeadingList
        ccl = _sub(mc, "CommentsCorrectionsList")
        for notice in record.notices:
            cc = _sub(ccl, "CommentsCorrections", RefType=notice.ref_type)
            _sub(cc, "RefSource", notice.ref_source)
            if notice.pmid:
                _sub(cc, "PMID", notice.pmid, Version="1")
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


# ----------------------------------------------------------------------------------------------------
# Plain text: EFetch rettype=medline / rettype=abstract with retmode=text
# ----------------------------------------------------------------------------------------------------

# ArticleIds that MEDLINE shows in their own fields (PMID, PMC, MID), not as AID.
_NOT_AID: Final = frozenset({"pubmed", "pmc", "mid", "pmcid"})


def _wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap as NCBI does it: a wrapped line keeps its trailing space, at most ``width`` chars
    before it (MEDLINE: 81 after the 6-char tag; Abstract: 80)."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current + " ")
            current = word
        else:
            current = f"{current} {word}" if current else word
    lines.append(current)
    return lines


def _ymd(el: _Element | None) -> str:
    if el is None:
        return ""
    return _t(el, "Year") + _t(el, "Month").zfill(2) + _t(el, "Day").zfill(2)


def _pub_date_text(pd: _Element | None) -> str:
    return _pubdate_text(*(_t(pd, tag) for tag in ("Year", "Month", "Day", "Season", "MedlineDate")))


def _epub_text(article: _Element) -> str:
    el = article.find("ArticleDate[@DateType='Electronic']")
    return "" if el is None else _pubdate_text(_t(el, "Year"), _t(el, "Month"), _t(el, "Day"), "", "")


def _mesh_line(mh: _Element) -> str:
    d = mh.find("DescriptorName")
    if d is None:
        return ""
    out = ("*" if d.get("MajorTopicYN") == "Y" else "") + _text(d)
    for q in mh.findall("QualifierName"):
        out += "/" + ("*" if q.get("MajorTopicYN") == "Y" else "") + _text(q)
    return out


def _citation(pa: _Element) -> tuple[_Element, _Element, _Element]:
    mc, article = pa.find("MedlineCitation"), pa.find("MedlineCitation/Article")
    if mc is None or article is None:
        raise MalformedResponse("efetch: a PubmedArticle without MedlineCitation/Article")
    data = pa.find("PubmedData")
    return mc, article, data if data is not None else etree.Element("PubmedData")


def _source_line(mc: _Element, article: _Element, data: _Element, doi: str) -> str:
    """``SO``: ``TA. DP;VI(IP):PG. doi: DOI. Epub DATE.`` (the citation line both text formats share)."""
    issue = article.find("Journal/JournalIssue")
    dp = _pub_date_text(issue.find("PubDate") if issue is not None else None)
    so = f"{_t(mc, 'MedlineJournalInfo/MedlineTA')}. {dp}"
    vi, ip, pg = (
        _t(issue, "Volume"),
        _t(issue, "Issue"),
        _t(article, "Pagination/MedlinePgn"),
    )
    so += (f";{vi}" if vi else "") + (f"({ip})" if ip else "") + (f":{pg}" if pg else "") + "."
    if doi:
        so += f" doi: {doi}."
    epub = _epub_text(article)
    if epub and _t(data, "PublicationStatus") == "ppublish":
        so += f" Epub {epub}."
    return so


def _doi(article: _Element, data: _Element) -> str:
    for el in (*data.findall("ArticleIdList/ArticleId"), *article.findall("ELocationID")):
        if (el.get("IdType") or el.get("EIdType")) == "doi":
            return _text(el).strip()
    return ""


def _abstract_parts(article: _Element) -> list[str]:
    parts = []
    for at in article.findall("Abstract/AbstractText"):
        text = _itertext(at)
        parts.append(f"{at.get('Label')}: {text}" if at.get("Label") else text)
    return parts


def _medline_fields(pa: _Element) -> list[tuple[str, str]]:
    mc, article, data = _citation(pa)
    f: list[tuple[str, str]] = [("PMID", _t(mc, "PMID"))]
    f += [("OWN", mc.get("Owner", "NLM")), ("STAT", mc.get("Status", "MEDLINE"))]
    f += [(tag, _ymd(mc.find(p))) for tag, p in (("DCOM", "DateCompleted"), ("LR", "DateRevised"))]
    for issn in article.findall("Journal/ISSN"):
        f.append(("IS", f"{_text(issn)} ({issn.get('IssnType', 'Print')})"))
    if _t(mc, "MedlineJournalInfo/ISSNLinking"):
        f.append(("IS", f"{_t(mc, 'MedlineJournalInfo/ISSNLinking')} (Linking)"))
    issue = article.find("Journal/JournalIssue")
    f += [("VI", _t(issue, "Volume")), ("IP", _t(issue, "Issue"))]
    f.append(("DP", _pub_date_text(issue.find("PubDate") if issue is not None else None)))
    f += [("TI", _t(article, "ArticleTitle")), ("PG", _t(article, "Pagination/MedlinePgn"))]
    f += [("LID", f"{_text(e).strip()} [{e.get('EIdType')}]") for e in article.findall("ELocationID")]
    f.append(("AB", " ".join(_abstract_parts(article))))
    f.append(("CI", _t(article, "Abstract/CopyrightInformation")))
    for au in article.findall("AuthorList/Author"):
        if au.find("CollectiveName") is not None:
            f.append(("CN", _t(au, "CollectiveName")))
        else:
            last, fore, ini = (
                _t(au, "LastName"),
                _t(au, "ForeName"),
                _t(au, "Initials"),
            )
            f += [("FAU", f"{last}, {fore}" if fore else last), ("AU", f"{last} {ini}".strip())]
            for ident in au.findall("Identifier[@Source='ORCID']"):
                f.append(("AUID", "ORCID: " + _text(ident).strip().rsplit("/", 1)[-1]))
        f += [("AD", _t(aff, "Affiliation")) for aff in au.findall("AffiliationInfo")]
    f += [("LA", _text(la)) for la in article.findall("Language")]
    for gr in article.findall("GrantList/Grant"):
        parts = [_t(gr, t) for t in ("GrantID", "Acronym", "Agency", "Country")]
        f.append(("GR", "/".join(parts)))
    # Placeholders (marked inferred) are never shown as real: the MEDLINE display has no place for the mark.
    pts = article.findall("PublicationTypeList/PublicationType")
    f += [("PT", _text(pt)) for pt in pts if not marked_inferred(pt)]
    epub = article.find("ArticleDate[@DateType='Electronic']")
    f.append(("DEP", _ymd(epub)))
    info = mc.find("MedlineJournalInfo")
    f += [
        ("PL", _t(info, "Country")),
        ("TA", real_medline_ta(info)),
        ("JT", _t(article, "Journal/Title")),
    ]
    f.append(("JID", _t(info, "NlmUniqueID")))
    for ch in mc.findall("ChemicalList/Chemical"):
        f.append(("RN", f"{_t(ch, 'RegistryNumber')} ({_t(ch, 'NameOfSubstance')})"))
    f += [("SB", _text(sb)) for sb in mc.findall("CitationSubset")]
    f += [("MH", _mesh_line(mh)) for mh in mc.findall("MeshHeadingList/MeshHeading")]
    f += [("PMC", _text(a).strip()) for a in data.findall("ArticleIdList/ArticleId[@IdType='pmc']")]
    for kl in mc.findall("KeywordList"):
        f.append(("OTO", kl.get("Owner", "NOTNLM")))
        f += [
            ("OT", ("*" if k.get("MajorTopicYN") == "Y" else "") + _t(k, ".")) for k in kl.findall("Keyword")
        ]
    f.append(("COIS", _t(mc, "CoiStatement")))
    history = {h.get("PubStatus"): h for h in data.findall("History/PubMedPubDate")}
    for tag, status in (("EDAT", "pubmed"), ("MHDA", "medline"), ("PMCR", "pmc-release"), ("CRDT", "entrez")):
        f.append((tag, _history_date(history.get(status)) if status in history else ""))
    for h in data.findall("History/PubMedPubDate"):
        f.append(("PHST", f"{_history_date(h)} [{h.get('PubStatus')}]"))
    for a in data.findall("ArticleIdList/ArticleId"):
        if a.get("IdType") not in _NOT_AID:
            f.append(("AID", f"{_text(a).strip()} [{a.get('IdType')}]"))
    f.append(("PST", _t(data, "PublicationStatus")))
    f.append(("SO", _source_line(mc, article, data, _doi(article, data))))
    return [(tag, value) for tag, value in f if value]


def _history_date(h: _Element | None) -> str:
    if h is None:
        return ""
    ymd = f"{_t(h, 'Year')}/{_t(h, 'Month').zfill(2)}/{_t(h, 'Day').zfill(2)}"
    return f"{ymd} {_t(h, 'Hour').zfill(2) or '00'}:{_t(h, 'Minute').zfill(2) or '00'}"


def _articles(raws: Iterable[bytes]) -> Iterator[_Element]:
    parser = etree.XMLParser(**_PARSER_KWARGS)
    for raw in raws:
        yield etree.fromstring(raw.strip(), parser)


def pubmed_medline_text(articles: Iterable[bytes]) -> str:
    """EFetch ``rettype=medline&retmode=text``: NCBI's MEDLINE display, from raw ``<PubmedArticle>`` bytes.

    Tags padded to four characters then ``- ``; long values wrapped with six-space continuation lines; each
    record preceded by a blank line (the layout of NCBI's recorded output, Biopython's pubmed_result*.txt).
    """
    out: list[str] = []
    for pa in _articles(articles):
        out.append("")
        for tag, value in _medline_fields(pa):
            lines = _wrap(value, 81)
            out.append(f"{tag:<4}- {lines[0]}")
            out += [f"      {line}" for line in lines[1:]]
    return "\n".join(out) + "\n"


def pubmed_abstract_text(articles: Iterable[bytes]) -> str:
    """EFetch ``rettype=abstract&retmode=text``: the numbered citation, title, authors with affiliation
    numbers, "Author information:", the abstract paragraphs, copyright, DOI/PMCID/PMID lines; 80 columns."""
    records: list[str] = []
    for n, pa in enumerate(_articles(articles), start=1):
        mc, article, data = _citation(pa)
        doi = _doi(article, data)
        blocks: list[list[str]] = [_wrap(f"{n}. {_source_line(mc, article, data, doi)}", 80)]
        blocks.append(_wrap(_t(article, "ArticleTitle"), 80))
        affiliations: list[str] = []
        names: list[str] = []
        for au in article.findall("AuthorList/Author"):
            name = _t(au, "CollectiveName") or f"{_t(au, 'LastName')} {_t(au, 'Initials')}".strip()
            marks = []
            for aff in au.findall("AffiliationInfo"):
                text = _t(aff, "Affiliation")
                if text not in affiliations:
                    affiliations.append(text)
                marks.append(str(affiliations.index(text) + 1))
            names.append(name + (f"({', '.join(marks)})" if marks else ""))
        if names:
            blocks.append(_wrap(", ".join(names) + ".", 80))
        if affiliations:
            info = ["Author information:"]
            for i, text in enumerate(affiliations, start=1):
                info += _wrap(f"({i}){text}", 80)
            blocks.append(info)
        blocks += [_wrap(part, 80) for part in _abstract_parts(article)]
        if _t(article, "Abstract/CopyrightInformation"):
            blocks.append(_wrap(_t(article, "Abstract/CopyrightInformation"), 80))
        ids = [f"DOI: {doi}"] if doi else []
        pmc = data.find("ArticleIdList/ArticleId[@IdType='pmc']")
        if pmc is not None:
            ids.append(f"PMCID: {_text(pmc).strip()}")
        indexed = " [Indexed for MEDLINE]" if mc.get("Status") == "MEDLINE" else ""
        ids.append(f"PMID: {_t(mc, 'PMID')}{indexed}")
        blocks.append(ids)
        records.append("\n\n".join("\n".join(b) for b in blocks))
    return "\n\n\n".join(records) + "\n"

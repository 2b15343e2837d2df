"""ESummary (EUTILS.md §7): document summaries in v1 XML, v2 XML and JSON, read and written.

:class:`DocSum` is what the local server knows about one uid; it is built from a PubMed record or JATS front
matter and rendered in the three shapes NCBI serves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lxml import etree

from ._errors import BadRequest
from ._models import DocSummary, PubmedRecord
from ._pmc import JatsFront
from ._pubmed import real_medline_ta
from ._xml import (
    ESUMMARY_PROLOG,
    _as_bytes,
    _clean,
    _Element,
    _guard,
    _header,
    _is_json,
    _itertext,
    _jdict,
    _jlist,
    _json,
    _json_error_check,
    _jstr,
    _jstrs,
    _load_json,
    _load_xml,
    _month_number,
    _opt,
    _path_text,
    _pmcid_or_none,
    _pubdate_text,
    _sub,
    _text,
    _texts,
    _xml,
    esummary_v2_prolog,
)

__all__ = [
    "DocSum",
    "docsum_from_jats",
    "docsum_from_pubmed",
    "esummary_error_json",
    "esummary_error_xml",
    "esummary_v1_xml",
    "esummary_v2_dtd",
    "esummary_v2_json",
    "esummary_v2_xml",
    "parse_esummary",
]


# ----------------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------------


def _ids_from_pairs(pairs: Iterable[tuple[str, str]]) -> tuple[str | None, str | None, str | None]:
    """(pmid, pmcid, doi) from ESummary ``articleids`` (idtype, value) pairs."""
    pmid = pmcid = doi = None
    for kind, value in pairs:
        kind = kind.lower()
        if kind in ("pmid", "pubmed") and pmid is None and value.isdecimal():
            pmid = value
        elif kind in ("pmcid", "pmc") and pmcid is None:
            pmcid = _pmcid_or_none(value)
        elif kind == "doi" and doi is None:
            doi = value
    return pmid, pmcid, doi


def _docsum_v1(ds: _Element) -> DocSummary:
    uid = _text(ds.find("Id"))
    items: dict[str, _Element] = {}
    for item in ds.iterfind("Item"):
        items.setdefault(item.get("Name") or "", item)

    def item_text(name: str) -> str | None:
        return _opt(items.get(name))

    def item_list(name: str) -> tuple[str, ...]:
        el = items.get(name)
        return _texts(el, "Item") if el is not None else ()

    ids_el = items.get("ArticleIds")
    pairs = (
        [(i.get("Name") or "", t) for i in ids_el.iterfind("Item") if (t := _text(i))]
        if ids_el is not None
        else []
    )
    pmid, pmcid, doi = _ids_from_pairs(pairs)
    has_abs = item_text("HasAbstract")
    return DocSummary(
        uid=uid,
        title=item_text("Title"),
        pubdate=item_text("PubDate"),
        source=item_text("Source"),
        authors=item_list("AuthorList"),
        pubtypes=item_list("PubTypeList"),
        doi=item_text("DOI") or doi,
        pmid=pmid,
        pmcid=pmcid,
        has_abstract=None if has_abs is None else has_abs not in ("0", "N", "false"),
        error=item_text("error"),
    )


def _docsum_v2(ds: _Element) -> DocSummary:
    uid = (ds.get("uid") or "").strip()
    err = ds.find("error")
    if err is not None:
        return DocSummary(uid=uid, error=_text(err) or "error")
    pairs = [(_text(a.find("IdType")), _text(a.find("Value"))) for a in ds.iterfind("ArticleIds/ArticleId")]
    pmid, pmcid, doi = _ids_from_pairs(pairs)
    attrs = ds.find("Attributes")
    return DocSummary(
        uid=uid,
        title=_opt(ds.find("Title")),
        pubdate=_opt(ds.find("PubDate")),
        source=_opt(ds.find("Source")),
        authors=_texts(ds, "Authors/Author/Name"),
        pubtypes=_texts(ds, "PubType/flag"),
        doi=doi,
        pmid=pmid,
        pmcid=pmcid,
        has_abstract=None if attrs is None else "Has Abstract" in _texts(attrs, "flag"),
    )


def _esummary_json(data: bytes) -> list[DocSummary]:
    ep = "esummary"
    obj = _load_json(data, ep)
    bad = obj.get("esummaryresult")
    if bad is not None:  # invalid db etc.: an array of messages, not an object (EUTILS.md §7.3)
        msgs = _jstrs(bad) if isinstance(bad, list) else (_jstr(bad) or "error",)
        raise BadRequest(f"{ep}: {'; '.join(msgs) or 'error'}", endpoint=ep)
    result = _jdict(obj.get("result"), "result", ep)
    _json_error_check(result, ep)
    out: list[DocSummary] = []
    for uid_v in _jlist(result.get("uids")):
        uid = _jstr(uid_v)
        if uid is None:
            continue
        rec = result.get(uid)
        if not isinstance(rec, dict):
            out.append(DocSummary(uid=uid, error="missing from result"))
            continue
        if rec.get("error") is not None:
            out.append(DocSummary(uid=uid, error=_jstr(rec.get("error")) or "error"))
            continue
        pairs = [
            (k, v)
            for a in _jlist(rec.get("articleids"))
            if isinstance(a, dict) and (k := _jstr(a.get("idtype"))) and (v := _jstr(a.get("value")))
        ]
        pmid, pmcid, doi = _ids_from_pairs(pairs)
        attrs = rec.get("attributes")
        out.append(
            DocSummary(
                uid=uid,
                title=_jstr(rec.get("title")),
                pubdate=_jstr(rec.get("pubdate")),
                source=_jstr(rec.get("source")),
                authors=tuple(
                    n
                    for a in _jlist(rec.get("authors"))
                    if isinstance(a, dict) and (n := _jstr(a.get("name")))
                ),
                pubtypes=_jstrs(rec.get("pubtype")),
                doi=doi,
                pmid=pmid,
                pmcid=pmcid,
                has_abstract="Has Abstract" in _jstrs(attrs) if isinstance(attrs, list) else None,
            )
        )
    return out


def _esummary_xml(data: bytes) -> list[DocSummary]:
    root = _load_xml(data, "esummary", ("eSummaryResult",))
    out = [_docsum_v1(ds) for ds in root.iterfind("DocSum")]
    out.extend(_docsum_v2(ds) for ds in root.iterfind("DocumentSummarySet/DocumentSummary"))
    return out


@_guard("esummary")
def parse_esummary(data: bytes) -> list[DocSummary]:
    """ESummary v1 XML (``DocSum``), v2.0 XML (``DocumentSummarySet``) or JSON (``result.uids``).

    A bad uid among good ones is returned as ``DocSummary(uid, error=...)``; a refused request
    (invalid db, no ids) raises :class:`BadRequest`.
    """
    data = _as_bytes(data, "esummary")
    return _esummary_json(data) if _is_json(data, "esummary") else _esummary_xml(data)


# ----------------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------------


_LANG_NAMES = {
    "eng": "English",
    "fre": "French",
    "ger": "German",
    "spa": "Spanish",
    "ita": "Italian",
    "jpn": "Japanese",
    "chi": "Chinese",
    "rus": "Russian",
    "por": "Portuguese",
    "dut": "Dutch",
    "pol": "Polish",
    "und": "Undetermined",
}
_RECORD_STATUS = {
    "MEDLINE": "PubMed - indexed for MEDLINE",
    "OLDMEDLINE": "PubMed - indexed for MEDLINE",
    "Completed": "PubMed - indexed for MEDLINE",
    "In-Process": "PubMed - in process",
    "In-Data-Review": "PubMed - in process",
    "Publisher": "PubMed - as supplied by publisher",
    "PubMed-not-MEDLINE": "PubMed",
}


@dataclass(frozen=True, slots=True)
class DocSum:
    """Everything the three ESummary renderings (v1 XML, v2 XML, JSON) need for one uid.

    ``db`` selects the field set (pubmed or pmc, as in the recorded samples); ``error`` set means
    "cannot get document summary" for an unknown uid.
    """

    uid: str
    db: str = "pubmed"
    error: str | None = None
    pubdate: str = ""
    epubdate: str = ""
    source: str = ""
    authors: tuple[str, ...] = ()
    title: str = ""
    volume: str = ""
    issue: str = ""
    pages: str = ""
    langs: tuple[str, ...] = ()
    nlmuniqueid: str = ""
    issn: str = ""
    essn: str = ""
    pubtypes: tuple[str, ...] = ()
    recordstatus: str = ""
    pubstatus: str = ""
    articleids: tuple[tuple[str, str], ...] = ()
    history: tuple[tuple[str, str], ...] = ()
    has_abstract: bool = False
    pmcrefcount: int = 0
    fulljournalname: str = ""
    elocationid: str = ""
    sortdate: str = ""

    @property
    def so(self) -> str:
        """Citation source line as in esummary1.xml: ``1965 Aug;92(2):188-91``."""
        s = self.pubdate
        if self.volume:
            s += f";{self.volume}"
        if self.issue:
            s += f"({self.issue})"
        if self.pages:
            s += f":{self.pages}"
        return s


def _sortdate(year: str, month: str, day: str) -> str:
    if not year:
        return ""
    m = int(month) if month.isdigit() else _month_number(month)
    return f"{year}/{m or 1:02d}/{int(day if day.isdigit() else 1):02d} 00:00"


def docsum_from_pubmed(record: PubmedRecord, raw: bytes | None, *, pmcrefcount: int = 0) -> DocSum:
    """Summary of a PubMed record. Fields the typed record lacks (volume, pages, ISSN...) come from the raw
    ``PubmedArticle`` bytes, so summaries of real records carry real values."""
    root: etree._Element | None = None
    if raw:
        try:
            root = etree.fromstring(
                raw, etree.XMLParser(resolve_entities=False, no_network=True, recover=True)
            )
        except etree.XMLSyntaxError:
            root = None

    def find(path: str) -> str:
        return _path_text(root, path)

    # A world placeholder journal (``MedlineTA`` followed by the inferred mark) is no journal: as in EFetch
    # parsing and the ``[ta]`` index, the summary shows none rather than "Unknown".
    real_ta = real_medline_ta(root.find("MedlineCitation/MedlineJournalInfo") if root is not None else None)

    pd = "MedlineCitation/Article/Journal/JournalIssue/PubDate/"
    year, month, day = find(pd + "Year"), find(pd + "Month"), find(pd + "Day")
    pubdate = _pubdate_text(year, month, day, find(pd + "Season"), find(pd + "MedlineDate"))
    if root is None:
        pubdate = str(record.year or "")
        year = pubdate
    authors: list[str] = []
    history: list[tuple[str, str]] = []
    articleids: list[tuple[str, str]] = []
    epubdate = ""
    issn = essn = ""
    if root is not None:
        for au in root.iterfind("MedlineCitation/Article/AuthorList/Author"):
            coll = _itertext(au.find("CollectiveName"))
            name = coll or " ".join(
                x for x in (_itertext(au.find("LastName")), _itertext(au.find("Initials"))) if x
            )
            if name:
                authors.append(name)
        for d in root.iterfind("PubmedData/History/PubMedPubDate"):
            y, m, dd = _itertext(d.find("Year")), _itertext(d.find("Month")), _itertext(d.find("Day"))
            hh, mm = _itertext(d.find("Hour")) or "0", _itertext(d.find("Minute")) or "0"
            if y and m and dd:
                history.append(
                    (d.get("PubStatus", ""), f"{y}/{int(m):02d}/{int(dd):02d} {int(hh):02d}:{int(mm):02d}")
                )
        for aid in root.iterfind("PubmedData/ArticleIdList/ArticleId"):
            articleids.append((aid.get("IdType", "pubmed"), _itertext(aid)))
        ad = root.find("MedlineCitation/Article/ArticleDate")
        if ad is not None:
            epubdate = _pubdate_text(
                _itertext(ad.find("Year")), _itertext(ad.find("Month")), _itertext(ad.find("Day")), "", ""
            )
        for el in root.iterfind("MedlineCitation/Article/Journal/ISSN"):
            if el.get("IssnType") == "Electronic":
                essn = _itertext(el)
            else:
                issn = _itertext(el)
    else:
        authors = list(record.authors)
    if not articleids:
        articleids = [("pubmed", record.pmid)]
        if record.doi:
            articleids.append(("doi", record.doi))
        if record.pmcid:
            articleids.append(("pmc", record.pmcid))
    if record.pmcid and not any(t == "pmcid" for t, _ in articleids):
        articleids.append(("pmcid", f"pmc-id: {record.pmcid};"))
    eloc = ""
    if root is not None:
        for el in root.iterfind("MedlineCitation/Article/ELocationID"):
            eloc = f"{el.get('EIdType', 'doi')}: {_itertext(el)}"
            break
    pages = find("MedlineCitation/Article/Pagination/MedlinePgn")
    if not pages:
        sp, ep = (
            find("MedlineCitation/Article/Pagination/StartPage"),
            find("MedlineCitation/Article/Pagination/EndPage"),
        )
        pages = f"{sp}-{ep}" if sp and ep else sp
    return DocSum(
        uid=record.pmid,
        db="pubmed",
        pubdate=pubdate,
        epubdate=epubdate,
        source=real_ta or record.journal_iso or record.journal or "",
        authors=tuple(authors),
        title=record.title,
        volume=find("MedlineCitation/Article/Journal/JournalIssue/Volume"),
        issue=find("MedlineCitation/Article/Journal/JournalIssue/Issue"),
        pages=pages,
        langs=record.languages,
        nlmuniqueid=find("MedlineCitation/MedlineJournalInfo/NlmUniqueID"),
        issn=issn,
        essn=essn,
        # Inferred types are placeholders (PublicationType.inferred): left out, as ``[pt]`` leaves them out.
        pubtypes=tuple(pt.name for pt in record.publication_types if not pt.inferred),
        recordstatus=_RECORD_STATUS.get(record.status or "", "PubMed"),
        pubstatus=find("PubmedData/PublicationStatus"),
        articleids=tuple(articleids),
        history=tuple(history),
        has_abstract=record.has_abstract,
        pmcrefcount=pmcrefcount,
        fulljournalname=record.journal or "",
        elocationid=eloc,
        sortdate=_sortdate(year, month, day),
    )


def docsum_from_jats(uid: str, front: JatsFront) -> DocSum:
    """Summary of a PMC article in the field set of the [PROTO] ``esummary.pmc.*`` samples."""
    ids: list[tuple[str, str]] = []
    if front.pmid:
        ids.append(("pmid", front.pmid))
    ids.append(("pmcid", f"PMC{uid}"))
    if front.doi:
        ids.append(("doi", front.doi))
    year, month, day = front.pub_year, front.pub_month, front.pub_day
    pages = f"{front.fpage}-{front.lpage}" if front.fpage and front.lpage else front.fpage or front.elocation
    return DocSum(
        uid=uid,
        db="pmc",
        pubdate=_pubdate_text(year, month, day, "", ""),
        source=front.nlm_ta or front.journal_title,
        authors=tuple(f"{last} {initials}".strip() for last, _fore, initials in front.authors),
        title=front.title,
        volume=front.volume,
        issue=front.issue,
        pages=pages,
        articleids=tuple(ids),
        fulljournalname=front.journal_title,
        sortdate=_sortdate(year, month, day),
    )


def _docsum_v1_items(ds: DocSum) -> list[tuple[str, str, Any]]:
    """(Name, Type, value) in the order of esummary1.xml; value is str, int or a nested item list."""

    def lst(name: str, vals: Iterable[str]) -> list[tuple[str, str, Any]]:
        return [(name, "String", v) for v in vals]

    if ds.db == "pmc":
        return [
            ("PubDate", "Date", ds.pubdate),
            ("EPubDate", "Date", ds.epubdate),
            ("Source", "String", ds.source),
            ("AuthorList", "List", lst("Author", ds.authors)),
            ("Title", "String", ds.title),
            ("Volume", "String", ds.volume),
            ("Issue", "String", ds.issue),
            ("Pages", "String", ds.pages),
            ("ArticleIds", "List", [(t, "String", v) for t, v in ds.articleids]),
            ("FullJournalName", "String", ds.fulljournalname),
            ("SO", "String", ds.so),
        ]
    return [
        ("PubDate", "Date", ds.pubdate),
        ("EPubDate", "Date", ds.epubdate),
        ("Source", "String", ds.source),
        ("AuthorList", "List", lst("Author", ds.authors)),
        ("LastAuthor", "String", ds.authors[-1] if ds.authors else ""),
        ("Title", "String", ds.title),
        ("Volume", "String", ds.volume),
        ("Issue", "String", ds.issue),
        ("Pages", "String", ds.pages),
        ("LangList", "List", lst("Lang", (_LANG_NAMES.get(c, c) for c in ds.langs))),
        ("NlmUniqueID", "String", ds.nlmuniqueid),
        ("ISSN", "String", ds.issn),
        ("ESSN", "String", ds.essn),
        ("PubTypeList", "List", lst("PubType", ds.pubtypes)),
        ("RecordStatus", "String", ds.recordstatus),
        ("PubStatus", "String", ds.pubstatus),
        ("ArticleIds", "List", [(t, "String", v) for t, v in ds.articleids]),
        ("History", "List", [(s, "Date", d) for s, d in ds.history]),
        ("References", "List", []),
        ("HasAbstract", "Integer", 1 if ds.has_abstract else 0),
        ("PmcRefCount", "Integer", ds.pmcrefcount),
        ("FullJournalName", "String", ds.fulljournalname),
        ("ELocationID", "String", ds.elocationid),
        ("SO", "String", ds.so),
    ]


def _add_items(parent: etree._Element, items: list[tuple[str, str, Any]]) -> None:
    for name, typ, value in items:
        el = _sub(parent, "Item", Name=name, Type=typ)
        if isinstance(value, list):
            _add_items(el, value)
        else:
            el.text = _clean(str(value))


def esummary_v1_xml(docs: Sequence[DocSum]) -> bytes:
    """Version 1 ``eSummaryResult`` of ``DocSum``/``Item`` (esummary1.xml). An unknown uid becomes an
    ``<ERROR>`` sibling, which the v1 DTD allows (``(DocSum|ERROR)+``)."""
    root = etree.Element("eSummaryResult")
    for ds in docs:
        if ds.error:
            # [INF] live v1 wording for a bad uid; no recorded sample.
            _sub(root, "ERROR", f"UID={ds.uid}: {ds.error}")
            continue
        el = _sub(root, "DocSum")
        _sub(el, "Id", ds.uid)
        _add_items(el, _docsum_v1_items(ds))
    return ESUMMARY_PROLOG + _xml(root) + b"\n"


_ARTICLEID_TYPEN = {"pubmed": 1, "medline": 2, "doi": 3, "pii": 4, "pmcid": 5, "pmc": 8, "mid": 8}

# (json key, v2 XML element) in the order of the [PROTO] esummary.pubmed.* samples.
_V2_PUBMED_KEYS: tuple[tuple[str, str], ...] = (
    ("pubdate", "PubDate"),
    ("epubdate", "EPubDate"),
    ("source", "Source"),
    ("authors", "Authors"),
    ("lastauthor", "LastAuthor"),
    ("title", "Title"),
    ("sorttitle", "SortTitle"),
    ("volume", "Volume"),
    ("issue", "Issue"),
    ("pages", "Pages"),
    ("lang", "Lang"),
    ("nlmuniqueid", "NlmUniqueID"),
    ("issn", "ISSN"),
    ("essn", "ESSN"),
    ("pubtype", "PubType"),
    ("recordstatus", "RecordStatus"),
    ("pubstatus", "PubStatus"),
    ("articleids", "ArticleIds"),
    ("history", "History"),
    ("references", "References"),
    ("attributes", "Attributes"),
    ("pmcrefcount", "PmcRefCount"),
    ("fulljournalname", "FullJournalName"),
    ("elocationid", "ELocationID"),
    ("viewcount", "ViewCount"),
    ("doctype", "DocType"),
    ("srccontriblist", "SrcContribList"),
    ("booktitle", "BookTitle"),
    ("medium", "Medium"),
    ("edition", "Edition"),
    ("publisherlocation", "PublisherLocation"),
    ("publishername", "PublisherName"),
    ("srcdate", "SrcDate"),
    ("reportnumber", "ReportNumber"),
    ("availablefromurl", "AvailableFromURL"),
    ("locationlabel", "LocationLabel"),
    ("doccontriblist", "DocContribList"),
    ("docdate", "DocDate"),
    ("bookname", "BookName"),
    ("chapter", "Chapter"),
    ("sortpubdate", "SortPubDate"),
    ("sortfirstauthor", "SortFirstAuthor"),
)
_V2_PMC_KEYS: tuple[tuple[str, str], ...] = (
    ("pubdate", "PubDate"),
    ("epubdate", "EPubDate"),
    ("source", "Source"),
    ("authors", "Authors"),
    ("title", "Title"),
    ("volume", "Volume"),
    ("issue", "Issue"),
    ("pages", "Pages"),
    ("articleids", "ArticleIds"),
    ("fulljournalname", "FullJournalName"),
    ("sortdate", "SortDate"),
    ("pmclivedate", "PmcLiveDate"),
)


def _sorttitle(title: str) -> str:
    t = re.sub(r"[^\w\s]", "", title.lower())
    for article in ("the ", "a ", "an "):
        if t.startswith(article):
            t = t[len(article) :]
            break
    return t


def _v2_values(ds: DocSum) -> dict[str, Any]:
    """JSON-typed values of one summary (strings, lists, and the few ints NCBI sends as numbers)."""
    if ds.db == "pmc":
        return {
            "pubdate": ds.pubdate,
            "epubdate": ds.epubdate,
            "source": ds.source,
            "authors": [{"name": a, "authtype": "Author"} for a in ds.authors],
            "title": ds.title,
            "volume": ds.volume,
            "issue": ds.issue,
            "pages": ds.pages,
            "articleids": [{"idtype": t, "value": v} for t, v in ds.articleids],
            "fulljournalname": ds.fulljournalname,
            "sortdate": ds.sortdate,
            "pmclivedate": "",
        }
    return {
        "pubdate": ds.pubdate,
        "epubdate": ds.epubdate,
        "source": ds.source,
        "authors": [{"name": a, "authtype": "Author", "clusterid": ""} for a in ds.authors],
        "lastauthor": ds.authors[-1] if ds.authors else "",
        "title": ds.title,
        "sorttitle": _sorttitle(ds.title),
        "volume": ds.volume,
        "issue": ds.issue,
        "pages": ds.pages,
        "lang": list(ds.langs),
        "nlmuniqueid": ds.nlmuniqueid,
        "issn": ds.issn,
        "essn": ds.essn,
        "pubtype": list(ds.pubtypes),
        "recordstatus": ds.recordstatus,
        "pubstatus": ds.pubstatus,
        "articleids": [
            {"idtype": t, "idtypen": _ARTICLEID_TYPEN.get(t, 8), "value": v} for t, v in ds.articleids
        ],
        "history": [{"pubstatus": s, "date": d} for s, d in ds.history],
        "references": [],
        "attributes": ["Has Abstract"] if ds.has_abstract else [],
        "pmcrefcount": ds.pmcrefcount,
        "fulljournalname": ds.fulljournalname,
        "elocationid": ds.elocationid,
        "viewcount": 0,
        "doctype": "citation",
        "srccontriblist": [],
        "booktitle": "",
        "medium": "",
        "edition": "",
        "publisherlocation": "",
        "publishername": "",
        "srcdate": "",
        "reportnumber": "",
        "availablefromurl": "",
        "locationlabel": "",
        "doccontriblist": [],
        "docdate": "",
        "bookname": "",
        "chapter": "",
        "sortpubdate": ds.sortdate,
        "sortfirstauthor": ds.authors[0] if ds.authors else "",
    }


def esummary_v2_json(docs: Sequence[DocSum]) -> bytes:
    """``result.uids`` + one object per uid; unknown uid -> ``{"uid", "error"}`` (esummary.pmcerror.json)."""
    result: dict[str, Any] = {"uids": [d.uid for d in docs]}
    for ds in docs:
        if ds.error:
            result[ds.uid] = {"uid": ds.uid, "error": ds.error}
        else:
            result[ds.uid] = {"uid": ds.uid, **_v2_values(ds)}
    return _json({"header": _header("esummary"), "result": result})


def _v2_element(parent: etree._Element, tag: str, key: str, value: Any) -> None:
    el = _sub(parent, tag)
    if key == "authors":
        for a in value:
            au = _sub(el, "Author")
            _sub(au, "Name", a["name"])
            _sub(au, "AuthType", a["authtype"])
            if "clusterid" in a:
                _sub(au, "ClusterID", a["clusterid"])
    elif key == "articleids":
        for a in value:
            ai = _sub(el, "ArticleId")
            _sub(ai, "IdType", a["idtype"])
            if "idtypen" in a:
                _sub(ai, "IdTypeN", str(a["idtypen"]))
            _sub(ai, "Value", a["value"])
    elif key == "history":
        for h in value:
            hd = _sub(el, "PubMedPubDate")
            _sub(hd, "PubStatus", h["pubstatus"])
            _sub(hd, "Date", h["date"])
    elif isinstance(value, list):
        child = {"lang": "string", "pubtype": "flag", "attributes": "flag"}.get(key, "string")
        for v in value:
            _sub(el, child, str(v))
    else:
        el.text = _clean(str(value))


def esummary_v2_xml(docs: Sequence[DocSum], *, db: str = "pubmed", build: str | None = None) -> bytes:
    """``version=2.0``: ``DocumentSummarySet status="OK"`` > (``DbBuild``) ``DocumentSummary uid=…``, under
    the per-database DOCTYPE NCBI sends (``esummary_<db>.dtd``, served by :func:`esummary_v2_dtd`)."""
    root = etree.Element("eSummaryResult")
    dss = _sub(root, "DocumentSummarySet", status="OK")
    if build:
        _sub(dss, "DbBuild", build)
    for ds in docs:
        el = _sub(dss, "DocumentSummary", uid=ds.uid)
        if ds.error:
            _sub(el, "error", ds.error)
            continue
        values = _v2_values(ds)
        for key, tag in _V2_PMC_KEYS if ds.db == "pmc" else _V2_PUBMED_KEYS:
            _v2_element(el, tag, key, values[key])
    return esummary_v2_prolog(db) + _xml(root) + b"\n"


# Containers and what they hold; structures are sequences of optional members, which Biopython reads as
# dictionaries (a repeated choice would read as a bare list), the style of NCBI's own esummary_gene.dtd.
_V2_LISTS = {
    "Authors": "Author",
    "SrcContribList": "Author",
    "DocContribList": "Author",
    "Lang": "string",
    "PubType": "flag",
    "Attributes": "flag",
    "ArticleIds": "ArticleId",
    "History": "PubMedPubDate",
    "References": "Reference",
}
_V2_STRUCTS = {
    "Author": ("Name", "AuthType", "ClusterID"),
    "ArticleId": ("IdType", "IdTypeN", "Value"),
    "PubMedPubDate": ("PubStatus", "Date"),
    "Reference": ("RefSource", "RefType", "PMID", "Note"),
}


def esummary_v2_dtd(db: str) -> bytes:
    """The DTD named by the v2 DOCTYPE for ``db`` (pubmed, pmc), declaring exactly what the writer emits."""
    members = [tag for _, tag in (_V2_PMC_KEYS if db == "pmc" else _V2_PUBMED_KEYS)]
    lines = [f"<!-- DocSum DTD for {db} database (CoMeta local E-utilities) -->", ""]
    declared: set[str] = set()

    def element(name: str, model: str) -> None:
        if name not in declared:
            declared.add(name)
            lines.append(f"<!ELEMENT\t{name}\t{model}>")

    for struct, fields in _V2_STRUCTS.items():
        for name in fields:
            element(name, "(#PCDATA)")
        element(struct, "(" + ", ".join(f"{f}?" for f in fields) + ")")
    element("string", "(#PCDATA)")
    element("flag", "(#PCDATA)")
    for name in members:
        element(name, f"({_V2_LISTS[name]})*" if name in _V2_LISTS else "(#PCDATA)")
    element("error", "(#PCDATA)")
    element("DocumentSummary", "((" + ", ".join(f"{m}?" for m in members) + ") | error)")
    lines.append("<!ATTLIST DocumentSummary uid CDATA #IMPLIED>")
    element("DbBuild", "(#PCDATA)")
    element("DocumentSummarySet", "(DbBuild?, DocumentSummary*)")
    lines.append("<!ATTLIST DocumentSummarySet status CDATA #REQUIRED>")
    element("eSummaryResult", "(DocumentSummarySet?)")
    return ("\n".join(lines) + "\n").encode()


def esummary_error_xml(message: str) -> bytes:
    """E3/E9: ``<eSummaryResult><ERROR>…</ERROR></eSummaryResult>`` (esummary8.xml)."""
    root = etree.Element("eSummaryResult")
    _sub(root, "ERROR", message)
    return ESUMMARY_PROLOG + _xml(root) + b"\n"


def esummary_error_json(message: str) -> bytes:
    """E3: an *array* under ``esummaryresult`` (esummary.error.json), not an object."""
    return _json({"header": _header("esummary"), "esummaryresult": [message]})

"""Exact response bodies of the local E-utilities server, and the PubMed XML record writer.

Every builder returns ``bytes`` ready to send. Prologs (XML declaration + DOCTYPE) are the strings recorded
from NCBI in 2025 (``docs/EUTILS.md`` §5.2, §6.2, §6.4, §7.2, §8.2, §9.2); element names and nesting follow
the recorded samples so that a client written against live NCBI parses our output unchanged. JSON bodies
follow NCBI's envelope (``{"header": {...}, "<utility>result": ...}``) with numbers as strings where NCBI
sends strings.

The functions here are pure: no I/O, no corpus access. :mod:`retrieval.ncbi._server` decides *what* to answer,
this module decides *how it looks on the wire*.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from ._models import ESearchResult, PubmedRecord

__all__ = [
    "EFETCH_PROLOG",
    "EINFO_PROLOG",
    "ELINK_PROLOG",
    "EPOST_PROLOG",
    "ESEARCH_PROLOG",
    "ESPELL_PROLOG",
    "ESUMMARY_PROLOG",
    "ESUMMARY_V2_PROLOG",
    "PMC_ARTICLESET_PROLOG",
    "PMC_RESTRICTED_COMMENT",
    "PUBMED_ARTICLESET_PROLOG",
    "PUBMED_FIELDS",
    "DocSum",
    "JatsFront",
    "LinkSetData",
    "LinkSetDbData",
    "PubmedXmlExtras",
    "docsum_from_jats",
    "docsum_from_pubmed",
    "efetch_error_xml",
    "einfo_dbinfo_json",
    "einfo_dbinfo_xml",
    "einfo_dblist_json",
    "einfo_dblist_xml",
    "einfo_error_json",
    "einfo_error_xml",
    "elink_error_json",
    "elink_error_xml",
    "elink_json",
    "elink_xml",
    "epost_error_xml",
    "epost_xml",
    "esearch_count_json",
    "esearch_count_xml",
    "esearch_error_json",
    "esearch_error_xml",
    "esearch_json",
    "esearch_xml",
    "espell_xml",
    "esummary_error_json",
    "esummary_error_xml",
    "esummary_v1_xml",
    "esummary_v2_json",
    "esummary_v2_xml",
    "nlm_category",
    "pmc_articleset",
    "pmfetch_html",
    "pubmed_article_xml",
    "pubmed_articleset",
    "ratelimit_json",
    "read_jats_front",
    "restrict_pmc_article",
    "server_error_html",
]

# --------------------------------------------------------------------------------------------------------
# Prologs, verbatim from the 2025 recordings (biopython_Tests_Entrez/*).
# --------------------------------------------------------------------------------------------------------

ESEARCH_PROLOG = (
    b'<?xml version="1.0" encoding="UTF-8" ?>\n'
    b'<!DOCTYPE eSearchResult PUBLIC "-//NLM//DTD esearch 20060628//EN" '
    b'"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20060628/esearch.dtd">\n'
)
ESUMMARY_PROLOG = (
    b'<?xml version="1.0" encoding="UTF-8" ?>\n'
    b'<!DOCTYPE eSummaryResult PUBLIC "-//NLM//DTD esummary v1 20041029//EN" '
    b'"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20041029/esummary-v1.dtd">\n'
)
# No 2025 recording of version=2.0 exists; this is the DOCTYPE of the [PROTO] sample (esummary.pubmed.xml)
# with https, chosen over inventing a newer identifier.
ESUMMARY_V2_PROLOG = (
    b'<?xml version="1.0" encoding="UTF-8" ?>\n'
    b'<!DOCTYPE eSummaryResult PUBLIC "-//NLM//DTD eSummaryResult//EN" '
    b'"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20041029/esummary-v1.dtd">\n'
)
ELINK_PROLOG = (
    b'<?xml version="1.0" encoding="UTF-8" ?>\n'
    b'<!DOCTYPE eLinkResult PUBLIC "-//NLM//DTD elink 20101123//EN" '
    b'"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20101123/elink.dtd">\n'
)
EINFO_PROLOG = (
    b'<?xml version="1.0" encoding="UTF-8" ?>\n'
    b'<!DOCTYPE eInfoResult PUBLIC "-//NLM//DTD einfo 20190110//EN" '
    b'"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20190110/einfo.dtd">\n'
)
EPOST_PROLOG = (
    b'<?xml version="1.0" encoding="UTF-8" ?>\n'
    b'<!DOCTYPE ePostResult PUBLIC "-//NLM//DTD epost 20090526//EN" '
    b'"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20090526/epost.dtd">'
)
ESPELL_PROLOG = (
    b'<?xml version="1.0"?>\n'
    b'<!DOCTYPE eSpellResult PUBLIC "-//NLM//DTD eSpellResult, 23 November 2004//EN" '
    b'"https://www.ncbi.nlm.nih.gov/entrez/query/DTD/eSpell.dtd">\n'
)
# [INF] EFetch's own error envelope (no recorded sample); the DTD identifier is the one NCBI serves.
EFETCH_PROLOG = (
    b'<?xml version="1.0" encoding="UTF-8" ?>\n'
    b'<!DOCTYPE eEfetchResult PUBLIC "-//NLM//DTD efetch 20131226//EN" '
    b'"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20131226/efetch.dtd">\n'
)
PUBMED_ARTICLESET_PROLOG = (
    b'<?xml version="1.0" ?>\n'
    b'<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
    b'"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
)
PMC_ARTICLESET_PROLOG = (
    b'<?xml version="1.0" ?>\n'
    b'<!DOCTYPE pmc-articleset PUBLIC "-//NLM//DTD ARTICLE SET 2.0//EN" '
    b'"https://dtd.nlm.nih.gov/ncbi/pmc/articleset/nlm-articleset-2.0.dtd">\n'
)
PMC_RESTRICTED_COMMENT = (
    b"<!--The publisher of this article does not allow downloading of the full text in XML form.-->"
)

_JSON_VERSION = "0.3"


def _xml(root: etree._Element) -> bytes:
    return etree.tostring(root, encoding="UTF-8", xml_declaration=False)


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    el = etree.SubElement(parent, tag, attrs)
    if text is not None:
        el.text = _clean(text)
    return el


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    """lxml refuses control characters; real records never carry them, user-dropped files might."""
    return _XML_ILLEGAL.sub("", text)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _header(kind: str) -> dict[str, str]:
    return {"type": kind, "version": _JSON_VERSION}


# --------------------------------------------------------------------------------------------------------
# ESearch (§5)
# --------------------------------------------------------------------------------------------------------


def esearch_xml(result: ESearchResult) -> bytes:
    """Full ``eSearchResult``; ErrorList/WarningList only when they have members (esearch8.xml)."""
    root = etree.Element("eSearchResult")
    _sub(root, "Count", str(result.count))
    _sub(root, "RetMax", str(result.retmax))
    _sub(root, "RetStart", str(result.retstart))
    if result.query_key is not None and result.webenv is not None:
        _sub(root, "QueryKey", result.query_key)
        _sub(root, "WebEnv", result.webenv)
    idlist = _sub(root, "IdList")
    for uid in result.ids:
        _sub(idlist, "Id", uid)
    tset = _sub(root, "TranslationSet")
    for src, dst in result.translations:
        tr = _sub(tset, "Translation")
        _sub(tr, "From", src)
        _sub(tr, "To", dst)
    _sub(root, "QueryTranslation", result.query_translation or "")
    if result.phrases_not_found:
        errs = _sub(root, "ErrorList")
        for phrase in result.phrases_not_found:
            _sub(errs, "PhraseNotFound", phrase)
    if result.phrases_ignored or result.quoted_phrases_not_found or result.output_messages:
        warns = _sub(root, "WarningList")
        for phrase in result.phrases_ignored:
            _sub(warns, "PhraseIgnored", phrase)
        for phrase in result.quoted_phrases_not_found:
            _sub(warns, "QuotedPhraseNotFound", phrase)
        for msg in result.output_messages:
            _sub(warns, "OutputMessage", msg)
    # The recordings break lines inside IdList only; keep that so the bodies diff cleanly against them.
    body = _xml(root).replace(b"<IdList><Id>", b"<IdList>\n<Id>").replace(b"</Id>", b"</Id>\n")
    return ESEARCH_PROLOG + body + b"\n"


def esearch_json(result: ESearchResult) -> bytes:
    res: dict[str, Any] = {
        "count": str(result.count),
        "retmax": str(result.retmax),
        "retstart": str(result.retstart),
    }
    if result.query_key is not None and result.webenv is not None:
        res["querykey"] = result.query_key
        res["webenv"] = result.webenv
    res["idlist"] = list(result.ids)
    res["translationset"] = [{"from": src, "to": dst} for src, dst in result.translations]
    res["querytranslation"] = result.query_translation or ""
    if result.phrases_not_found:
        # fieldsnotfound is always [] in NCBI JSON (the DTD annotation selects a non-existent element, §5.4).
        res["errorlist"] = {"phrasesnotfound": list(result.phrases_not_found), "fieldsnotfound": []}
    if result.phrases_ignored or result.quoted_phrases_not_found or result.output_messages:
        res["warninglist"] = {
            "phrasesignored": list(result.phrases_ignored),
            "quotedphrasesnotfound": list(result.quoted_phrases_not_found),
            "outputmessages": list(result.output_messages),
        }
    return _json({"header": _header("esearch"), "esearchresult": res})


def esearch_count_xml(count: int) -> bytes:
    """``rettype=count``: "displays only the <Count> tag" [DOC]."""
    return ESEARCH_PROLOG + b"<eSearchResult><Count>" + str(count).encode() + b"</Count></eSearchResult>\n"


def esearch_count_json(count: int) -> bytes:
    return _json({"header": _header("esearch"), "esearchresult": {"count": str(count)}})


def esearch_error_xml(message: str) -> bytes:
    root = etree.Element("eSearchResult")
    _sub(root, "ERROR", message)
    return ESEARCH_PROLOG + _xml(root) + b"\n"


def esearch_error_json(message: str) -> bytes:
    return _json({"header": _header("esearch"), "esearchresult": {"ERROR": message}})


# --------------------------------------------------------------------------------------------------------
# ESummary (§7)
# --------------------------------------------------------------------------------------------------------

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
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


def _pubdate_text(year: str, month: str, day: str, season: str, medline: str) -> str:
    if medline:
        return medline
    parts = [year] if year else []
    if month:
        parts.append(_MONTHS[int(month) - 1] if month.isdigit() and 1 <= int(month) <= 12 else month)
        if day:
            parts.append(str(int(day)) if day.isdigit() else day)
    elif season:
        parts.append(season)
    return " ".join(parts)


def _sortdate(year: str, month: str, day: str) -> str:
    if not year:
        return ""
    m = month if month.isdigit() else _month_number(month)
    return f"{year}/{int(m or 1):02d}/{int(day if day.isdigit() else 1):02d} 00:00"


def _month_number(month: str) -> str:
    try:
        return str(_MONTHS.index(month[:3].title()) + 1)
    except ValueError:
        return ""


def _text(el: etree._Element | None) -> str:
    if el is None:
        return ""
    return " ".join("".join(str(t) for t in el.itertext()).split())


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
        return _text(root.find(path)) if root is not None else ""

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
            coll = _text(au.find("CollectiveName"))
            name = coll or " ".join(x for x in (_text(au.find("LastName")), _text(au.find("Initials"))) if x)
            if name:
                authors.append(name)
        for d in root.iterfind("PubmedData/History/PubMedPubDate"):
            y, m, dd = _text(d.find("Year")), _text(d.find("Month")), _text(d.find("Day"))
            hh, mm = _text(d.find("Hour")) or "0", _text(d.find("Minute")) or "0"
            if y and m and dd:
                history.append(
                    (d.get("PubStatus", ""), f"{y}/{int(m):02d}/{int(dd):02d} {int(hh):02d}:{int(mm):02d}")
                )
        for aid in root.iterfind("PubmedData/ArticleIdList/ArticleId"):
            articleids.append((aid.get("IdType", "pubmed"), _text(aid)))
        ad = root.find("MedlineCitation/Article/ArticleDate")
        if ad is not None:
            epubdate = _pubdate_text(
                _text(ad.find("Year")), _text(ad.find("Month")), _text(ad.find("Day")), "", ""
            )
        for el in root.iterfind("MedlineCitation/Article/Journal/ISSN"):
            if el.get("IssnType") == "Electronic":
                essn = _text(el)
            else:
                issn = _text(el)
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
            eloc = f"{el.get('EIdType', 'doi')}: {_text(el)}"
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
        source=find("MedlineCitation/MedlineJournalInfo/MedlineTA")
        or record.journal_iso
        or record.journal
        or "",
        authors=tuple(authors),
        title=record.title,
        volume=find("MedlineCitation/Article/Journal/JournalIssue/Volume"),
        issue=find("MedlineCitation/Article/Journal/JournalIssue/Issue"),
        pages=pages,
        langs=record.languages,
        nlmuniqueid=find("MedlineCitation/MedlineJournalInfo/NlmUniqueID"),
        issn=issn,
        essn=essn,
        pubtypes=tuple(pt.name for pt in record.publication_types),
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


def esummary_v2_xml(docs: Sequence[DocSum]) -> bytes:
    """``version=2.0``: ``DocumentSummarySet status="OK"`` > ``DocumentSummary uid=…`` ([PROTO] samples)."""
    root = etree.Element("eSummaryResult")
    dss = _sub(root, "DocumentSummarySet", status="OK")
    for ds in docs:
        el = _sub(dss, "DocumentSummary", uid=ds.uid)
        if ds.error:
            _sub(el, "error", ds.error)
            continue
        values = _v2_values(ds)
        for key, tag in _V2_PMC_KEYS if ds.db == "pmc" else _V2_PUBMED_KEYS:
            _v2_element(el, tag, key, values[key])
    return ESUMMARY_V2_PROLOG + _xml(root) + b"\n"


def esummary_error_xml(message: str) -> bytes:
    """E3/E9: ``<eSummaryResult><ERROR>…</ERROR></eSummaryResult>`` (esummary8.xml)."""
    root = etree.Element("eSummaryResult")
    _sub(root, "ERROR", message)
    return ESUMMARY_PROLOG + _xml(root) + b"\n"


def esummary_error_json(message: str) -> bytes:
    """E3: an *array* under ``esummaryresult`` (esummary.error.json), not an object."""
    return _json({"header": _header("esummary"), "esummaryresult": [message]})


# --------------------------------------------------------------------------------------------------------
# EFetch (§6)
# --------------------------------------------------------------------------------------------------------


def pubmed_articleset(articles: Iterable[bytes]) -> bytes:
    """Wrap raw ``<PubmedArticle>`` bytes under the 2025 prolog, laid out exactly as pubmed1.xml: a newline
    after the opening tag, the articles back to back, no newline at the end."""
    parts = [PUBMED_ARTICLESET_PROLOG, b"<PubmedArticleSet>\n"]
    parts += [raw.strip() for raw in articles]
    parts.append(b"</PubmedArticleSet>")
    return b"".join(parts)


def pmc_articleset(articles: Iterable[bytes]) -> bytes:
    """Wrap raw JATS ``<article>`` bytes in ``<pmc-articleset>`` as EFetch db=pmc does (efetch_pmc.xml)."""
    parts = [PMC_ARTICLESET_PROLOG, b"<pmc-articleset>"]
    for raw in articles:
        parts += [raw.strip(), b"\n"]
    parts.append(b"</pmc-articleset>")
    return b"".join(parts)


_BODY_RE = re.compile(rb"<body[\s>].*?</body>\s*", re.DOTALL)
_BODY_EMPTY_RE = re.compile(rb"<body\s*/>\s*")


def restrict_pmc_article(raw: bytes) -> bytes:
    """Publisher-restricted form (E15): no ``<body>``, the NCBI comment right after ``</front>``."""
    out, n = _BODY_RE.subn(b"", raw, count=1)
    if not n:
        out = _BODY_EMPTY_RE.sub(b"", out, count=1)
    return out.replace(b"</front>", b"</front>" + PMC_RESTRICTED_COMMENT, 1)


def efetch_error_xml(message: str) -> bytes:
    """[INF] ``<eFetchResult><ERROR>…</ERROR></eFetchResult>`` — e.g. "Empty id list - nothing todo"."""
    root = etree.Element("eFetchResult")
    _sub(root, "ERROR", message)
    return EFETCH_PROLOG + _xml(root) + b"\n"


def pmfetch_html(pmid: str, title: str, journal: str = "", year: int | None = None) -> bytes:
    """An HTML "PmFetch response" page wrapping ASN.1 text, the shape of pubmed3.html (E12).

    Generated from our own record so the package ships no copy of the recorded file; the fault switch
    only needs a body a client must reject as non-XML.
    """
    q = html.escape
    lines = [
        "<html><head><title>PmFetch response</title></head><body>",
        "<pre>",
        "Pubmed-entry ::= {",
        f"  pmid {pmid},",
        "  medent {",
        "    cit {",
        "      title {",
        f"        name {q(json.dumps(title, ensure_ascii=False))}",
        "      },",
        "      from journal {",
        "        title {",
        f"          iso-jta {q(json.dumps(journal, ensure_ascii=False))}",
        "        },",
        "        imp {",
        f"          date std {{ year {year or 0} }}",
        "        }",
        "      }",
        "    }",
        "  }",
        "}",
        "</pre>",
        "</body></html>",
        "",
    ]
    return "\n".join(lines).encode("utf-8")


def server_error_html() -> bytes:
    return (
        b"<html><head><title>500 Internal Server Error</title></head>"
        b"<body><h1>Internal Server Error</h1></body></html>\n"
    )


# --------------------------------------------------------------------------------------------------------
# ELink (§8)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinkSetDbData:
    dbto: str
    linkname: str
    links: tuple[str, ...] = ()
    query_key: str | None = None  # set for cmd=neighbor_history (LinkSetDbHistory)


@dataclass(frozen=True, slots=True)
class LinkSetData:
    """One ``LinkSet``: the input ids (one, or a batch for a comma list) and its non-empty link blocks."""

    dbfrom: str
    ids: tuple[str, ...]
    dbs: tuple[LinkSetDbData, ...] = ()
    webenv: str | None = None


def elink_xml(linksets: Sequence[LinkSetData]) -> bytes:
    root = etree.Element("eLinkResult")
    for ls in linksets:
        el = _sub(root, "LinkSet")
        _sub(el, "DbFrom", ls.dbfrom)
        idl = _sub(el, "IdList")
        for uid in ls.ids:
            _sub(idl, "Id", uid)
        if ls.webenv is not None:
            for db in ls.dbs:
                h = _sub(el, "LinkSetDbHistory")
                _sub(h, "DbTo", db.dbto)
                _sub(h, "LinkName", db.linkname)
                _sub(h, "QueryKey", db.query_key or "")
            _sub(el, "WebEnv", ls.webenv)
            continue
        for db in ls.dbs:
            d = _sub(el, "LinkSetDb")
            _sub(d, "DbTo", db.dbto)
            _sub(d, "LinkName", db.linkname)
            for uid in db.links:
                _sub(_sub(d, "Link"), "Id", uid)
    return ELINK_PROLOG + _xml(root) + b"\n"


def elink_json(linksets: Sequence[LinkSetData]) -> bytes:
    """[3P] shape: ``linksets[{dbfrom, ids, linksetdbs[{dbto, linkname, links}]}]``; no ``linksetdbs`` key
    when nothing links (E16)."""
    out: list[dict[str, Any]] = []
    for ls in linksets:
        item: dict[str, Any] = {"dbfrom": ls.dbfrom, "ids": list(ls.ids)}
        if ls.webenv is not None:
            item["linksetdbhistories"] = [
                {"dbto": d.dbto, "linkname": d.linkname, "querykey": d.query_key or ""} for d in ls.dbs
            ]
            item["webenv"] = ls.webenv
        elif ls.dbs:
            item["linksetdbs"] = [
                {"dbto": d.dbto, "linkname": d.linkname, "links": list(d.links)} for d in ls.dbs
            ]
        out.append(item)
    return _json({"header": _header("elink"), "linksets": out})


def elink_error_xml(message: str) -> bytes:
    root = etree.Element("eLinkResult")
    _sub(root, "ERROR", message)
    return ELINK_PROLOG + _xml(root) + b"\n"


def elink_error_json(message: str) -> bytes:
    return _json({"header": _header("elink"), "ERROR": message})


# --------------------------------------------------------------------------------------------------------
# EInfo (§9)
# --------------------------------------------------------------------------------------------------------

# (Name, FullName, Description, flags IsDate/IsNumerical/SingleToken/Hierarchy/IsHidden) from einfo2.xml.
PUBMED_FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("ALL", "All Fields", "All terms from all searchable fields", "NNNNN"),
    ("UID", "UID", "Unique number assigned to publication", "NYYNY"),
    ("FILT", "Filter", "Limits the records", "NNYNN"),
    ("TITL", "Title", "Words in title of publication", "NNNNN"),
    ("MESH", "MeSH Terms", "Medical Subject Headings assigned to publication", "NNYYN"),
    ("MAJR", "MeSH Major Topic", "MeSH terms of major importance to publication", "NNYYN"),
    ("JOUR", "Journal", "Journal abbreviation of publication", "NNYNN"),
    ("AFFL", "Affiliation", "Author's institutional affiliation and address", "NNNNN"),
    ("ECNO", "EC/RN Number", "EC number for enzyme or CAS registry number", "NNYNN"),
    ("SUBS", "Supplementary Concept", "CAS chemical name or MEDLINE Substance Name", "NNYNN"),
    ("PDAT", "Date - Publication", "Date of publication", "YNYNN"),
    ("EDAT", "Date - Entry", "Date publication first accessible through Entrez", "YNYNN"),
    ("VOL", "Volume", "Volume number of publication", "NNYNN"),
    ("PAGE", "Pagination", "Page number(s) of publication", "NNYNN"),
    ("PTYP", "Publication Type", "Type of publication (e.g., review)", "NNYYN"),
    ("LANG", "Language", "Language of publication", "NNYNN"),
    ("ISS", "Issue", "Issue number of publication", "NNYNN"),
    ("SUBH", "MeSH Subheading", "Additional specificity for MeSH term", "NNYYN"),
    ("SI", "Secondary Source ID", "Cross-reference from publication to other databases", "NNYNN"),
    ("MHDA", "Date - MeSH", "Date publication was indexed with MeSH terms", "YNYNN"),
    ("TIAB", "Title/Abstract", "Free text associated with Abstract/Title", "NNNNN"),
    ("OTRM", "Other Term", "Other terms associated with publication", "NNNNN"),
    ("COLN", "Author - Corporate", "Corporate Author of publication", "NNNNN"),
    ("CNTY", "Place of Publication", "Country of publication", "NNNNY"),
    ("PAPX", "Pharmacological Action", "MeSH pharmacological action pre-explosions", "NNYNN"),
    ("GRNT", "Grants and Funding", "NIH Grant Numbers", "NNYNN"),
    ("MDAT", "Date - Modification", "Date of last modification", "YNYNN"),
    ("CDAT", "Date - Completion", "Date of completion", "YNYNN"),
    ("PID", "Publisher ID", "Publisher ID", "NNYNY"),
    ("FAUT", "Author - First", "First Author of publication", "NNYNN"),
    ("FULL", "Author", "Full Author Name(s) of publication", "NNYNN"),
    ("FINV", "Investigator", "Full name of investigator", "NNYNN"),
    ("TT", "Transliterated Title", "Words in transliterated title of publication", "NNNNN"),
    ("LAUT", "Author - Last", "Last Author of publication", "NNYNN"),
    ("PPDT", "Print Publication Date", "Date of print publication", "YNYNY"),
    ("EPDT", "Electronic Publication Date", "Date of Electronic publication", "YNYNY"),
    ("LID", "Location ID", "ELocation ID", "NNYNN"),
    ("CRDT", "Date - Create", "Date publication first accessible through Entrez", "YNYNN"),
    ("BOOK", "Book", "ID of the book that contains the document", "NNYNN"),
    ("ED", "Editor", "Section's Editor", "NNYNN"),
    ("ISBN", "ISBN", "ISBN", "NNYNN"),
    ("PUBN", "Publisher", "Publisher's name", "NNYNN"),
    ("AUCL", "Author Cluster ID", "Author Cluster ID", "NNYNY"),
    ("EID", "Extended PMID", "Extended PMID", "NNYNY"),
    ("DSO", "DSO", "Additional text from the summary", "NNNNY"),
    ("AUID", "Author - Identifier", "Author Identifier", "NNYNN"),
    ("PS", "Subject - Personal Name", "Personal Name as Subject", "NNYNN"),
    ("COIS", "Conflict of Interest Statements", "Conflict of Interest Statements", "NNNNN"),
    ("WORD", "Text Word", "Free text associated with publication", "NNNNN"),
    ("P1DAT", "P1DAT", "Date publication first accessible through Solr", "YNYNY"),
)
# No PMC EInfo was recorded (§9.2 [GUIDE]); a hand-written subset of the fields the local index serves.
_PMC_FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("ALL", "All Fields", "All terms from all searchable fields", "NNNNN"),
    ("UID", "UID", "Unique number assigned to publication", "NYYNY"),
    ("TITL", "Title", "Words in title of publication", "NNNNN"),
    ("ABST", "Abstract", "Abstract", "NNNNN"),
    ("BODY", "Body - All Words", "Body - All Words", "NNNNN"),
    ("JOUR", "Journal", "Journal abbreviation of publication", "NNYNN"),
    ("PDAT", "Publication Date", "The date that the article was published", "YNYNN"),
    ("PMID", "PubMed ID", "PubMed ID of the article", "NYYNN"),
)
_PUBMED_LINKS: tuple[tuple[str, str, str, str], ...] = (
    ("pubmed_pmc", "PMC Links", "Free full text articles in PMC", "pmc"),
    ("pubmed_pmc_local", "", "Free full text articles in PMC", "pmc"),
    ("pubmed_pmc_refs", "Cited in PMC", "PubMed links associated with PMC", "pmc"),
)
_PMC_LINKS: tuple[tuple[str, str, str, str], ...] = (
    ("pmc_pubmed", "PubMed", "PubMed citation for these articles", "pubmed"),
    (
        "pmc_refs_pubmed",
        "References for this PMC Article",
        "PubMed records cited by this PMC article",
        "pubmed",
    ),
)
_DB_META = {
    "pubmed": ("PubMed", "PubMed bibliographic record", PUBMED_FIELDS, _PUBMED_LINKS),
    "pmc": ("PMC", "PubMed Central", _PMC_FIELDS, _PMC_LINKS),
}


def einfo_dblist_xml(dbs: Sequence[str]) -> bytes:
    root = etree.Element("eInfoResult")
    dl = _sub(root, "DbList")
    for db in dbs:
        _sub(dl, "DbName", db)
    return EINFO_PROLOG + _xml(root) + b"\n"


def einfo_dblist_json(dbs: Sequence[str]) -> bytes:
    return _json({"header": _header("einfo"), "einforesult": {"dblist": list(dbs)}})


def einfo_dbinfo_xml(db: str, *, count: int, last_update: str, build: str) -> bytes:
    menu, desc, fields, links = _DB_META[db]
    root = etree.Element("eInfoResult")
    info = _sub(root, "DbInfo")
    _sub(info, "DbName", db)
    _sub(info, "MenuName", menu)
    _sub(info, "Description", desc)
    _sub(info, "DbBuild", build)
    _sub(info, "Count", str(count))
    _sub(info, "LastUpdate", last_update)
    fl = _sub(info, "FieldList")
    for name, full, fdesc, flags in fields:
        f = _sub(fl, "Field")
        _sub(f, "Name", name)
        _sub(f, "FullName", full)
        _sub(f, "Description", fdesc)
        _sub(f, "TermCount")
        for tag, flag in zip(
            ("IsDate", "IsNumerical", "SingleToken", "Hierarchy", "IsHidden"), flags, strict=True
        ):
            _sub(f, tag, flag)
    ll = _sub(info, "LinkList")
    for name, lmenu, ldesc, dbto in links:
        link = _sub(ll, "Link")
        _sub(link, "Name", name)
        _sub(link, "Menu", lmenu)
        _sub(link, "Description", ldesc)
        _sub(link, "DbTo", dbto)
    return EINFO_PROLOG + _xml(root) + b"\n"


def einfo_dbinfo_json(db: str, *, count: int, last_update: str, build: str) -> bytes:
    """[INF] from the einfo.dtd JSON annotations: ``einforesult.dbinfo``, an array of lower-cased objects."""
    menu, desc, fields, links = _DB_META[db]
    info = {
        "dbname": db,
        "menuname": menu,
        "description": desc,
        "dbbuild": build,
        "count": str(count),
        "lastupdate": last_update,
        "fieldlist": [
            {
                "name": name,
                "fullname": full,
                "description": fdesc,
                "termcount": "",
                "isdate": flags[0],
                "isnumerical": flags[1],
                "singletoken": flags[2],
                "hierarchy": flags[3],
                "ishidden": flags[4],
            }
            for name, full, fdesc, flags in fields
        ],
        "linklist": [{"name": n, "menu": m, "description": d, "dbto": t} for n, m, d, t in links],
    }
    return _json({"header": _header("einfo"), "einforesult": {"dbinfo": [info]}})


def einfo_error_xml(message: str) -> bytes:
    """E4: ``Can not retrieve DbInfo for db=…``."""
    root = etree.Element("eInfoResult")
    _sub(root, "ERROR", message)
    return EINFO_PROLOG + _xml(root) + b"\n"


def einfo_error_json(message: str) -> bytes:
    return _json({"header": _header("einfo"), "einforesult": {"ERROR": message}})


# --------------------------------------------------------------------------------------------------------
# EPost, ESpell, 429
# --------------------------------------------------------------------------------------------------------


def epost_xml(query_key: str, webenv: str) -> bytes:
    body = (
        f"<ePostResult>\n\t<QueryKey>{query_key}</QueryKey>\n"
        f"\t<WebEnv>{html.escape(webenv)}</WebEnv>\n</ePostResult>\n"
    )
    return EPOST_PROLOG + body.encode()


def epost_error_xml(messages: Sequence[str]) -> bytes:
    """E2/E11: one ``<ERROR>`` per message (epost2.xml, epost3.xml)."""
    root = etree.Element("ePostResult")
    for msg in messages:
        _sub(root, "ERROR", msg)
    return EPOST_PROLOG + b"\n" + _xml(root) + b"\n"


def espell_xml(db: str, query: str, corrected: str) -> bytes:
    root = etree.Element("eSpellResult")
    _sub(root, "Database", db)
    _sub(root, "Query", query)
    _sub(root, "CorrectedQuery", corrected)
    sq = _sub(root, "SpelledQuery")
    if corrected != query:
        _sub(sq, "Original", "")
        _sub(sq, "Replaced", corrected)
    else:
        _sub(sq, "Original", query)
    _sub(root, "ERROR")
    return ESPELL_PROLOG + _xml(root) + b"\n"


def ratelimit_json(key: str, count: int, limit: int) -> bytes:
    """E14 body; field order and string-typed numbers as in the [3P] captures."""
    return _json(
        {"error": "API rate limit exceeded", "api-key": key, "count": str(count), "limit": str(limit)}
    )


# --------------------------------------------------------------------------------------------------------
# PubMed XML record writer (build script, user records without raw bytes)
# --------------------------------------------------------------------------------------------------------

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
            _sub(pd, "Month", _MONTHS[date.month - 1])
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
    if not record.publication_types:
        _sub(ptl, "PublicationType", "Journal Article", UI="D016428")
    if ex.article_date:
        ad = _sub(article, "ArticleDate", DateType="Electronic")
        for tag, val in zip(("Year", "Month", "Day"), ex.article_date, strict=True):
            _sub(ad, tag, val)
    mji = _sub(mc, "MedlineJournalInfo")
    _sub(mji, "MedlineTA", ex.medline_ta or record.journal_iso or record.journal or "Unknown")
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


# --------------------------------------------------------------------------------------------------------
# JATS front matter (fields PmcArticle does not carry: authors, volume, pages, ISSNs, dates)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JatsFront:
    title: str = ""
    journal_title: str = ""
    nlm_ta: str = ""
    iso_abbrev: str = ""
    issns: tuple[tuple[str, str], ...] = ()  # (pub-type, value)
    pmid: str = ""
    pmc: str = ""  # bare digits as in JATS
    doi: str = ""
    pii: str = ""
    article_type: str = ""
    language: str = ""
    authors: tuple[tuple[str, str, str], ...] = ()  # (surname, given-names, initials)
    volume: str = ""
    issue: str = ""
    fpage: str = ""
    lpage: str = ""
    elocation: str = ""
    pub_year: str = ""
    pub_month: str = ""
    pub_day: str = ""
    epub: tuple[str, str, str] | None = None
    ppub: tuple[str, str, str] | None = None
    abstract: tuple[tuple[str, str], ...] = ()  # (section title or "", text)
    keywords: tuple[str, ...] = ()
    ref_pmids: tuple[str, ...] = field(default=())


def _initials(given: str) -> str:
    return "".join(p[0] for p in re.split(r"[\s.\-]+", given) if p and p[0].isalpha()).upper()


def read_jats_front(raw: bytes) -> JatsFront:
    """Front-matter fields of one JATS ``<article>`` (bare or wrapped), plus the PMIDs its references cite."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)
    root = etree.fromstring(raw, parser)
    if root is None:
        return JatsFront()
    art = root if etree.QName(root).localname == "article" else root.find(".//article")
    if art is None:
        return JatsFront()
    meta = art.find("front/article-meta")
    jmeta = art.find("front/journal-meta")
    if meta is None:
        return JatsFront()
    ids = {el.get("pub-id-type", ""): _text(el) for el in meta.iterfind("article-id")}
    jids = (
        {el.get("journal-id-type", ""): _text(el) for el in jmeta.iterfind("journal-id")}
        if jmeta is not None
        else {}
    )
    issns = (
        tuple(
            (el.get("pub-type") or el.get("publication-format") or "", _text(el))
            for el in jmeta.iterfind("issn")
        )
        if jmeta is not None
        else ()
    )
    authors: list[tuple[str, str, str]] = []
    for contrib in meta.iterfind("contrib-group/contrib"):
        if contrib.get("contrib-type", "author") != "author":
            continue
        name = contrib.find("name")
        if name is None:
            continue
        surname, given = _text(name.find("surname")), _text(name.find("given-names"))
        if surname:
            authors.append((surname, given, _initials(given)))

    def date(kind: str) -> tuple[str, str, str] | None:
        for pd in meta.iterfind("pub-date"):
            if kind in (pd.get("pub-type"), pd.get("date-type"), pd.get("publication-format")):
                y = _text(pd.find("year"))
                if y:
                    return y, _text(pd.find("month")), _text(pd.find("day"))
        return None

    ppub, epub = date("ppub") or date("print"), date("epub") or date("electronic")
    chosen = ppub or date("collection") or epub or date("pmc-release") or ("", "", "")
    abstract: list[tuple[str, str]] = []
    ab = meta.find("abstract")
    if ab is not None:
        secs = ab.findall("sec")
        if secs:
            for sec in secs:
                title = _text(sec.find("title")).rstrip(":").strip()
                paras = " ".join(_text(p) for p in sec.iterfind("p"))
                if paras:
                    abstract.append((title, paras))
        else:
            paras = " ".join(_text(p) for p in ab.iterfind("p"))
            if paras:
                abstract.append(("", paras))
    kwds = tuple(_text(k) for k in meta.iterfind("kwd-group/kwd") if _text(k))
    ref_pmids = tuple(
        dict.fromkeys(
            _text(p) for p in art.iterfind("back/ref-list//pub-id") if p.get("pub-id-type") == "pmid"
        )
    )
    lang = art.get("{http://www.w3.org/XML/1998/namespace}lang", "")
    return JatsFront(
        title=_text(meta.find("title-group/article-title")),
        journal_title=_text(jmeta.find("journal-title-group/journal-title")) if jmeta is not None else "",
        nlm_ta=jids.get("nlm-ta", ""),
        iso_abbrev=jids.get("iso-abbrev", ""),
        issns=issns,
        pmid=ids.get("pmid", ""),
        pmc=ids.get("pmc", "").removeprefix("PMC"),
        doi=ids.get("doi", ""),
        pii=ids.get("pii", ""),
        article_type=art.get("article-type", ""),
        language=lang,
        authors=tuple(authors),
        volume=_text(meta.find("volume")),
        issue=_text(meta.find("issue")),
        fpage=_text(meta.find("fpage")),
        lpage=_text(meta.find("lpage")),
        elocation=_text(meta.find("elocation-id")),
        pub_year=chosen[0],
        pub_month=chosen[1],
        pub_day=chosen[2],
        epub=epub,
        ppub=ppub,
        abstract=tuple(abstract),
        keywords=kwds,
        ref_pmids=ref_pmids,
    )

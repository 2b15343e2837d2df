"""The other E-utilities envelopes, read and written: ESearch (§5), ELink (§8), EInfo (§9), and the
bodies only the local server writes (EPost, ESpell, EFetch's error envelope, the rate-limit JSON, HTML pages).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from lxml import etree

from ._errors import MalformedResponse
from ._models import DbField, DbInfo, DbLink, EInfoResult, ESearchResult
from ._xml import (
    EFETCH_PROLOG,
    EINFO_PROLOG,
    ELINK_PROLOG,
    EPOST_PROLOG,
    ESEARCH_PROLOG,
    ESPELL_PROLOG,
    _as_bytes,
    _guard,
    _header,
    _int,
    _is_json,
    _jdict,
    _jlist,
    _json,
    _json_error_check,
    _jstr,
    _jstrs,
    _load_json,
    _load_xml,
    _opt,
    _pmcid_or_none,
    _req_int,
    _sub,
    _text,
    _texts,
    _xml,
)

__all__ = [
    "PUBMED_FIELDS",
    "LinkSetData",
    "LinkSetDbData",
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
    "parse_einfo",
    "parse_elink_pubmed_pmc",
    "parse_esearch",
    "pmfetch_html",
    "ratelimit_json",
    "server_error_html",
]


# ----------------------------------------------------------------------------------------------------
# ESearch (§5)
# ----------------------------------------------------------------------------------------------------


def _esearch_json(data: bytes) -> ESearchResult:
    ep = "esearch"
    obj = _load_json(data, ep)
    res = _jdict(obj.get("esearchresult"), "esearchresult", ep)
    _json_error_check(res, ep)
    errs = res.get("errorlist") if isinstance(res.get("errorlist"), dict) else {}
    warns = res.get("warninglist") if isinstance(res.get("warninglist"), dict) else {}
    assert isinstance(errs, dict) and isinstance(warns, dict)
    translations = tuple(
        (f, t)
        for tr in _jlist(res.get("translationset"))
        if isinstance(tr, dict)
        and (f := _jstr(tr.get("from"))) is not None
        and (t := _jstr(tr.get("to"))) is not None
    )
    return ESearchResult(
        count=_req_int(res.get("count"), "count", ep),
        ids=_jstrs(res.get("idlist")),
        retmax=_int(_jstr(res.get("retmax"))) or 0,
        retstart=_int(_jstr(res.get("retstart"))) or 0,
        query_translation=_jstr(res.get("querytranslation")),
        translations=translations,
        phrases_not_found=_jstrs(errs.get("phrasesnotfound")),
        quoted_phrases_not_found=_jstrs(warns.get("quotedphrasesnotfound")),
        phrases_ignored=_jstrs(warns.get("phrasesignored")),
        output_messages=_jstrs(warns.get("outputmessages")),
        query_key=_jstr(res.get("querykey")),
        webenv=_jstr(res.get("webenv")),
        fields_not_found=_jstrs(errs.get("fieldsnotfound")),
    )


def _esearch_xml(data: bytes) -> ESearchResult:
    ep = "esearch"
    root = _load_xml(data, ep, ("eSearchResult",))
    # Direct child only: TranslationStack/TermSet/Count holds per-term counts.
    translations = tuple(
        (_text(tr.find("From")), _text(tr.find("To"))) for tr in root.iterfind("TranslationSet/Translation")
    )
    return ESearchResult(
        count=_req_int(root.findtext("Count"), "Count", ep),
        ids=_texts(root, "IdList/Id"),
        retmax=_int(root.findtext("RetMax")) or 0,
        retstart=_int(root.findtext("RetStart")) or 0,
        query_translation=_opt(root.find("QueryTranslation")),
        translations=translations,
        phrases_not_found=_texts(root, "ErrorList/PhraseNotFound"),
        quoted_phrases_not_found=_texts(root, "WarningList/QuotedPhraseNotFound"),
        phrases_ignored=_texts(root, "WarningList/PhraseIgnored"),
        output_messages=_texts(root, "WarningList/OutputMessage"),
        query_key=_opt(root.find("QueryKey")),
        webenv=_opt(root.find("WebEnv")),
        fields_not_found=_texts(root, "ErrorList/FieldNotFound"),
    )


@_guard("esearch")
def parse_esearch(data: bytes) -> ESearchResult:
    """ESearch, XML or ``retmode=json`` (sniffed: a body starting with ``{`` is JSON)."""
    data = _as_bytes(data, "esearch")
    return _esearch_json(data) if _is_json(data, "esearch") else _esearch_xml(data)


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
    if result.phrases_not_found or result.fields_not_found:
        errs = _sub(root, "ErrorList")
        for phrase in result.phrases_not_found:
            _sub(errs, "PhraseNotFound", phrase)
        for name in result.fields_not_found:
            _sub(errs, "FieldNotFound", name)
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
    if result.phrases_not_found or result.fields_not_found:
        # NCBI's own JSON always has fieldsnotfound [] (the DTD annotation selects a non-existent element,
        # §5.4); ours lists them, so a client reads the same ErrorList in either format.
        res["errorlist"] = {
            "phrasesnotfound": list(result.phrases_not_found),
            "fieldsnotfound": list(result.fields_not_found),
        }
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


# ----------------------------------------------------------------------------------------------------
# ELink (§8, pubmed -> pmc)
# ----------------------------------------------------------------------------------------------------


_PUBMED_PMC: Final = "pubmed_pmc"


def _assign(out: dict[str, str | None], ids: list[str], links: list[str]) -> None:
    pmcid = None
    if len(ids) == 1:
        pmcid = next((p for link in links if (p := _pmcid_or_none(link))), None)
    # Several input ids in one (batched) LinkSet: the union of links cannot be attributed to a PMID,
    # so every id maps to None (EUTILS.md §8.3 - callers must use one-to-one mode).
    for pmid in ids:
        if out.get(pmid) is None:  # a PMID repeated in the request keeps its first real mapping
            out[pmid] = pmcid


def _elink_json(data: bytes) -> dict[str, str | None]:
    ep = "elink"
    obj = _load_json(data, ep)
    out: dict[str, str | None] = {}
    if "linksets" not in obj:
        raise MalformedResponse(f"{ep}: JSON body has no 'linksets'", endpoint=ep)
    for ls in _jlist(obj.get("linksets")):
        if not isinstance(ls, dict):
            continue
        ids = list(_jstrs(ls.get("ids")))
        links: list[str] = []
        for lsdb in _jlist(ls.get("linksetdbs")):
            if isinstance(lsdb, dict) and _jstr(lsdb.get("linkname")) == _PUBMED_PMC:
                links.extend(_jstrs(lsdb.get("links")))
        _assign(out, ids, links)
    return out


def _elink_xml(data: bytes) -> dict[str, str | None]:
    root = _load_xml(data, "elink", ("eLinkResult",))
    out: dict[str, str | None] = {}
    for ls in root.iterfind("LinkSet"):
        ids = list(_texts(ls, "IdList/Id"))
        links: list[str] = []
        for lsdb in ls.iterfind("LinkSetDb"):
            # Filter on LinkName, never DbTo: pubmed_pmc_refs ("cited in PMC") also has DbTo=pmc.
            if _text(lsdb.find("LinkName")) == _PUBMED_PMC:
                links.extend(_texts(lsdb, "Link/Id"))
        _assign(out, ids, links)
    return out


@_guard("elink")
def parse_elink_pubmed_pmc(data: bytes) -> dict[str, str | None]:
    """ELink ``dbfrom=pubmed&db=pmc`` -> ``{pmid: "PMC<digits>" | None}`` for every input PMID.

    Only ``LinkSetDb`` blocks with ``LinkName == "pubmed_pmc"`` count (``pubmed_pmc_refs`` lists
    *citing* articles). Send one ``id=`` per PMID (one-to-one mode): a batched ``LinkSet`` holding
    several input ids cannot be attributed, and all its ids map to ``None``.
    """
    data = _as_bytes(data, "elink")
    return _elink_json(data) if _is_json(data, "elink") else _elink_xml(data)


@dataclass(frozen=True, slots=True)
class LinkSetDbData:
    dbto: str
    linkname: str
    links: tuple[str, ...] = ()
    query_key: str | None = None  # set for cmd=neighbor_history (LinkSetDbHistory)
    scores: tuple[int, ...] = ()  # cmd=neighbor_score: one per link, written as <Score>


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
            for i, uid in enumerate(db.links):
                link = _sub(d, "Link")
                _sub(link, "Id", uid)
                if db.scores:
                    _sub(link, "Score", str(db.scores[i]))
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
                {
                    "dbto": d.dbto,
                    "linkname": d.linkname,
                    "links": [{"id": i, "score": s} for i, s in zip(d.links, d.scores, strict=True)]
                    if d.scores
                    else list(d.links),
                }
                for d in ls.dbs
            ]
        out.append(item)
    return _json({"header": _header("elink"), "linksets": out})


def elink_error_xml(message: str) -> bytes:
    root = etree.Element("eLinkResult")
    _sub(root, "ERROR", message)
    return ELINK_PROLOG + _xml(root) + b"\n"


def elink_error_json(message: str) -> bytes:
    return _json({"header": _header("elink"), "ERROR": message})


# ----------------------------------------------------------------------------------------------------
# EInfo (§9)
# ----------------------------------------------------------------------------------------------------


def _einfo_json(data: bytes) -> EInfoResult:
    ep = "einfo"
    obj = _load_json(data, ep)
    res = _jdict(obj.get("einforesult"), "einforesult", ep)
    _json_error_check(res, ep)
    if "dblist" in res:
        return EInfoResult(databases=_jstrs(res.get("dblist")))
    infos = res.get("dbinfo")
    info = infos[0] if isinstance(infos, list) and infos else infos
    info = _jdict(info, "dbinfo", ep)
    _json_error_check(info, ep)
    name = _jstr(info.get("dbname"))
    if name is None:
        raise MalformedResponse(f"{ep}: dbinfo without dbname", endpoint=ep)
    fields = tuple(
        DbField(
            name=n,
            full_name=_jstr(f.get("fullname")) or "",
            description=_jstr(f.get("description")) or "",
            is_date=_jstr(f.get("isdate")) == "Y",
            hierarchy=_jstr(f.get("hierarchy")) == "Y",
        )
        for f in _jlist(info.get("fieldlist"))
        if isinstance(f, dict) and (n := _jstr(f.get("name")))
    )
    links = tuple(
        DbLink(
            name=n,
            menu=_jstr(lk.get("menu")) or "",
            description=_jstr(lk.get("description")) or "",
            db_to=_jstr(lk.get("dbto")) or "",
        )
        for lk in _jlist(info.get("linklist"))
        if isinstance(lk, dict) and (n := _jstr(lk.get("name")))
    )
    return EInfoResult(
        info=DbInfo(
            name=name,
            menu_name=_jstr(info.get("menuname")) or "",
            description=_jstr(info.get("description")) or "",
            count=_int(_jstr(info.get("count"))),
            last_update=_jstr(info.get("lastupdate")),
            fields=fields,
            links=links,
        )
    )


def _einfo_xml(data: bytes) -> EInfoResult:
    ep = "einfo"
    root = _load_xml(data, ep, ("eInfoResult",))
    dblist = root.find("DbList")
    if dblist is not None:
        return EInfoResult(databases=_texts(dblist, "DbName"))
    info = root.find("DbInfo")
    if info is None or not (name := _text(info.find("DbName"))):
        raise MalformedResponse(f"{ep}: eInfoResult without DbList or DbInfo/DbName", endpoint=ep)
    # IsRangable/IsRangeable and IsTruncatable (version 2.0) are accepted but have no model field.
    fields = tuple(
        DbField(
            name=n,
            full_name=_text(f.find("FullName")),
            description=_text(f.find("Description")),
            is_date=_text(f.find("IsDate")) == "Y",
            hierarchy=_text(f.find("Hierarchy")) == "Y",
        )
        for f in info.iterfind("FieldList/Field")
        if (n := _text(f.find("Name")))
    )
    links = tuple(
        DbLink(
            name=n,
            menu=_text(lk.find("Menu")),
            description=_text(lk.find("Description")),
            db_to=_text(lk.find("DbTo")),
        )
        for lk in info.iterfind("LinkList/Link")
        if (n := _text(lk.find("Name")))
    )
    return EInfoResult(
        info=DbInfo(
            name=name,
            menu_name=_text(info.find("MenuName")),
            description=_text(info.find("Description")),
            count=_int(info.findtext("Count")),
            last_update=_opt(info.find("LastUpdate")),
            fields=fields,
            links=links,
        )
    )


@_guard("einfo")
def parse_einfo(data: bytes) -> EInfoResult:
    """EInfo: the database list (``DbList``) or one database's ``DbInfo`` (fields, links); XML or JSON."""
    data = _as_bytes(data, "einfo")
    return _einfo_json(data) if _is_json(data, "einfo") else _einfo_xml(data)


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
# NCBI's PubMed link list as EInfo reports it (2025 recording, einfo2.xml): the database's shape. ELink
# answers the links to databases this server holds (pubmed_pmc, pubmed_pmc_refs, pubmed_pubmed).
_PUBMED_LINKS: tuple[tuple[str, str, str, str], ...] = (
    ("pubmed_assembly", "Assembly", "Assembly", "assembly"),
    ("pubmed_bioproject", "Project Links", "Related Projects", "bioproject"),
    ("pubmed_biosample", "BioSample Links", "BioSample links", "biosample"),
    ("pubmed_biosystems", "BioSystem Links", "BioSystems", "biosystems"),
    ("pubmed_books_refs", "Cited in Books", "PubMed links associated with Books", "books"),
    ("pubmed_cdd", "Conserved Domain Links", "Link to related CDD entry", "cdd"),
    ("pubmed_clinvar", "ClinVar", "Clinical variations associated with publication", "clinvar"),
    (
        "pubmed_clinvar_calculated",
        "ClinVar (calculated)",
        "Clinical variations calculated to be associated with publication",
        "clinvar",
    ),
    ("pubmed_dbvar", "dbVar", "Link from PubMed to dbVar", "dbvar"),
    ("pubmed_gap", "dbGaP Links", "Related dbGaP record", "gap"),
    ("pubmed_gds", "GEO DataSet Links", "Related GEO DataSets", "gds"),
    ("pubmed_gene", "Gene Links", "Link to related Genes", "gene"),
    ("pubmed_gene_bookrecords", "Gene (from Bookshelf)", "Gene records in this citation", "gene"),
    (
        "pubmed_gene_citedinomim",
        "Gene (OMIM) Links",
        "PubMed links to Gene derived from pubmed_omim_cited links",
        "gene",
    ),
    (
        "pubmed_gene_pmc_nucleotide",
        "Gene (nucleotide/PMC)",
        "Records in Gene identified from shared sequence and PMC links.",
        "gene",
    ),
    ("pubmed_gene_rif", "Gene (GeneRIF) Links", "Link to Gene for the GeneRIF subcategory", "gene"),
    ("pubmed_genome", "Genome Links", "Published genome sequences", "genome"),
    ("pubmed_geoprofiles", "GEO Profile Links", "GEO records associated with pubmed record", "geoprofiles"),
    ("pubmed_homologene", "HomoloGene Links", "Related HomoloGene", "homologene"),
    ("pubmed_medgen", "MedGen", "Related information in MedGen", "medgen"),
    (
        "pubmed_medgen_bookshelf_cited",
        "MedGen (Bookshelf cited)",
        "Related records in MedGen based on citations in GeneReviews and Medical Genetics Summaries",
        "medgen",
    ),
    ("pubmed_medgen_genereviews", "MedGen (GeneReviews)", "Related MedGen records", "medgen"),
    ("pubmed_medgen_omim", "MedGen (OMIM)", "Related information in MedGen (OMIM)", "medgen"),
    ("pubmed_nuccore", "Nucleotide Links", "Published Nucleotide sequences", "nuccore"),
    ("pubmed_nuccore_refseq", "Nucleotide (RefSeq) Links", "Link to Nucleotide RefSeqs", "nuccore"),
    ("pubmed_nuccore_weighted", "Nucleotide (Weighted) Links", "Links to nuccore", "nuccore"),
    ("pubmed_omim_bookrecords", "OMIM (from Bookshelf)", "OMIM records in this citation", "omim"),
    ("pubmed_omim_calculated", "OMIM (calculated) Links", "OMIM (calculated) Links", "omim"),
    ("pubmed_omim_cited", "OMIM (cited) Links", "OMIM (cited) Links", "omim"),
    ("pubmed_pcassay", "PubChem BioAssay", "Related PubChem BioAssay", "pcassay"),
    ("pubmed_pccompound", "PubChem Compound", "Related PubChem Compound", "pccompound"),
    (
        "pubmed_pccompound_mesh",
        "PubChem Compound (MeSH Keyword)",
        "Related PubChem Compound via MeSH",
        "pccompound",
    ),
    (
        "pubmed_pccompound_publisher",
        "PubChem Compound (Publisher)",
        "Publisher deposited structures linked to PubChem Compound",
        "pccompound",
    ),
    ("pubmed_pcsubstance", "PubChem Substance Links", "Related PubChem Substance", "pcsubstance"),
    (
        "pubmed_pcsubstance_bookrecords",
        "PubChem Substance (from Bookshelf)",
        "Structures in the PubChem Substance database in this citation",
        "pcsubstance",
    ),
    (
        "pubmed_pcsubstance_publisher",
        "PubChem Substance (Publisher)",
        "PubChem Substances supplied by publisher",
        "pcsubstance",
    ),
    ("pubmed_pmc", "PMC Links", "Free full text articles in PMC", "pmc"),
    (
        "pubmed_pmc_bookrecords",
        "References in PMC for this Bookshelf citation",
        "Full text of articles in PubMed Central cited in this record",
        "pmc",
    ),
    ("pubmed_pmc_embargo", "", "Embargoed PMC article associated with PubMed", "pmc"),
    ("pubmed_pmc_local", "", "Free full text articles in PMC", "pmc"),
    ("pubmed_pmc_refs", "Cited in PMC", "PubMed links associated with PMC", "pmc"),
    ("pubmed_popset", "PopSet Links", "Published population set", "popset"),
    ("pubmed_probe", "Probe Links", "Related Probe entry", "probe"),
    ("pubmed_protein", "Protein Links", "Published protein sequences", "protein"),
    ("pubmed_protein_refseq", "Protein (RefSeq) Links", "Link to Protein RefSeqs", "protein"),
    ("pubmed_protein_weighted", "Protein (Weighted) Links", "Links to protein", "protein"),
    ("pubmed_proteinclusters", "Protein Cluster Links", "Related Protein Clusters", "proteinclusters"),
    (
        "pubmed_protfam",
        "Protein Family Models",
        "Protein family models supported by a particular publication",
        "protfam",
    ),
    (
        "pubmed_pubmed",
        "Similar articles",
        "Similar PubMed articles, obtained by matching text and MeSH terms",
        "pubmed",
    ),
    (
        "pubmed_pubmed_alsoviewed",
        "Articles frequently viewed together",
        "Articles frequently viewed together",
        "pubmed",
    ),
    (
        "pubmed_pubmed_bookrecords",
        "References for this Bookshelf citation",
        "PubMed abstracts for articles cited in this record",
        "pubmed",
    ),
    ("pubmed_pubmed_refs", "References for PMC Articles", "References for this PMC Article", "pubmed"),
    ("pubmed_snp", "SNP Links", "PubMed to SNP links", "snp"),
    ("pubmed_snp_cited", "SNP (Cited)", "Related SNP (Cited) records", "snp"),
    ("pubmed_sra", "SRA Links", "Links to Short Read Archive Experiments", "sra"),
    ("pubmed_structure", "Structure Links", "Published 3D structures", "structure"),
    (
        "pubmed_taxonomy_entrez",
        "Taxonomy via GenBank",
        "Related Taxonomy entry computed using other Entrez links",
        "taxonomy",
    ),
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


# ----------------------------------------------------------------------------------------------------
# EFetch errors, EPost, ESpell, 429, HTML pages
# ----------------------------------------------------------------------------------------------------


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

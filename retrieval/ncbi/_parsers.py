"""Parsers for E-utilities response bodies (lxml for XML, the stdlib for JSON).

Every public function takes the raw body and returns the typed records of :mod:`retrieval.ncbi._models`.
Each one validates the body first (:func:`_load_xml` / :func:`_load_json`) and raises only
:class:`~retrieval._exceptions.EutilsError` subclasses:

* :class:`MalformedResponse` for an empty body, an HTML page, non-XML/non-JSON, truncated XML or an
  unexpected root element;
* :class:`BadRequest` when the payload *is* NCBI's error (``<ERROR>``, JSON ``"ERROR"``,
  ``esummaryresult: [...]``), carrying NCBI's message;
* :class:`RateLimited` for NCBI's rate-limit JSON body (``{"error": "API rate limit exceeded", ...}``),
  which can arrive with any HTTP status (EUTILS.md §13 E14).

"Phrase not found" and "No items found." are *not* errors: they land in :class:`ESearchResult` fields.

XML is parsed with entity resolution, DTD loading and network access switched off: responses carry
DOCTYPEs pointing at NCBI, and we never fetch them.
"""

from __future__ import annotations

import functools
import gzip
import html
import io
import json
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Final, ParamSpec, TypeVar

from lxml import etree

from ._errors import BadRequest, EutilsError, MalformedResponse, RateLimited
from ._models import (
    AbstractSection,
    DbField,
    DbInfo,
    DbLink,
    DocSummary,
    EInfoResult,
    ESearchResult,
    License,
    MeshHeading,
    MeshQualifier,
    PmcArticle,
    PmcSection,
    PubDate,
    PublicationType,
    PubmedRecord,
    normalise_pmcid,
)

__all__ = [
    "iter_pubmed_articles",
    "parse_einfo",
    "parse_elink_pubmed_pmc",
    "parse_esearch",
    "parse_esummary",
    "parse_pmc_articles",
    "parse_pubmed_articles",
]

_Element = etree._Element
_P = ParamSpec("_P")
_R = TypeVar("_R")

_MATHML_NS: Final = "http://www.w3.org/1998/Math/MathML"
_XLINK_HREF: Final = "{http://www.w3.org/1999/xlink}href"
_ALI_LICENSE_REF: Final = "{http://www.niso.org/schemas/ali/1.0/}license_ref"

# A fresh parser per call would cost more than the parse of a small response; XMLParser objects are
# safe to reuse sequentially (lxml keeps one per thread for fromstring when none is given).
_PARSER_KWARGS: Final[dict[str, Any]] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    # huge_tree stays off: libxml2's depth/text-size limits bound our recursive text walk, and no real
    # response (a baseline file included) comes near them.
}

_MONTHS: Final = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
    )
}
_YEAR_RE: Final = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")
_PMC_RE: Final = re.compile(r"PMC(\d+)", re.IGNORECASE)
# An HTML page, possibly behind an XML declaration or comments (NCBI's error pages, proxies, pubmed3.html).
_HTML_RE: Final = re.compile(
    rb"(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*(?:<!doctype\s+html|<html[\s>/])", re.I | re.S
)


# --------------------------------------------------------------------------------------------------
# Body validation (shared by every parser)
# --------------------------------------------------------------------------------------------------


def _guard(endpoint: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Safety net: any stray lookup/conversion error in a parser becomes MalformedResponse.

    The parsers check shapes explicitly; this only guarantees the "typed errors only" contract when a
    body is shaped in a way nobody anticipated (fuzzed bytes, a future DTD).
    """

    def wrap(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def inner(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return fn(*args, **kwargs)
            except EutilsError:
                raise
            except (
                KeyError,
                IndexError,
                TypeError,
                ValueError,
                AttributeError,
                RecursionError,
                etree.LxmlError,
            ) as exc:
                raise MalformedResponse(
                    f"{endpoint}: unexpected response structure ({type(exc).__name__}: {exc})",
                    endpoint=endpoint,
                ) from exc

        return inner

    return wrap


def _as_bytes(data: bytes | bytearray | memoryview | str, endpoint: str) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    if isinstance(data, str):
        return data.encode("utf-8")
    raise MalformedResponse(f"{endpoint}: body must be bytes, not {type(data).__name__}", endpoint=endpoint)


def _head(data: bytes, endpoint: str) -> bytes:
    """The body's first meaningful bytes, lower-cased; rejects empty bodies and HTML pages."""
    head = data[:512].lstrip(b"\xef\xbb\xbf").lstrip()
    if not head:
        raise MalformedResponse(f"{endpoint}: empty response body", endpoint=endpoint)
    low = head[:64].lower()
    if _HTML_RE.match(head):
        raise MalformedResponse(f"{endpoint}: got an HTML page instead of XML/JSON", endpoint=endpoint)
    return low


def _json_error_check(obj: object, endpoint: str) -> None:
    """NCBI's top-level JSON error shapes: the rate-limit body and a bare ``{"ERROR": ...}``."""
    if not isinstance(obj, dict):
        return
    err = obj.get("error")
    if isinstance(err, str):
        if "rate limit" in err.lower():
            raise RateLimited(f"{endpoint}: {err}", endpoint=endpoint)
        raise BadRequest(f"{endpoint}: {err}", endpoint=endpoint)
    err = obj.get("ERROR")
    if isinstance(err, str):
        raise BadRequest(f"{endpoint}: {err}", endpoint=endpoint)


def _load_json(data: bytes, endpoint: str) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise MalformedResponse(f"{endpoint}: invalid JSON ({exc})", endpoint=endpoint) from exc
    _json_error_check(obj, endpoint)
    if not isinstance(obj, dict):
        raise MalformedResponse(f"{endpoint}: JSON body is not an object", endpoint=endpoint)
    return obj


def _localname(el: _Element) -> str:
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return tag.rpartition("}")[2]


def _raise_on_error_payload(root: _Element, endpoint: str) -> None:
    """``<ERROR>`` *as the payload* (no result elements beside it) is NCBI refusing the request."""
    if _localname(root) == "ERROR":
        raise BadRequest(f"{endpoint}: {_text(root) or 'error'}", endpoint=endpoint)
    errors: list[str] = []
    payload = False
    for child in root:
        name = _localname(child)
        if name == "ERROR":
            errors.append(_text(child))
        elif name and name not in ("ErrorList", "WarningList"):
            payload = True
    # Nested one level for ESummary v2.0 (eSummaryResult/DocumentSummarySet/ERROR).
    if not errors and len(root) == 1 and _localname(root[0]) == "DocumentSummarySet":
        inner = root[0]
        errors = [_text(c) for c in inner if _localname(c) == "ERROR"]
        payload = any(_localname(c) not in ("ERROR", "DbBuild", "") for c in inner)
    if errors and not payload:
        msg = "; ".join(e for e in errors if e) or "error"
        raise BadRequest(f"{endpoint}: {msg}", endpoint=endpoint)


def _load_xml(data: bytes, endpoint: str, roots: Iterable[str]) -> _Element:
    head = _head(data, endpoint)
    if head.startswith(b"{") or head.startswith(b"["):
        _load_json(data, endpoint)  # surfaces a rate-limit/error JSON as such
        raise MalformedResponse(f"{endpoint}: expected XML, got JSON", endpoint=endpoint)
    try:
        root = etree.fromstring(data, etree.XMLParser(**_PARSER_KWARGS))
    except (etree.LxmlError, ValueError) as exc:
        raise MalformedResponse(f"{endpoint}: not well-formed XML ({exc})", endpoint=endpoint) from exc
    if root is None:
        raise MalformedResponse(f"{endpoint}: no root element", endpoint=endpoint)
    _raise_on_error_payload(root, endpoint)
    allowed = tuple(roots)
    name = _localname(root)
    if name not in allowed:
        raise MalformedResponse(
            f"{endpoint}: unexpected root element <{name}> (expected {' or '.join(allowed)})",
            endpoint=endpoint,
        )
    return root


# --------------------------------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------------------------------

# Children whose content is never prose (figures, tables, references, TeX duplicates of MathML).
_SKIP_INLINE: Final = frozenset(
    {
        "fig",
        "fig-group",
        "table-wrap",
        "table-wrap-group",
        "ref-list",
        "tex-math",
        "disp-formula",
        "graphic",
        "inline-graphic",
        "supplementary-material",
    }
)


def _collect(el: _Element, out: list[str], in_math: bool, skip: frozenset[str]) -> None:
    text = el.text
    if text:
        # Pretty-printed MathML is one token per line: keep the glyphs, drop the layout whitespace.
        out.append(text.strip() if in_math else text)
    for child in el:
        tag = child.tag
        if isinstance(tag, str):
            if tag.rpartition("}")[2] not in skip:
                _collect(child, out, in_math or tag.startswith("{" + _MATHML_NS), skip)
        elif isinstance(child, etree._Entity):
            # Entities are not resolved (no DTD is loaded); map HTML-named ones like &nbsp; ourselves.
            out.append(html.unescape(child.text or ""))
        # comments and processing instructions contribute only their tail
        tail = child.tail
        if tail:
            out.append(tail.strip() if in_math else tail)


def _text(el: _Element | None, skip: frozenset[str] = frozenset()) -> str:
    """Flattened, whitespace-collapsed text of ``el`` (inline markup and MathML kept as text)."""
    if el is None:
        return ""
    if len(el) == 0:  # the common case: plain text, no inline markup
        return " ".join(el.text.split()) if el.text else ""
    out: list[str] = []
    _collect(el, out, _localname(el) == "math", skip)
    return " ".join("".join(out).split())


def _opt(el: _Element | None) -> str | None:
    return _text(el) or None


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdecimal() and len(value) < 12 else None


def _req_int(value: object, what: str, endpoint: str) -> int:
    s = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if not s.isdecimal() or len(s) > 18:
        raise MalformedResponse(f"{endpoint}: {what} is not a number: {value!r}", endpoint=endpoint)
    return int(s)


def _pmcid_or_none(value: str | None) -> str | None:
    """``'PMC123'``, ``'123'`` and ESummary's ``'pmc-id: PMC123;embargo-date: ...'`` -> ``'PMC123'``."""
    if not value:
        return None
    try:
        return normalise_pmcid(value)
    except ValueError:
        m = _PMC_RE.search(value)
        return "PMC" + m.group(1) if m else None


# --------------------------------------------------------------------------------------------------
# PubMed (EFetch db=pubmed, baseline files)
# --------------------------------------------------------------------------------------------------


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
            pts.extend(
                PublicationType(name=name, ui=pt.get("UI"))
                for pt in c.iterchildren("PublicationType")
                if (name := _text(pt))
            )
        elif tag == "ELocationID":
            if eloc_doi is None and c.get("EIdType") == "doi" and c.get("ValidYN") != "N":
                eloc_doi = _opt(c)
    if journal_iso is None and journal_info is not None:
        journal_iso = _opt(journal_info.find("MedlineTA"))

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


# --------------------------------------------------------------------------------------------------
# PMC JATS (EFetch db=pmc, OA .nxml)
# --------------------------------------------------------------------------------------------------

# pub-date preference: the version of record first, PMC's own release date last.
_PUB_DATE_RANK: Final = {"epub": 0, "ppub": 1, "epub-ppub": 2, "collection": 3, "ecollection": 4}


def _pmc_year(meta: _Element) -> int | None:
    best: tuple[int, int] | None = None
    for pd in meta.iterfind("pub-date"):
        kind = pd.get("pub-type") or pd.get("date-type") or ""
        if kind == "pub":  # JATS 1.2+: date-type="pub" + publication-format
            kind = {"electronic": "epub", "print": "ppub"}.get(pd.get("publication-format") or "", "epub")
        year = _int(pd.findtext("year"))
        if year is None:
            continue
        rank = _PUB_DATE_RANK.get(kind, 9 if kind == "pmc-release" else 5)
        if best is None or rank < best[0]:
            best = (rank, year)
    return best[1] if best else None


def _heading(sec: _Element) -> str:
    title = _text(sec.find("title"))
    if not title:
        title = _text(sec.find("label"))
    return title.rstrip(":").rstrip()


def _block_paragraphs(el: _Element, out: list[str]) -> None:
    """Paragraph-level prose directly inside ``el`` (not in nested ``sec``), in document order."""
    for child in el:
        name = _localname(child)
        if name == "p":
            if t := _text(child, _SKIP_INLINE):
                out.append(t)
        elif name in ("list", "def-list"):
            for item in child.iter("list-item", "def-item"):
                if t := _text(item, _SKIP_INLINE):
                    out.append(t)
        elif name in ("disp-quote", "boxed-text", "statement", "speech"):
            _block_paragraphs(child, out)


def _walk_secs(parent: _Element, path: tuple[str, ...], out: list[PmcSection]) -> None:
    for sec in parent.iterchildren("sec"):
        heading = _heading(sec)
        paras: list[str] = []
        _block_paragraphs(sec, paras)
        # Sections that only wrap subsections are not emitted: their heading survives in ``path``.
        if paras:
            out.append(
                PmcSection(heading=heading, paragraphs=tuple(paras), path=path, sec_type=sec.get("sec-type"))
            )
        _walk_secs(sec, (*path, heading) if heading else path, out)


def _pmc_abstract(meta: _Element) -> tuple[AbstractSection, ...]:
    abstracts = list(meta.iterfind("abstract"))
    # Graphical/teaser/summary abstracts carry @abstract-type; the main one has none.
    main = [a for a in abstracts if a.get("abstract-type") is None] or abstracts[:1]
    out: list[AbstractSection] = []
    for ab in main:
        plain: list[str] = []
        _block_paragraphs(ab, plain)
        if plain:
            out.append(AbstractSection(text=" ".join(plain)))
        for sec in ab.iter("sec"):
            paras: list[str] = []
            _block_paragraphs(sec, paras)
            if paras:
                out.append(AbstractSection(text=" ".join(paras), label=_heading(sec) or None))
    return tuple(out)


def _pmc_license(permissions: _Element | None) -> tuple[License | None, str | None]:
    if permissions is None:
        return None, None
    copyright_ = _opt(permissions.find("copyright-statement"))
    lic = permissions.find("license")
    if lic is None:
        return None, copyright_
    url = (lic.get(_XLINK_HREF) or "").strip() or None
    license_type = lic.get("license-type")
    ref = lic.find(_ALI_LICENSE_REF)
    if ref is not None:
        url = url or _opt(ref)
        license_type = ref.get("content-type") or license_type
    text = " ".join(t for p in lic.iterfind("license-p") if (t := _text(p))) or None
    return License(url=url, text=text, license_type=license_type), copyright_


def _is_open_access(article: _Element) -> bool:
    nodes: list[_Element] = list(article)
    if article.getparent() is None:  # bare .nxml: the PI may precede the root element
        nodes.extend(article.itersiblings(preceding=True))
    return any(
        isinstance(n, etree._ProcessingInstruction)
        and n.target == "properties"
        and "open_access" in (n.text or "")
        for n in nodes
    )


def _pmc_article(article: _Element, endpoint: str = "efetch") -> PmcArticle:
    meta = article.find("front/article-meta")
    if meta is None:
        raise MalformedResponse(f"{endpoint}: JATS article without front/article-meta", endpoint=endpoint)
    ids: dict[str, str] = {}
    for aid in meta.iterfind("article-id"):
        kind = aid.get("pub-id-type") or ""
        if kind not in ids and (v := _text(aid)):
            ids[kind] = v
    pmcid = None
    for kind in ("pmc", "pmcid", "pmcaid"):
        if pmcid := _pmcid_or_none(ids.get(kind)):
            break
    if pmcid is None:
        raise MalformedResponse(f"{endpoint}: JATS article without a PMC id", endpoint=endpoint)

    jmeta = article.find("front/journal-meta")
    journal = None
    if jmeta is not None:
        journal = _opt(jmeta.find("journal-title-group/journal-title")) or _opt(jmeta.find("journal-title"))

    copyright_: str | None
    license_, copyright_ = _pmc_license(meta.find("permissions"))
    if copyright_ is None:  # NLM DTD 2.x kept it directly under article-meta
        copyright_ = _opt(meta.find("copyright-statement"))

    sections: list[PmcSection] = []
    body = article.find("body")
    if body is not None:
        loose: list[str] = []
        _block_paragraphs(body, loose)
        if loose:  # paragraphs without a <sec> wrapper (short communications, corrections)
            sections.append(PmcSection(heading="", paragraphs=tuple(loose)))
        _walk_secs(body, (), sections)

    return PmcArticle(
        pmcid=pmcid,
        title=_text(meta.find("title-group/article-title")),
        pmid=ids.get("pmid"),
        doi=ids.get("doi"),
        article_type=article.get("article-type"),
        journal=journal,
        year=_pmc_year(meta),
        abstract=_pmc_abstract(meta),
        sections=tuple(sections),
        license=license_,
        copyright=copyright_,
        open_access=_is_open_access(article),
        body_withheld=body is None,
    )


@dataclass(frozen=True, slots=True)
class JatsContent:
    """The prose of one JATS ``<article>``: title, main abstract, body prose outside ``<sec>``, sections."""

    title: str
    abstract: tuple[AbstractSection, ...]
    loose: tuple[str, ...]
    sections: tuple[PmcSection, ...]


def jats_content(article: _Element) -> JatsContent:
    """Read the prose of a parsed ``<article>`` element with the same rules as :func:`parse_pmc_articles`
    (for callers that parse JATS from elsewhere, such as institutional collections)."""
    meta = article.find("front/article-meta")
    title = _text(meta.find("title-group/article-title")) if meta is not None else ""
    abstract = _pmc_abstract(meta) if meta is not None else ()
    loose: list[str] = []
    secs: list[PmcSection] = []
    body = article.find("body")
    if body is not None:
        _block_paragraphs(body, loose)
        _walk_secs(body, (), secs)
    return JatsContent(title=title, abstract=abstract, loose=tuple(loose), sections=tuple(secs))


@_guard("efetch")
def parse_pmc_articles(data: bytes) -> list[PmcArticle]:
    """EFetch ``db=pmc`` (``<pmc-articleset>``) or a bare JATS ``<article>`` (PMC OA ``.nxml``).

    An article without ``<body>`` (publisher-restricted full text) has ``body_withheld=True`` and no
    sections; its front matter and abstract are still returned.
    """
    data = _as_bytes(data, "efetch")
    root = _load_xml(data, "efetch", ("pmc-articleset", "article"))
    if _localname(root) == "article":
        return [_pmc_article(root)]
    return [_pmc_article(a) for a in root if _localname(a) == "article"]


# --------------------------------------------------------------------------------------------------
# ESearch
# --------------------------------------------------------------------------------------------------


def _is_json(data: bytes, endpoint: str) -> bool:
    return _head(data, endpoint).startswith(b"{")


def _jstr(value: object) -> str | None:
    """A JSON scalar as a stripped string (the 2012 prototypes leak whitespace); None when empty."""
    if isinstance(value, str):
        return " ".join(value.split()) or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _jlist(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _jdict(value: object, what: str, endpoint: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedResponse(
            f"{endpoint}: JSON member {what!r} missing or not an object", endpoint=endpoint
        )
    return value


def _jstrs(value: object) -> tuple[str, ...]:
    return tuple(s for v in _jlist(value) if (s := _jstr(v)))


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
    )


def _texts(root: _Element, path: str) -> tuple[str, ...]:
    return tuple(t for el in root.iterfind(path) if (t := _text(el)))


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
    )


@_guard("esearch")
def parse_esearch(data: bytes) -> ESearchResult:
    """ESearch, XML or ``retmode=json`` (sniffed: a body starting with ``{`` is JSON).

    ``FieldNotFound`` has no field in :class:`ESearchResult` and is not reported.
    """
    data = _as_bytes(data, "esearch")
    return _esearch_json(data) if _is_json(data, "esearch") else _esearch_xml(data)


# --------------------------------------------------------------------------------------------------
# ESummary
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# ELink (pubmed -> pmc)
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# EInfo
# --------------------------------------------------------------------------------------------------


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

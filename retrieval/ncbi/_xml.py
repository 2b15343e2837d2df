"""What every NCBI format shares: reading a response body safely, and writing one the way NCBI does.

Reading. Every public parser (``_pubmed``, ``_pmc``, ``_esummary``, ``_envelopes``) takes the raw body and
returns the typed records of :mod:`retrieval.ncbi._models`. Each one validates the body first
(:func:`_load_xml` / :func:`_load_json`) and raises only :class:`~retrieval.ncbi.EutilsError` subclasses:

* :class:`MalformedResponse` for an empty body, an HTML page, non-XML/non-JSON, truncated XML or an
  unexpected root element;
* :class:`BadRequest` when the payload *is* NCBI's error (``<ERROR>``, JSON ``"ERROR"``,
  ``esummaryresult: [...]``), carrying NCBI's message;
* :class:`RateLimited` for NCBI's rate-limit JSON body (``{"error": "API rate limit exceeded", ...}``),
  which can arrive with any HTTP status (EUTILS.md §13 E14).

"Phrase not found" and "No items found." are *not* errors: they land in :class:`ESearchResult` fields.
XML is parsed with entity resolution, DTD loading and network access switched off: responses carry
DOCTYPEs pointing at NCBI, and we never fetch them.

Writing. Every builder returns ``bytes`` ready to send. Prologs (XML declaration + DOCTYPE) are the strings
recorded from NCBI in 2025 (``../shared/docs/EUTILS.md`` §5.2, §6.2, §6.4, §7.2, §8.2, §9.2); element names
and nesting follow the recorded samples so that a client written against live NCBI parses our output
unchanged. JSON bodies follow NCBI's envelope (``{"header": {...}, "<utility>result": ...}``) with numbers
as strings where NCBI sends strings. The writers are pure: no I/O, no corpus access. The local server
(:mod:`retrieval.localncbi`) decides *what* to answer, they decide *how it looks on the wire*.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable, Iterable
from typing import Any, Final, ParamSpec, TypeVar

from lxml import etree

from ._errors import BadRequest, EutilsError, MalformedResponse, RateLimited
from ._models import normalise_pmcid

__all__ = [
    "EFETCH_PROLOG",
    "EINFO_PROLOG",
    "ELINK_PROLOG",
    "EPOST_PROLOG",
    "ESEARCH_PROLOG",
    "ESPELL_PROLOG",
    "ESUMMARY_PROLOG",
    "ESUMMARY_V2_DTD_DATE",
    "PMC_ARTICLESET_PROLOG",
    "PMC_RESTRICTED_COMMENT",
    "PUBMED_ARTICLESET_PROLOG",
    "esummary_v2_prolog",
]


_Element = etree._Element
_P = ParamSpec("_P")
_R = TypeVar("_R")

_MATHML_NS: Final = "http://www.w3.org/1998/Math/MathML"


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


_PMC_RE: Final = re.compile(r"PMC(\d+)", re.IGNORECASE)
# An HTML page, possibly behind an XML declaration or comments (NCBI's error pages, proxies, pubmed3.html).
_HTML_RE: Final = re.compile(
    rb"(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*(?:<!doctype\s+html|<html[\s>/])", re.I | re.S
)


# ----------------------------------------------------------------------------------------------------
# Body validation (shared by every parser)
# ----------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------
# Text helpers
# ----------------------------------------------------------------------------------------------------


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


def _texts(root: _Element, path: str) -> tuple[str, ...]:
    return tuple(t for el in root.iterfind(path) if (t := _text(el)))


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


# ----------------------------------------------------------------------------------------------------
# Prologs, verbatim from the 2025 recordings (biopython_Tests_Entrez/*).
# ----------------------------------------------------------------------------------------------------


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
# version=2.0 names a per-database DTD that Biopython does not bundle: a client downloads it from the
# system id (the local server serves it at that path, /eutils/dtd/...). Identifier and date as recorded from
# NCBI (a 2020 response, Build201222); our DTD text is generated from what the writer emits.
ESUMMARY_V2_DTD_DATE = "20160808"


def esummary_v2_prolog(db: str) -> bytes:
    return (
        b'<?xml version="1.0" encoding="UTF-8" ?>\n'
        + f'<!DOCTYPE eSummaryResult PUBLIC "-//NLM//DTD esummary {db} {ESUMMARY_V2_DTD_DATE}//EN" '
        f'"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/{ESUMMARY_V2_DTD_DATE}/esummary_{db}.dtd">\n'.encode()
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


# ----------------------------------------------------------------------------------------------------
# Writer helpers
# ----------------------------------------------------------------------------------------------------


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


_MONTH_ABBRS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _itertext(el: etree._Element | None) -> str:
    if el is None:
        return ""
    return " ".join("".join(str(t) for t in el.itertext()).split())


def _path_text(el: etree._Element | None, path: str) -> str:
    """:func:`_itertext` of the element at ``path`` under ``el``; "" when either is absent."""
    return _itertext(el.find(path)) if el is not None else ""


_MONTH_NUMBERS = {m.lower(): i for i, m in enumerate(_MONTH_ABBRS, start=1)}


def _month_number(value: str | None) -> int | None:
    """``'3'``, ``'Mar'``, ``'March'`` -> 3; None for anything else."""
    if not value:
        return None
    v = value.strip()
    if v.isdecimal():
        n = int(v)
        return n if 1 <= n <= 12 else None
    return _MONTH_NUMBERS.get(v[:3].lower())


def _month_name(value: str) -> str:
    """``'3'`` -> ``'Mar'``; a name, a season or "" unchanged."""
    return _MONTH_ABBRS[int(value) - 1] if value.isdigit() and 1 <= int(value) <= 12 else value


def _pubdate_text(year: str, month: str, day: str, season: str, medline: str) -> str:
    """A publication date as PubMed displays it (``1998 Aug 5``, ``2005 Spring``, a MedlineDate as is)."""
    if medline:
        return medline
    parts = [year] if year else []
    if month:
        parts.append(_month_name(month))
        if day:
            parts.append(str(int(day)) if day.isdigit() else day)
    elif season:
        parts.append(season)
    return " ".join(parts)

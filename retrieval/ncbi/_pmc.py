"""PMC JATS: ``<pmc-articleset>`` (EFetch ``db=pmc``) and bare OA ``.nxml`` articles, read and written.

Reading gives :class:`PmcArticle` (front matter, abstract, body sections) and :class:`JatsContent` (the same
prose rules for JATS parsed elsewhere); :func:`read_jats_front` reads the front matter ``PmcArticle`` does not
carry (authors, volume, pages, ISSNs, dates). Writing gives the EFetch body, publisher-restricted if need be.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from lxml import etree

from ._errors import MalformedResponse
from ._models import AbstractSection, License, PmcArticle, PmcSection
from ._xml import (
    PMC_ARTICLESET_PROLOG,
    PMC_RESTRICTED_COMMENT,
    _as_bytes,
    _Element,
    _guard,
    _int,
    _itertext,
    _load_xml,
    _localname,
    _opt,
    _pmcid_or_none,
    _text,
)

__all__ = [
    "JatsContent",
    "JatsFront",
    "jats_content",
    "parse_pmc_articles",
    "pmc_articleset",
    "read_jats_front",
    "restrict_pmc_article",
]


_XLINK_HREF: Final = "{http://www.w3.org/1999/xlink}href"
_ALI_LICENSE_REF: Final = "{http://www.niso.org/schemas/ali/1.0/}license_ref"


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


# ----------------------------------------------------------------------------------------------------
# Reading (EFetch db=pmc, OA .nxml)
# ----------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------
# JATS front matter (fields PmcArticle does not carry: authors, volume, pages, ISSNs, dates)
# ----------------------------------------------------------------------------------------------------


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
    ids = {el.get("pub-id-type", ""): _itertext(el) for el in meta.iterfind("article-id")}
    jids = (
        {el.get("journal-id-type", ""): _itertext(el) for el in jmeta.iterfind("journal-id")}
        if jmeta is not None
        else {}
    )
    issns = (
        tuple(
            (el.get("pub-type") or el.get("publication-format") or "", _itertext(el))
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
        surname, given = _itertext(name.find("surname")), _itertext(name.find("given-names"))
        if surname:
            authors.append((surname, given, _initials(given)))

    def date(kind: str) -> tuple[str, str, str] | None:
        for pd in meta.iterfind("pub-date"):
            if kind in (pd.get("pub-type"), pd.get("date-type"), pd.get("publication-format")):
                y = _itertext(pd.find("year"))
                if y:
                    return y, _itertext(pd.find("month")), _itertext(pd.find("day"))
        return None

    ppub, epub = date("ppub") or date("print"), date("epub") or date("electronic")
    chosen = ppub or date("collection") or epub or date("pmc-release") or ("", "", "")
    abstract: list[tuple[str, str]] = []
    ab = meta.find("abstract")
    if ab is not None:
        secs = ab.findall("sec")
        if secs:
            for sec in secs:
                title = _itertext(sec.find("title")).rstrip(":").strip()
                paras = " ".join(_itertext(p) for p in sec.iterfind("p"))
                if paras:
                    abstract.append((title, paras))
        else:
            paras = " ".join(_itertext(p) for p in ab.iterfind("p"))
            if paras:
                abstract.append(("", paras))
    kwds = tuple(_itertext(k) for k in meta.iterfind("kwd-group/kwd") if _itertext(k))
    ref_pmids = tuple(
        dict.fromkeys(
            _itertext(p) for p in art.iterfind("back/ref-list//pub-id") if p.get("pub-id-type") == "pmid"
        )
    )
    lang = art.get("{http://www.w3.org/XML/1998/namespace}lang", "")
    return JatsFront(
        title=_itertext(meta.find("title-group/article-title")),
        journal_title=_itertext(jmeta.find("journal-title-group/journal-title")) if jmeta is not None else "",
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
        volume=_itertext(meta.find("volume")),
        issue=_itertext(meta.find("issue")),
        fpage=_itertext(meta.find("fpage")),
        lpage=_itertext(meta.find("lpage")),
        elocation=_itertext(meta.find("elocation-id")),
        pub_year=chosen[0],
        pub_month=chosen[1],
        pub_day=chosen[2],
        epub=epub,
        ppub=ppub,
        abstract=tuple(abstract),
        keywords=kwds,
        ref_pmids=ref_pmids,
    )


# ----------------------------------------------------------------------------------------------------
# Writing (EFetch db=pmc)
# ----------------------------------------------------------------------------------------------------


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

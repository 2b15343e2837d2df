"""Institutional documents (handbooks, leaflets, guidelines) parsed into documents -> sections.

Four formats, one output: :class:`InstDocument` holding ordered :class:`Section` s (heading, body, pages).

* **PDF** (``pypdf``): text page by page, so every line keeps its page number. pypdf's plain text carries
  no font sizes, so headings are found heuristically, line by line (:func:`_is_pdf_heading`): a numbered
  heading (``2.1 Travel``), an ALL-CAPS line, or a short line (at most 10 words and 70 characters) that
  starts with a capital letter, has no sentence punctuation at its end (a question mark is allowed:
  "When can I travel?"), follows a line that ended a sentence (or starts a page) and is followed by a line
  starting with a capital. Running headers/footers (the same line, digits ignored, on at least half of
  the pages of a 3+ page document) and bare page numbers are dropped first. The rules miss headings that
  look like prose and can promote a one-line paragraph without a full stop; both are documented limits.
* **HTML** (``lxml.html``): ``h1``-``h6`` start sections; the text of innermost block elements (``p``,
  ``li``, ``td``...) forms the body; ``script``, ``style``, ``nav``, ``noscript``, ``template`` and
  ``footer`` (site boilerplate) are dropped.
* **Markdown**: ATX headings (``#`` to ``######``) outside fenced code blocks start sections; setext
  (underlined) headings are not recognised.
* **JATS**: :func:`retrieval.ncbi.jats_content`, the section walker PMC full texts go through, without
  its PMC-id requirement: institutional JATS has none. The abstract becomes a section.

The first ``h1``/``#`` heading (PDF: the /Title metadata, else the first heading) titles the document and
is not a section of its own when nothing but sub-headings follow it. Text before the first heading forms
a section headed by the title. Sections with an empty body are dropped (their heading carries no
evidence); ``order`` is the reading order of the sections kept.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any, Final, Literal, cast, get_args

from core import CometaError

__all__ = [
    "FORMATS",
    "DocFormat",
    "IngestError",
    "InstDocument",
    "Section",
    "SectionRef",
    "detect_format",
    "dumps",
    "iter_files",
    "parse_document",
    "parse_html",
    "parse_jats",
    "parse_markdown",
    "parse_pdf",
    "slugify",
]

DocFormat = Literal["pdf", "html", "markdown", "jats"]
FORMATS: Final[tuple[str, ...]] = get_args(DocFormat)

_SUFFIXES: Final[dict[str, DocFormat]] = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".xml": "jats",
    ".nxml": "jats",
}


class IngestError(CometaError, ValueError):
    """A file could not be ingested: unsupported type, unreadable, or no text in it."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class SectionRef:
    """What a citation needs of a section: no body (federated evidence arrives without one)."""

    section_id: str
    heading: str
    page_start: int | None
    page_end: int | None

    @property
    def pages(self) -> str:
        """``p.3``, ``pp.3-4`` or empty."""
        if self.page_start is None:
            return ""
        if self.page_end is None or self.page_end == self.page_start:
            return f"p.{self.page_start}"
        return f"pp.{self.page_start}-{self.page_end}"


@dataclass(frozen=True)
class Section:
    """A stored, addressable section of an institutional document. Segmenters read it as a
    ``segmentation.SourceSection`` (text, heading, path), the one input type every source is adapted to."""

    section_id: str  # "{order:03d}-{heading slug}": stable while the document does not change
    heading: str
    body: str  # paragraphs joined by "\n"
    page_start: int | None  # 1-based; None for formats without pages
    page_end: int | None
    order: int  # 0-based reading order within the document

    @property
    def ref(self) -> SectionRef:
        return SectionRef(self.section_id, self.heading, self.page_start, self.page_end)


@dataclass(frozen=True)
class InstDocument:
    doc_id: str
    collection: str
    title: str
    source_name: str  # the file name it was ingested from
    format: DocFormat
    sha256: str  # of the file's bytes: the identity re-ingest compares
    sections: tuple[Section, ...]
    attributes: Mapping[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """Headings and bodies in reading order, one blank line between sections."""
        return "\n\n".join(f"{s.heading}\n{s.body}" if s.heading else s.body for s in self.sections)

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.section_id == section_id), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "collection": self.collection,
            "title": self.title,
            "source_name": self.source_name,
            "format": self.format,
            "sha256": self.sha256,
            "attributes": dict(self.attributes),
            "sections": [
                {
                    "section_id": s.section_id,
                    "heading": s.heading,
                    "body": s.body,
                    "page_start": s.page_start,
                    "page_end": s.page_end,
                    "order": s.order,
                }
                for s in self.sections
            ],
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> InstDocument:
        fmt = obj["format"]
        if fmt not in FORMATS:
            raise IngestError(f"stored document has unknown format {fmt!r}")
        return cls(
            doc_id=str(obj["doc_id"]),
            collection=str(obj["collection"]),
            title=str(obj["title"]),
            source_name=str(obj["source_name"]),
            format=cast(DocFormat, fmt),
            sha256=str(obj["sha256"]),
            attributes={str(k): str(v) for k, v in dict(obj.get("attributes") or {}).items()},
            sections=tuple(
                Section(
                    section_id=str(s["section_id"]),
                    heading=str(s["heading"]),
                    body=str(s["body"]),
                    page_start=s.get("page_start"),
                    page_end=s.get("page_end"),
                    order=int(s["order"]),
                )
                for s in obj["sections"]
            ),
        )


# A raw section before ids are assigned: heading, paragraphs, first page, last page.
@dataclass
class _Raw:
    heading: str
    paragraphs: list[str] = field(default_factory=list)
    page_start: int | None = None
    page_end: int | None = None


def slugify(text: str, max_len: int = 48) -> str:
    """Lower-case ASCII words joined by ``-`` (ids and file names)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:max_len].rstrip("-")


def detect_format(path: Path) -> DocFormat:
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise IngestError(
            f"unsupported file type {path.suffix or '(none)'!r}: expected one of {sorted(_SUFFIXES)}",
            path=str(path),
        )
    return fmt


def _finish(title: str, raws: Sequence[_Raw]) -> tuple[str, tuple[Section, ...]]:
    sections: list[Section] = []
    for raw in raws:
        body = "\n".join(p for p in (_clean(p) for p in raw.paragraphs) if p)
        if not body:
            continue
        heading = _clean(raw.heading)
        order = len(sections)
        sid = f"{order:03d}-{slugify(heading, 40)}" if slugify(heading, 40) else f"{order:03d}"
        sections.append(Section(sid, heading, body, raw.page_start, raw.page_end, order))
    return _clean(title), tuple(sections)


def _clean(text: str) -> str:
    return re.sub(r"[ \t\u00a0]+", " ", text).strip()


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------

_ATX: Final = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE: Final = re.compile(r"^ {0,3}(```|~~~)")
_FRONT_MATTER: Final = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)


def parse_markdown(text: str, *, default_title: str = "") -> tuple[str, tuple[Section, ...]]:
    """ATX headings start sections; blank lines separate paragraphs (lines within one are joined)."""
    text = _FRONT_MATTER.sub("", text.replace("\r\n", "\n"))
    title = ""
    raws: list[_Raw] = [_Raw("")]
    para: list[str] = []
    in_fence = False

    def flush() -> None:
        if para:
            raws[-1].paragraphs.append(" ".join(para))
            para.clear()

    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            flush()
            continue
        m = None if in_fence else _ATX.match(line)
        if m:
            flush()
            heading = m.group(2).strip()
            # The first level-1 heading before any content is the document's title.
            if len(m.group(1)) == 1 and not title and not any(r.paragraphs for r in raws):
                title = heading
                raws[-1].heading = heading
            else:
                raws.append(_Raw(heading))
            continue
        if in_fence:
            raws[-1].paragraphs.append(line)
        elif line.strip():
            para.append(line.strip())
        else:
            flush()
    flush()
    title = title or default_title
    if not raws[0].heading:
        raws[0].heading = title
    return _finish(title, raws)


# --------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------

_HEADINGS: Final = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCKS: Final = frozenset(
    {
        "p", "li", "dt", "dd", "td", "th", "pre", "blockquote", "caption", "figcaption", "address",
        "div", "section", "article", "main", "aside", "header", "footer", "table", "ul", "ol", "dl",
    }
)  # fmt: skip
_DROP: Final = ("script", "style", "nav", "noscript", "template", "head", "footer")


def parse_html(data: bytes, *, default_title: str = "") -> tuple[str, tuple[Section, ...]]:
    import lxml.html
    from lxml import etree

    try:
        root = cast(Any, lxml.html.document_fromstring(data))  # an HtmlElement: text_content, drop_tree
    except (etree.ParserError, ValueError) as exc:
        raise IngestError(f"not parseable as HTML: {exc}") from exc
    title_el = root.find(".//title")
    page_title = _clean(title_el.text_content()) if title_el is not None else ""
    for el in list(root.iter(*_DROP)):
        el.drop_tree()
    body = root.find("body")
    if body is None:
        body = root
    title = ""
    raws: list[_Raw] = [_Raw("")]
    structural = _BLOCKS | _HEADINGS
    for el in body.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in _HEADINGS:
            heading = _clean(el.text_content())
            if tag == "h1" and not title and not any(r.paragraphs for r in raws):
                title = heading
                raws[-1].heading = heading
            elif heading:
                raws.append(_Raw(heading))
        elif tag in _BLOCKS and not any(
            isinstance(d.tag, str) and d.tag in structural for d in el.iterdescendants()
        ):
            # Innermost blocks only: an <li> holding a <p> contributes through the <p>, once.
            if text := _clean(el.text_content()):
                raws[-1].paragraphs.append(text)
    title = title or page_title or default_title
    if not raws[0].heading:
        raws[0].heading = title
    return _finish(title, raws)


# --------------------------------------------------------------------------------------------------
# JATS
# --------------------------------------------------------------------------------------------------


def parse_jats(data: bytes, *, default_title: str = "") -> tuple[str, tuple[Section, ...]]:
    from lxml import etree

    from retrieval.ncbi import jats_content

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, recover=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise IngestError(f"not well-formed XML: {exc}") from exc
    article = root if etree.QName(root).localname == "article" else root.find(".//article")
    if article is None:
        raise IngestError(f"not a JATS article: root element <{etree.QName(root).localname}>")
    content = jats_content(article)
    title = content.title
    raws: list[_Raw] = []
    abstract = " ".join(a.text for a in content.abstract if a.text)
    if abstract:
        raws.append(_Raw("Abstract", [abstract]))
    if content.loose:
        raws.append(_Raw(title or default_title, list(content.loose)))
    raws.extend(
        _Raw(s.heading or (s.path[-1] if s.path else ""), list(s.paragraphs)) for s in content.sections
    )
    return _finish(title or default_title, raws)


# --------------------------------------------------------------------------------------------------
# PDF
# --------------------------------------------------------------------------------------------------

_NUMBERED: Final = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.)\s+[A-Z]")
_PAGE_NO: Final = re.compile(r"^(?:page\s+)?\d{1,4}(?:\s*(?:/|of)\s*\d{1,4})?$", re.IGNORECASE)
_BULLET: Final = re.compile(r"^[\u2022\u25cf\u25aa\u2013\u2014*\-\u2023\u2043]\s*")
_FILE_NAME: Final = re.compile(r"\.(?:docx?|pdf|odt|rtf|pages|indd)$", re.IGNORECASE)
_SENTENCE_END: Final = (".", "!", "?", ":", ";", ")", '"', "\u201d")


def _is_pdf_heading(line: str, prev: str | None, nxt: str | None) -> bool:
    """The heading heuristic of the module docstring (``prev`` None = first line of a page)."""
    words = line.split()
    if not words or len(line) > 70 or len(words) > 10 or _BULLET.match(line) or _PAGE_NO.match(line):
        return False
    if line.endswith((".", ",", ";", ":")):
        return False
    if _NUMBERED.match(line):
        return True
    letters = [c for c in line if c.isalpha()]
    if len(letters) >= 3 and all(c.isupper() for c in letters):
        return True
    if not line[0].isupper():
        return False
    after_break = prev is None or prev.endswith(_SENTENCE_END) or _NUMBERED.match(prev) is not None
    starts_para = nxt is None or nxt[:1].isupper() or _BULLET.match(nxt) is not None
    return after_break and starts_para


def _furniture(pages: Sequence[Sequence[str]]) -> set[str]:
    """Running headers/footers: lines (digits masked) found on at least half of the pages."""
    if len(pages) < 3:
        return set()
    seen: Counter[str] = Counter()
    for lines in pages:
        seen.update({re.sub(r"\d+", "#", ln) for ln in lines})
    return {key for key, n in seen.items() if n >= max(2, (len(pages) + 1) // 2)}


def parse_pdf(data: bytes, *, default_title: str = "") -> tuple[str, tuple[Section, ...]]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(BytesIO(data))
        if reader.is_encrypted:
            raise IngestError("encrypted PDF: decrypt it before ingesting")
        pages = [
            [_clean(ln) for ln in (page.extract_text() or "").splitlines() if _clean(ln)]
            for page in reader.pages
        ]
        info: Mapping[str, Any] = reader.metadata or {}
        meta_title = _clean(str(info.get("/Title") or "")).removeprefix("Microsoft Word - ")
        if _FILE_NAME.search(meta_title) or meta_title.lower() in {"untitled", "title"}:
            meta_title = ""  # word processors put the file name there; the first heading is better
    except PyPdfError as exc:
        raise IngestError(f"not a readable PDF: {exc}") from exc
    furniture = _furniture(pages)
    title = meta_title
    raws: list[_Raw] = [_Raw("")]
    para: list[str] = []

    def flush() -> None:
        if para:
            raws[-1].paragraphs.append(_join_lines(para))
            para.clear()

    for page_no, all_lines in enumerate(pages, start=1):
        lines = [
            ln for ln in all_lines if re.sub(r"\d+", "#", ln) not in furniture and not _PAGE_NO.match(ln)
        ]
        typical = max((len(ln) for ln in lines), default=0)
        for i, line in enumerate(lines):
            prev = lines[i - 1] if i > 0 else None
            nxt = lines[i + 1] if i + 1 < len(lines) else None
            if _is_pdf_heading(line, prev, nxt):
                flush()
                if not title and not any(r.paragraphs for r in raws):
                    title = line
                    raws[-1].heading = line
                    raws[-1].page_start = page_no
                elif line == title and not any(r.paragraphs for r in raws):
                    raws[-1].heading = line  # the title page repeats the /Title metadata
                    raws[-1].page_start = page_no
                else:
                    raws.append(_Raw(line, page_start=page_no, page_end=page_no))
                continue
            if raws[-1].page_start is None:
                raws[-1].page_start = page_no
            raws[-1].page_end = page_no
            para.append(line)
            # A short line that ends a sentence most likely ends its paragraph.
            if line.endswith(_SENTENCE_END) and len(line) < 0.7 * typical:
                flush()
        flush()  # paragraphs do not run across pages in handbooks often enough to matter
    title = title or default_title
    if not raws[0].heading:
        raws[0].heading = title
    return _finish(title, raws)


def _join_lines(lines: Sequence[str]) -> str:
    out = ""
    for line in lines:
        if out.endswith("-") and line[:1].islower() and len(out) > 1 and out[-2].isalpha():
            out = out[:-1] + line  # a word hyphenated across lines
        else:
            out = f"{out} {line}" if out else line
    return out


# --------------------------------------------------------------------------------------------------
# Any file
# --------------------------------------------------------------------------------------------------


def parse_document(
    path: Path,
    collection: str,
    *,
    doc_id: str | None = None,
    attributes: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> InstDocument:
    """Parse one file into an :class:`InstDocument`. Raises :class:`IngestError` on any failure."""
    fmt = detect_format(path)
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise IngestError(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc
    default_title = path.stem.replace("_", " ").replace("-", " ").strip()
    try:
        if fmt == "pdf":
            title, sections = parse_pdf(data, default_title=default_title)
        elif fmt == "html":
            title, sections = parse_html(data, default_title=default_title)
        elif fmt == "markdown":
            title, sections = parse_markdown(_decode(data), default_title=default_title)
        else:
            title, sections = parse_jats(data, default_title=default_title)
    except IngestError as exc:
        raise IngestError(f"{path.name}: {exc}", path=str(path)) from exc
    if not sections:
        raise IngestError(f"{path.name}: no text found (scanned PDF or empty file?)", path=str(path))
    return InstDocument(
        doc_id=doc_id or slugify(path.stem) or hashlib.sha256(data).hexdigest()[:12],
        collection=collection,
        title=title or default_title,
        source_name=path.name,
        format=fmt,
        sha256=hashlib.sha256(data).hexdigest(),
        sections=sections,
        attributes=dict(attributes or {}),
    )


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def iter_files(paths: Sequence[Path]) -> Iterator[tuple[Path, bool]]:
    """Files to ingest: each path given, directories walked (sorted) for supported suffixes only.
    The flag says whether the file was named explicitly (an unsupported one then counts as a failure)."""
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.suffix.lower() in _SUFFIXES and not f.name.startswith("."):
                    yield f, False
        else:
            yield p, True


def dumps(doc: InstDocument) -> str:
    return json.dumps(doc.to_json(), ensure_ascii=False, indent=1)

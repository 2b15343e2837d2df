"""Typed records parsed from E-utilities responses.

Frozen dataclasses: cheap to build in bulk, hashable, safe to cache and to share between requests.
PMIDs and PMCIDs are strings; PMCIDs are always normalised to the prefixed ``PMC<digits>`` form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

__all__ = [
    "NOTICE_REF_TYPES",
    "AbstractSection",
    "DbField",
    "DbInfo",
    "DbLink",
    "DocSummary",
    "EInfoResult",
    "ESearchResult",
    "License",
    "MeshHeading",
    "MeshQualifier",
    "NoticeType",
    "PmcArticle",
    "PmcSection",
    "PubDate",
    "PublicationType",
    "PubmedNotice",
    "PubmedRecord",
    "normalise_pmcid",
]


def normalise_pmcid(value: str) -> str:
    """``'8435807'``, ``'PMC8435807'``, ``'pmc8435807'`` -> ``'PMC8435807'``."""
    v = value.strip()
    if v[:3].upper() == "PMC":
        v = v[3:]
    if not v.isdigit():
        raise ValueError(f"not a PMCID: {value!r}")
    return "PMC" + v


@dataclass(frozen=True, slots=True)
class AbstractSection:
    text: str
    label: str | None = None
    nlm_category: str | None = None


@dataclass(frozen=True, slots=True)
class PubDate:
    """Publication date as PubMed gives it: Year[/Month[/Day]] or Season, or a free-text MedlineDate."""

    year: int | None = None
    month: int | None = None
    day: int | None = None
    season: str | None = None
    medline_date: str | None = None

    def sort_key(self) -> tuple[int, int, int]:
        return (self.year or 0, self.month or 0, self.day or 0)


@dataclass(frozen=True, slots=True)
class PublicationType:
    name: str
    ui: str | None = None
    # True for a type a corpus builder synthesised (a placeholder or a guess), never NCBI's own indexing:
    # searches and the evidence policy ignore it. On the wire it travels as an XML comment (INFERRED_MARK).
    inferred: bool = False


@dataclass(frozen=True, slots=True)
class MeshQualifier:
    name: str
    ui: str | None = None
    major: bool = False


@dataclass(frozen=True, slots=True)
class MeshHeading:
    descriptor: str
    ui: str | None = None
    major: bool = False
    qualifiers: tuple[MeshQualifier, ...] = ()

    @property
    def is_major(self) -> bool:
        """Major topic if the descriptor or any of its qualifiers is starred."""
        return self.major or any(q.major for q in self.qualifiers)


NoticeType = Literal[
    "expression_of_concern", "erratum", "update", "retraction", "partial_retraction", "republished"
]

# The CommentsCorrections RefTypes that say something about the standing of *this* study, and what each is.
# The rest are not kept: comments, reprints, citations, and the "...Of"/"...For" links a notice's own record
# carries back to the study it is about. PartialRetractionIn is newer than pubmed_250101.dtd; NCBI uses it.
NOTICE_REF_TYPES: Final[Mapping[str, NoticeType]] = MappingProxyType(
    {
        "ExpressionOfConcernIn": "expression_of_concern",
        "ErratumIn": "erratum",
        "UpdateIn": "update",
        "RetractionIn": "retraction",
        "PartialRetractionIn": "partial_retraction",
        "RetractedandRepublishedIn": "republished",
        "CorrectedandRepublishedIn": "republished",
    }
)


@dataclass(frozen=True, slots=True)
class PubmedNotice:
    """A notice PubMed links to a record (``CommentsCorrections``): a retraction, an expression of concern,
    an erratum, a newer version (``UpdateIn``: ``pmid`` is the update's) or a republication."""

    ref_type: str  # PubMed's RefType, one of NOTICE_REF_TYPES
    ref_source: str = ""  # the notice's citation, as PubMed writes it ("Nature 2001 Jun 7;411(6838):720")
    pmid: str | None = None  # the notice's (or the update's) PMID, when PubMed gives one

    def __post_init__(self) -> None:
        if self.ref_type not in NOTICE_REF_TYPES:
            raise ValueError(f"not a notice RefType: {self.ref_type!r}")

    @property
    def type(self) -> NoticeType:
        return NOTICE_REF_TYPES[self.ref_type]


@dataclass(frozen=True, slots=True)
class PubmedRecord:
    pmid: str
    title: str
    abstract: tuple[AbstractSection, ...] = ()
    journal: str | None = None
    journal_iso: str | None = None
    pub_date: PubDate = field(default_factory=PubDate)
    publication_types: tuple[PublicationType, ...] = ()
    mesh: tuple[MeshHeading, ...] = ()
    keywords: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()
    doi: str | None = None
    pmcid: str | None = None
    status: str | None = None
    retracted: bool = False
    notices: tuple[PubmedNotice, ...] = ()

    def __post_init__(self) -> None:
        # A RetractionIn notice is a retraction, however the record was built (NCBI also adds the
        # "Retracted Publication" type, which sets the flag when parsed): one rule for the evidence policy.
        if not self.retracted and any(n.ref_type == "RetractionIn" for n in self.notices):
            object.__setattr__(self, "retracted", True)

    @property
    def has_abstract(self) -> bool:
        return any(s.text.strip() for s in self.abstract)

    @property
    def abstract_text(self) -> str:
        """Sections joined with their labels kept: ``'BACKGROUND: ... RESULTS: ...'``."""
        parts = [f"{s.label}: {s.text}" if s.label else s.text for s in self.abstract if s.text]
        return "\n".join(parts)

    @property
    def year(self) -> int | None:
        return self.pub_date.year


@dataclass(frozen=True, slots=True)
class License:
    url: str | None = None
    text: str | None = None
    license_type: str | None = None  # e.g. ali:license_ref content-type or license/@license-type


@dataclass(frozen=True, slots=True)
class PmcSection:
    """One body section, flattened depth-first; ``path`` holds the ancestor headings, outermost first."""

    heading: str
    paragraphs: tuple[str, ...]
    path: tuple[str, ...] = ()
    sec_type: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(self.paragraphs)


@dataclass(frozen=True, slots=True)
class PmcArticle:
    pmcid: str
    title: str
    pmid: str | None = None
    doi: str | None = None
    article_type: str | None = None
    journal: str | None = None
    year: int | None = None
    abstract: tuple[AbstractSection, ...] = ()
    sections: tuple[PmcSection, ...] = ()
    license: License | None = None
    copyright: str | None = None
    open_access: bool = False
    body_withheld: bool = False  # no <body>: the publisher does not allow full-text XML download

    @property
    def abstract_text(self) -> str:
        parts = [f"{s.label}: {s.text}" if s.label else s.text for s in self.abstract if s.text]
        return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class ESearchResult:
    count: int
    ids: tuple[str, ...] = ()
    retmax: int = 0
    retstart: int = 0
    query_translation: str | None = None
    translations: tuple[tuple[str, str], ...] = ()
    phrases_not_found: tuple[str, ...] = ()
    quoted_phrases_not_found: tuple[str, ...] = ()
    phrases_ignored: tuple[str, ...] = ()
    output_messages: tuple[str, ...] = ()
    query_key: str | None = None
    webenv: str | None = None
    fields_not_found: tuple[str, ...] = ()  # ErrorList/FieldNotFound: a field tag PubMed does not know


@dataclass(frozen=True, slots=True)
class DocSummary:
    uid: str
    title: str | None = None
    pubdate: str | None = None
    source: str | None = None
    authors: tuple[str, ...] = ()
    pubtypes: tuple[str, ...] = ()
    doi: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    has_abstract: bool | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DbField:
    name: str
    full_name: str
    description: str = ""
    is_date: bool = False
    hierarchy: bool = False


@dataclass(frozen=True, slots=True)
class DbLink:
    name: str
    menu: str
    description: str
    db_to: str


@dataclass(frozen=True, slots=True)
class DbInfo:
    name: str
    menu_name: str = ""
    description: str = ""
    count: int | None = None
    last_update: str | None = None
    fields: tuple[DbField, ...] = ()
    links: tuple[DbLink, ...] = ()


@dataclass(frozen=True, slots=True)
class EInfoResult:
    databases: tuple[str, ...] = ()
    info: DbInfo | None = None

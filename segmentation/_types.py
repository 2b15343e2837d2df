"""What segmentation consumes and produces. Independent of retrieval: any text with sections will do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Chunk", "Segmenter", "Sentence", "SourceSection", "SourceText"]


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    start: int  # character offsets in the section text
    end: int


@dataclass(frozen=True, slots=True)
class SourceSection:
    """One structural unit of a document (an abstract, or one JATS body section)."""

    text: str
    heading: str = ""
    path: tuple[str, ...] = ()  # ancestor headings + own heading, outermost first


@dataclass(frozen=True, slots=True)
class SourceText:
    doc_id: str  # e.g. "PMID:23149571" or "PMC3574550"
    sections: tuple[SourceSection, ...]


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str  # f"{doc_id}#{n}", n counting chunks over the whole document
    doc_id: str
    text: str
    section_index: int  # index into SourceText.sections; chunks never cross sections
    heading: str
    path: tuple[str, ...]
    start: int  # character offsets of ``text`` in the section text (overlap included)
    end: int
    sentence_start: int  # sentence indexes [start, end) in the section, overlap included
    sentence_end: int
    token_count: int  # counted with the encoder's own tokenizer
    prev_id: str | None = None
    next_id: str | None = None
    overlap_sentences: int = 0  # sentences borrowed from the next chunk for continuity


@runtime_checkable
class Segmenter(Protocol):
    @property
    def name(self) -> str: ...

    def segment(self, doc: SourceText) -> list[Chunk]: ...

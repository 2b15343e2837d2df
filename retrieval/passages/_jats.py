"""Documents to segment, built from parsed JATS full texts and PubMed abstracts.

Structure is kept, not flattened: each JATS body section becomes one :class:`SourceSection` (its
paragraphs joined by ``\\n``, which the segmenters treat as a sentence break), with its heading and the
path of ancestor headings as metadata. Segmenters never let a chunk cross a section.

References, figures, tables, formulas and supplementary material are already dropped by
:func:`retrieval.ncbi.parse_pmc_articles`, which does not expose figure or table captions, so there
is no option to include them here. Back matter sections that reach the body (funding, disclosures,
acknowledgements, conflicts of interest, abbreviations) are skipped unless ``include_back_matter``.
"""

from __future__ import annotations

import re
from typing import Final

from retrieval.ncbi import PmcArticle, PubmedRecord
from segmentation import SourceSection, SourceText

__all__ = ["ABSTRACT_HEADING", "source_from_abstract", "source_from_pmc", "source_from_pubmed"]

ABSTRACT_HEADING: Final = "Abstract"

_BACK_MATTER: Final = re.compile(
    r"^\s*(?:funding|financial support|disclosures?|acknowledge?ments?|conflicts? of interests?|"
    r"competing interests?|declaration of interests?|abbreviations|authors'? contributions?|"
    r"supplementary (?:material|data|information)|data availability)\b",
    re.IGNORECASE,
)


def source_from_pmc(
    article: PmcArticle, *, include_abstract: bool = True, include_back_matter: bool = False
) -> SourceText:
    """One section for the abstract (labels kept inline, as ``PmcArticle.abstract_text`` gives them),
    then one per body section, in document order. ``doc_id`` is the PMCID."""
    sections: list[SourceSection] = []
    abstract = article.abstract_text.strip()
    if include_abstract and abstract:
        sections.append(SourceSection(abstract, ABSTRACT_HEADING, (ABSTRACT_HEADING,)))
    for sec in article.sections:
        heading = sec.heading.strip()
        if not include_back_matter and any(_BACK_MATTER.match(h) for h in (*sec.path, heading) if h):
            continue
        text = "\n".join(p.strip() for p in sec.paragraphs if p.strip())
        if not text:
            continue
        path = (*sec.path, heading) if heading else tuple(sec.path)
        sections.append(SourceSection(text, heading, path))
    return SourceText(article.pmcid, tuple(sections))


def source_from_abstract(pmid: str, title: str, abstract_text: str) -> SourceText:
    """An abstract is a single passage: one section, headed ``Abstract``. The title is not part of the
    text (encoders that take it, such as MedCPT's article encoder, get it beside each chunk); it is
    accepted so callers pass what they have, and is used as the heading only when there is no abstract
    text at all (a title-only record then still yields one chunk)."""
    text = abstract_text.strip()
    if not text:
        text = title.strip()
    sections = (SourceSection(text, ABSTRACT_HEADING, (ABSTRACT_HEADING,)),) if text else ()
    return SourceText(f"PMID:{pmid}", sections)


def source_from_pubmed(record: PubmedRecord) -> SourceText:
    """:func:`source_from_abstract` for a parsed PubMed record (structured labels kept inline)."""
    return source_from_abstract(record.pmid, record.title, record.abstract_text)

"""Publication notices: what PubMed says happened to a study since (an expression of concern, a correction,
a newer version, a retraction, a republication), in plain words for a patient; and which reviews a newer
version in the same evidence replaces.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from retrieval.ncbi import NoticeType, PubmedNotice, PubmedRecord

__all__ = ["CONCERN_TYPES", "Notice", "notice_of", "superseded"]

# The notices that put a study's findings in doubt without withdrawing it: kept, but to be read with care.
CONCERN_TYPES: frozenset[NoticeType] = frozenset({"expression_of_concern", "partial_retraction"})

_WORDS: Mapping[str, str] = {
    "ExpressionOfConcernIn": "An expression of concern was published about this study",
    "ErratumIn": "A correction was published for this study",
    "UpdateIn": "A newer version of this review exists",
    "RetractionIn": "This study was retracted",
    "PartialRetractionIn": "Part of this study was retracted",
    "RetractedandRepublishedIn": "This study was retracted and published again in a revised version",
    "CorrectedandRepublishedIn": "A corrected version of this study was published again",
}


@dataclass(frozen=True, slots=True)
class Notice:
    """One notice about a study, as the evidence shows it: its type, the PMID of the notice (of the newer
    version, for ``update``) when PubMed gives one, and a short text for a patient."""

    type: NoticeType
    pmid: str | None
    text: str


def notice_of(notice: PubmedNotice, in_evidence: Collection[str] = ()) -> Notice:
    """``notice`` in plain words; an update says whether the newer version is among ``in_evidence``."""
    text = _WORDS[notice.ref_type]
    if notice.type == "update" and notice.pmid:
        text += f": PMID {notice.pmid}"
        if notice.pmid not in in_evidence:
            text += ". It is not among the studies found for this question"
    elif notice.pmid:
        text += f" (PMID {notice.pmid})"
    return Notice(notice.type, notice.pmid, text + ".")


def superseded(records: Iterable[PubmedRecord]) -> dict[str, str]:
    """PMID -> its newest version among ``records``, for every record a newer version of which (PubMed's
    ``UpdateIn``, followed from update to update) is among them. A loop of updates (a data error) replaces
    nothing: only a version with no newer one present can replace another."""
    newer: dict[str, Sequence[str]] = {
        r.pmid: [n.pmid for n in r.notices if n.type == "update" and n.pmid] for r in records
    }
    found: dict[str, str] = {}
    for pmid in newer:
        seen, current = {pmid}, pmid
        while (step := next((p for p in newer[current] if p in newer and p not in seen), None)) is not None:
            seen.add(step)
            current = step
        if current != pmid:
            found[pmid] = current
    return {old: new for old, new in found.items() if new not in found}

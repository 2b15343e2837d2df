"""The evidence policy: one batched EFetch, publication-type classes, depth by type (abstract or PMC full
text), date windows, retractions, publication notices (and newer versions of reviews preferred), why each
candidate was dropped, and what each study was (its grade: design, year, size)."""

from retrieval.ncbi import NoticeType

from ._config import EvidenceSettings
from ._evidence import (
    DROP_NO_ABSTRACT,
    DROP_NO_YEAR,
    DROP_NOT_FOUND,
    DROP_OUT_OF_WINDOW,
    DROP_RETRACTED,
    DROP_SUPERSEDED,
    FALLBACK_LINK_FAILED,
    FALLBACK_NO_LINK,
    FALLBACK_PMC_FAILED,
    FALLBACK_PMC_MISSING,
    FALLBACK_WITHHELD,
    Depth,
    DocClass,
    Dropped,
    EvidenceBuilder,
    EvidenceDoc,
    EvidenceSet,
    PolicyRow,
    TextUnit,
    classify,
    depth_for,
    policy_table,
    pubmed_url,
)
from ._grade import DESIGN_RANK, StudyGrade, grade_study
from ._notices import CONCERN_TYPES, Notice

__all__ = [
    "CONCERN_TYPES",
    "DESIGN_RANK",
    "DROP_NOT_FOUND",
    "DROP_NO_ABSTRACT",
    "DROP_NO_YEAR",
    "DROP_OUT_OF_WINDOW",
    "DROP_RETRACTED",
    "DROP_SUPERSEDED",
    "FALLBACK_LINK_FAILED",
    "FALLBACK_NO_LINK",
    "FALLBACK_PMC_FAILED",
    "FALLBACK_PMC_MISSING",
    "FALLBACK_WITHHELD",
    "Depth",
    "DocClass",
    "Dropped",
    "EvidenceBuilder",
    "EvidenceDoc",
    "EvidenceSet",
    "EvidenceSettings",
    "Notice",
    "NoticeType",
    "PolicyRow",
    "StudyGrade",
    "TextUnit",
    "classify",
    "depth_for",
    "grade_study",
    "policy_table",
    "pubmed_url",
]

"""The typed wire schema: requests, responses, and the evidence, passages, query plan and judge results
they carry (what ``/docs`` documents and federated nodes exchange)."""

from ._evidence import (
    AnswerMode,
    CollectionEvidenceOut,
    EvidenceDocOut,
    FusedEvidenceOut,
    JudgeReportOut,
    Label,
    PassageOut,
    QueryOut,
    SearchOut,
    Significance,
    SourceEvidenceOut,
)
from ._requests import (
    AskRequest,
    AskResponse,
    CitationOut,
    CollectionSearchRequest,
    ErrorResponse,
    JudgeAnswerIn,
    JudgeRequest,
    SearchRequest,
    SourceResultOut,
    SourceStatusOut,
    UserDocument,
)

__all__ = [
    "AnswerMode",
    "AskRequest",
    "AskResponse",
    "CitationOut",
    "CollectionEvidenceOut",
    "CollectionSearchRequest",
    "ErrorResponse",
    "EvidenceDocOut",
    "FusedEvidenceOut",
    "JudgeAnswerIn",
    "JudgeReportOut",
    "JudgeRequest",
    "Label",
    "PassageOut",
    "QueryOut",
    "SearchOut",
    "SearchRequest",
    "Significance",
    "SourceEvidenceOut",
    "SourceResultOut",
    "SourceStatusOut",
    "UserDocument",
]

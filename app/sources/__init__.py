"""Asking across sources: PubMed, this node's institutional collections and other nodes' (federation),
each answered on its own behind attribute-based access policies, then compared by the judge."""

from ._access import (
    ANONYMOUS,
    NOT_AVAILABLE,
    AccessEngine,
    InvalidToken,
    PolicyError,
    Subject,
    TokenVerifier,
    bearer_token,
    decode_jwt,
    load_policies,
)
from ._exchange import ASSERTION_TYP, AssertionSigner, AssertionVerifier, CallerVerifier
from ._federation import (
    FederationClient,
    FusedItem,
    SourceStatus,
    evidence_from_json,
    evidence_to_json,
    fuse_sources,
)
from ._service import (
    AcrossOutcome,
    SourceOutcome,
    SourceRef,
    SourcesService,
    UnknownSource,
    parse_sources,
    response_json,
)

__all__ = [
    "ANONYMOUS",
    "ASSERTION_TYP",
    "NOT_AVAILABLE",
    "AccessEngine",
    "AcrossOutcome",
    "AssertionSigner",
    "AssertionVerifier",
    "CallerVerifier",
    "FederationClient",
    "FusedItem",
    "InvalidToken",
    "PolicyError",
    "SourceOutcome",
    "SourceRef",
    "SourceStatus",
    "SourcesService",
    "Subject",
    "TokenVerifier",
    "UnknownSource",
    "bearer_token",
    "decode_jwt",
    "evidence_from_json",
    "evidence_to_json",
    "fuse_sources",
    "load_policies",
    "parse_sources",
    "response_json",
]

"""Why a search ended with no documents: one cause, decided here (:func:`zero_hit_cause`), and PubMed's
ErrorList/WarningList turned into fixed-format warnings (:func:`pubmed_warnings`).

The causes (:data:`ZeroHitCause`), strongest explanation first:

- ``refused``: the question was not searched at all (urgent, out of scope, a language not read);
- ``phi_scrubbed``: nothing but personal details was left once they were removed, so nothing was sent;
- ``ncbi_unavailable``: E-utilities failed for availability reasons (5xx, timeouts, rate limits) and
  nothing could be served from the cache;
- ``pubmed_error``: ESearch refused a query, or its ErrorList says a phrase or field tag is unknown;
- ``filtered``: candidates were found, and the evidence policy left every one of them out;
- ``pubmed_warning``: ESearch's WarningList says a quoted phrase was not found or a phrase was ignored;
- ``none_found``: PubMed understood every query and nothing matches.

The caller counts the cause once per question (``cometa_zero_hit_total{cause}``, :func:`count_zero_hit`):
the Asker for ``/ask`` and every frontend over it, the ``/search`` route for itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal, get_args

from retrieval.eutils import is_unavailable

from ._adapte import AdaptEResult
from ._metrics import ZERO_HITS

__all__ = [
    "ZERO_HIT_CAUSES",
    "ZeroHitCause",
    "count_zero_hit",
    "error_cause",
    "pubmed_warnings",
    "zero_hit_cause",
]

ZeroHitCause = Literal[
    "none_found",
    "filtered",
    "pubmed_error",
    "pubmed_warning",
    "ncbi_unavailable",
    "phi_scrubbed",
    "refused",
]
ZERO_HIT_CAUSES: tuple[ZeroHitCause, ...] = get_args(ZeroHitCause)

for _cause in ZERO_HIT_CAUSES:
    ZERO_HITS.labels(_cause)  # every series exists at 0 from the start, so a rate has a baseline

# ESearch's list -> the warning's fixed text (the phrase, when named, follows it).
_NOTES = (
    ("phrases_not_found", "PubMed: phrase not found"),
    ("fields_not_found", "PubMed: field not recognised"),
    ("quoted_phrases_not_found", "PubMed: quoted phrase not found"),
    ("phrases_ignored", "PubMed: phrase ignored"),
)
_TAG = re.compile(r"\[[^\]]*\]\s*$")


def zero_hit_cause(
    adapte: AdaptEResult, *, candidates: bool, unavailable: bool, phi_emptied: bool
) -> ZeroHitCause:
    """The cause of a search that ended with no documents (never ``refused``: that is decided before).

    ``candidates``: either arm found something (the evidence policy then left it all out);
    ``unavailable``: an E-utilities call of the question failed for availability reasons;
    ``phi_emptied``: the question was only personal details, so nothing was searched."""
    if phi_emptied:
        return "phi_scrubbed"
    if unavailable:
        return "ncbi_unavailable"
    if adapte.errors:
        return "pubmed_error"  # a tier's query refused (not an outage: that is ``unavailable``)
    if candidates:
        return "filtered"
    empty = [t for t in adapte.tiers if t.count == 0]
    if any(t.phrases_not_found or t.fields_not_found for t in empty):
        return "pubmed_error"
    if any(t.quoted_phrases_not_found or t.phrases_ignored for t in empty):
        return "pubmed_warning"
    return "none_found"


def error_cause(exc: BaseException) -> ZeroHitCause:
    """The cause of a search that raised instead of answering: an outage, or a query NCBI refused."""
    return "ncbi_unavailable" if is_unavailable(exc) else "pubmed_error"


def count_zero_hit(cause: ZeroHitCause) -> None:
    """One question ended with no documents, for ``cause`` (once per question, by its flow)."""
    ZERO_HITS.labels(cause).inc()


def _bare(phrase: str) -> str:
    """A phrase as ESearch echoes it (``"Glioblastoma"[mh]``, ``gliom*``) as its words, lower-cased."""
    return " ".join(_TAG.sub("", phrase).replace('"', " ").replace("*", " ").lower().split())


def pubmed_warnings(adapte: AdaptEResult, concepts: Iterable[str]) -> list[str]:
    """PubMed's ErrorList/WarningList of the tiers that found nothing, as fixed-format warnings, once each.

    ``concepts``: the plan's recognised clinical concepts (texts and MeSH names). A phrase is named only when
    it is one of them and it is in the query that was sent; otherwise, and for a field tag always, the
    warning says the kind alone. ESearch echoes what it was given, and nothing of the patient's own words
    may reach a response that way (the caller never logs these either)."""
    known: dict[str, str] = {}
    for c in concepts:
        if _bare(c):
            known.setdefault(_bare(c), c)  # of two casings of one concept, the first given names it
    out: dict[str, None] = {}
    for tier in adapte.tiers:
        if tier.count or tier.error:
            continue
        sent = _bare(tier.query)
        for attr, message in _NOTES:
            for phrase in getattr(tier, attr):
                concept = None if attr == "fields_not_found" else known.get(_bare(phrase))
                named = concept is not None and _bare(concept) in sent
                out.setdefault(f'{message}: "{concept}"' if named else message)
    return list(out)

"""Reciprocal Rank Fusion of CHSDR's retrieval arms (Cormack et al., 2009), keyed on PMID.

Each arm is a ranked list of :class:`ArmHit`; a PMID's fused score is ``sum(weight_arm / (k + rank_arm))``
over the arms that returned it. Scores from different arms (ESearch order, inner products) are never
compared directly: only ranks enter the formula, which is why RRF needs no score calibration.

Decisions:

- ``rank`` is the 1-based position in the arm's list as given. A PMID listed twice in one arm counts once,
  at its first (best) position; later positions are not renumbered, so the other hits keep the rank the
  arm gave them.
- Weights default to 1.0 per arm and must be >= 0. A weight of 0 mutes an arm: it adds nothing to any
  score and brings in no candidates of its own (a PMID seen only by muted arms is left out, which makes
  ``weight=0`` an ablation switch), but its provenance is still recorded on PMIDs another arm found.
- Ties are broken deterministically: higher score, then the best rank in any contributing arm, then the
  arm that comes first in ``tie_break`` (arms it does not name follow in mapping order) among those holding
  that best rank, then the PMID string. With two arms and equal weights the typical exact tie is a PMID only
  one arm returned at rank *r* against a PMID only the other arm returned at the same rank *r* (or two PMIDs
  both arms returned, at swapped ranks): ``tie_break`` says which arm's hit goes first. :func:`fuse` takes
  it from the settings (``EvidenceSettings.tie_break``: the dense arm by default, chosen on the dev sets
  where the dense arm alone ranks the gold higher than the Boolean arm alone;
  ``docs/history/performance-notes.md``).
  Only exact ties are touched: scores, weights and every strict order stay what the formula gives.
- Sums use :func:`math.fsum` (correctly rounded), so equal rank sets give bit-equal scores whatever the
  arm order, and ties are real ties.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from ._adapte import AdaptEResult

__all__ = [
    "BOOLEAN_ARM",
    "DENSE_ARM",
    "ArmHit",
    "FusedHit",
    "FusionWeights",
    "Provenance",
    "ScoredPmid",
    "boolean_hits",
    "dense_hits",
    "fuse",
    "rrf",
]

BOOLEAN_ARM = "boolean"
DENSE_ARM = "dense"


@dataclass(frozen=True, slots=True)
class ArmHit:
    """One PMID as an arm returned it. Rank is implied by the position in the arm's list."""

    pmid: str
    score: float | None = None  # the arm's own score (dense inner product); None for ESearch order
    tier: int | None = None  # Adapt-E tier that first produced the PMID
    query: str | None = None  # that tier's query
    tier_kind: str | None = (
        None  # "ladder" | "union" | "fallback" | "undated" (undated = outside the asked years)
    )


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where one fused PMID came from in one arm."""

    arm: str
    rank: int  # 1-based within the arm
    score: float | None = None
    tier: int | None = None
    query: str | None = None
    tier_kind: str | None = None


@dataclass(frozen=True, slots=True)
class FusedHit:
    pmid: str
    rrf_score: float
    rank: int  # 1-based fused rank
    provenance: tuple[Provenance, ...]  # one entry per arm that returned the PMID, in arm order

    @property
    def arms(self) -> tuple[str, ...]:
        return tuple(p.arm for p in self.provenance)

    def from_arm(self, arm: str) -> Provenance | None:
        return next((p for p in self.provenance if p.arm == arm), None)


class ScoredPmid(Protocol):
    """Anything a dense retriever returns that names a PMID and its similarity."""

    @property
    def pmid(self) -> str: ...

    @property
    def score(self) -> float: ...


def rrf(
    arms: Mapping[str, Sequence[ArmHit]],
    *,
    k: float = 60,
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
    tie_break: Sequence[str] = (),
) -> list[FusedHit]:
    """Fuse ranked arms; returns hits ordered by fused rank (see the module docstring for the rules).

    ``tie_break`` names arms in the order they win exact ties; names of absent arms are ignored, unnamed
    arms follow in mapping order (``()``: mapping order alone).
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    weights = weights or {}
    for name, weight in weights.items():
        if weight < 0 or math.isnan(weight):
            raise ValueError(f"weight of arm {name!r} must be >= 0, got {weight}")
    precedence = [name for name in dict.fromkeys(tie_break) if name in arms]
    precedence += [name for name in arms if name not in precedence]
    arm_order = {name: i for i, name in enumerate(precedence)}
    contributions: dict[str, list[float]] = {}
    provenance: dict[str, list[Provenance]] = {}
    for name, hits in arms.items():
        weight = float(weights.get(name, 1.0))
        seen: set[str] = set()
        for position, hit in enumerate(hits, start=1):
            pmid = str(hit.pmid).strip()
            if not pmid or pmid in seen:
                continue
            seen.add(pmid)
            provenance.setdefault(pmid, []).append(
                Provenance(name, position, hit.score, hit.tier, hit.query, hit.tier_kind)
            )
            if weight > 0:
                contributions.setdefault(pmid, []).append(weight / (k + position))

    def sort_key(pmid: str) -> tuple[float, int, int, str]:
        best = min(provenance[pmid], key=lambda p: (p.rank, arm_order[p.arm]))
        return (-scores[pmid], best.rank, arm_order[best.arm], pmid)

    # Only PMIDs with a contribution compete; provenance from muted arms rides along on them.
    scores = {pmid: math.fsum(parts) for pmid, parts in contributions.items()}
    ordered = sorted(scores, key=sort_key)
    if limit is not None:
        ordered = ordered[: max(limit, 0)]
    return [
        FusedHit(pmid, scores[pmid], rank, tuple(provenance[pmid])) for rank, pmid in enumerate(ordered, 1)
    ]


def boolean_hits(result: AdaptEResult) -> list[ArmHit]:
    """Adapt-E's ranked PMIDs as boolean-arm hits, each tagged with the tier (and query) that first found it.

    ``AdaptEResult.pmids`` lists each tier's *new* PMIDs in tier order, so walking the tiers and taking
    ``new_pmids`` at a time recovers every PMID's tier without another search.
    """
    hits: list[ArmHit] = []
    pmids = iter(result.pmids)
    for tier in result.tiers:
        for _ in range(tier.new_pmids):
            pmid = next(pmids, None)
            if pmid is None:
                break
            hits.append(ArmHit(pmid, tier=tier.tier, query=tier.query, tier_kind=tier.kind))
    # Defensive: PMIDs no tier accounts for (a hand-built result) keep their rank, without a tier.
    hits.extend(ArmHit(pmid) for pmid in pmids)
    return hits


def dense_hits(results: Iterable[tuple[str, float] | ScoredPmid | ArmHit]) -> list[ArmHit]:
    """Dense top-k, already in the retriever's order, as dense-arm hits carrying their similarity.

    Accepts ``(pmid, score)`` pairs or objects with ``pmid``/``score``; the order is kept as given
    (retrievers return best first), never re-sorted by score.
    """
    hits: list[ArmHit] = []
    for item in results:
        if isinstance(item, ArmHit):
            hits.append(item)
            continue
        if isinstance(item, tuple):
            pmid, score = item
        else:
            pmid, score = item.pmid, item.score
        hits.append(ArmHit(str(pmid), score=float(score)))
    return hits


# A plan with fewer recognised concepts searched PubMed with the question's plain words: on the world's dev
# questions the dense arm alone ranked the trial in its top 10 far more often than such a ladder did.
MIN_RECOGNISED: Final = 2


class FusionWeights(Protocol):
    """The RRF constant and arm weights (``retrieval.evidence.EvidenceSettings`` carries them)."""

    @property
    def rrf_k(self) -> int: ...

    @property
    def boolean_weight(self) -> float: ...

    @property
    def dense_weight(self) -> float: ...

    @property
    def boolean_weight_vague(self) -> float: ...

    @property
    def tie_break(self) -> str: ...


def fuse(
    settings: FusionWeights,
    *,
    boolean: AdaptEResult | Sequence[ArmHit] | None = None,
    dense: Iterable[tuple[str, float] | ScoredPmid | ArmHit] | None = None,
    limit: int | None = None,
    recognised: int | None = None,
) -> list[FusedHit]:
    """RRF of the two CHSDR arms with ``k``, arm weights and the arm that wins exact ties from ``settings``;
    a missing arm is skipped. ``recognised``: how many clinical concepts the query plan recognised; below
    :data:`MIN_RECOGNISED` the Boolean arm weighs ``boolean_weight_vague`` (None: ``boolean_weight``)."""
    arms: dict[str, Sequence[ArmHit]] = {}
    if boolean is not None:
        arms[BOOLEAN_ARM] = list(boolean) if isinstance(boolean, Sequence) else boolean_hits(boolean)
    if dense is not None:
        arms[DENSE_ARM] = dense_hits(dense)
    vague = recognised is not None and recognised < MIN_RECOGNISED
    boolean_weight = settings.boolean_weight_vague if vague else settings.boolean_weight
    return rrf(
        arms,
        k=settings.rrf_k,
        weights={BOOLEAN_ARM: boolean_weight, DENSE_ARM: settings.dense_weight},
        limit=limit,
        tie_break=(settings.tie_break,),
    )

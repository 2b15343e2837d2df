"""RRF over the Boolean ladder and the dense arm: math, ties, weights, provenance, Adapt-E tiers."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from retrieval import AdaptE, AdaptEResult, EutilsSettings, LocalServerSettings, QueryPlan, TierResult
from retrieval.eutils import LOCAL_BASE_URL, EutilsClient
from retrieval.evidence import EvidenceSettings
from retrieval.localncbi import create_eutils_app, eutils_transport
from retrieval.search import ArmHit, FusedHit, Provenance, boolean_hits, dense_hits, fuse, rrf


def arm(*pmids: str) -> list[ArmHit]:
    return [ArmHit(p) for p in pmids]


def scores(hits: list[FusedHit]) -> dict[str, float]:
    return {h.pmid: h.rrf_score for h in hits}


def test_rrf_two_arms_matches_hand_computed_scores() -> None:
    fused = rrf({"boolean": arm("A", "B", "C"), "dense": arm("C", "A", "D")})
    expected = {"A": 1 / 61 + 1 / 62, "B": 1 / 62, "C": 1 / 63 + 1 / 61, "D": 1 / 63}
    assert scores(fused) == pytest.approx(expected, abs=1e-15)
    assert [h.pmid for h in fused] == ["A", "C", "B", "D"]
    assert [h.rank for h in fused] == [1, 2, 3, 4]
    assert fused[0].arms == ("boolean", "dense")
    assert fused[2].arms == ("boolean",)


def test_rrf_k_and_weights() -> None:
    arms = {"boolean": arm("A", "B", "C"), "dense": arm("C", "A", "D")}
    fused = rrf(arms, k=10, weights={"boolean": 2.0, "dense": 0.5})
    expected = {"A": 2 / 11 + 0.5 / 12, "B": 2 / 12, "C": 2 / 13 + 0.5 / 11, "D": 0.5 / 13}
    assert scores(fused) == pytest.approx(expected, abs=1e-15)
    assert [h.pmid for h in fused] == ["A", "C", "B", "D"]
    # An arm missing from ``weights`` counts 1.0.
    assert scores(rrf(arms, weights={"boolean": 2.0}))["D"] == pytest.approx(1 / 63)


def test_rrf_exact_ties_are_broken_by_best_rank_then_arm_order() -> None:
    # Every PMID scores 1/61 + 1/62 (bit-equal thanks to fsum) and each holds a rank 1 somewhere.
    fused = rrf({"a": arm("X", "Y"), "b": arm("Y", "Z"), "c": arm("Z", "X")})
    assert len({h.rrf_score for h in fused}) == 1
    assert [h.pmid for h in fused] == ["X", "Y", "Z"]
    # Same score, different best rank: the PMID some arm put at rank 1 wins.
    fused = rrf({"a": arm("P", "Q"), "b": arm("Q", "P")})
    assert fused[0].rrf_score == fused[1].rrf_score
    assert [h.pmid for h in fused] == ["P", "Q"]  # both best rank 1; P holds it in the earlier arm
    fused = rrf({"b": arm("Q", "P"), "a": arm("P", "Q")})
    assert [h.pmid for h in fused] == ["Q", "P"]  # arm order is the mapping's order


def test_rrf_tie_break_names_the_arm_that_wins_exact_ties() -> None:
    # B and D are each returned by one arm only, at rank 2: 1/62 both, same best rank. So are C and E at 3.
    arms = {"boolean": arm("A", "B", "C"), "dense": arm("A", "D", "E")}
    assert [h.pmid for h in rrf(arms)] == ["A", "B", "D", "C", "E"]  # no tie_break: mapping order
    assert [h.pmid for h in rrf(arms, tie_break=("dense",))] == ["A", "D", "B", "E", "C"]
    assert [h.pmid for h in rrf(arms, tie_break=("boolean", "dense"))] == ["A", "B", "D", "C", "E"]
    # Swapped ranks (P: boolean 1, dense 2; Q: dense 1, boolean 2) tie too: the named arm's rank 1 wins.
    swapped = {"boolean": arm("P", "Q"), "dense": arm("Q", "P")}
    assert [h.pmid for h in rrf(swapped, tie_break=("dense",))] == ["Q", "P"]
    # Names of absent arms are ignored; only exact ties move, never a strictly better score.
    assert [h.pmid for h in rrf(arms, tie_break=("nope", "dense"))] == ["A", "D", "B", "E", "C"]
    unequal = rrf(arms, weights={"boolean": 1.0, "dense": 0.99}, tie_break=("dense",))
    assert [h.pmid for h in unequal] == ["A", "B", "D", "C", "E"]  # 1/62 > 0.99/62 > 1/63 > 0.99/63


def test_fuse_breaks_exact_ties_for_the_dense_arm_by_default() -> None:
    # The evidence order /ask sees: a Boolean-only hit and a dense-only hit at the same rank.
    boolean, dense = arm("B1", "B2"), [("D1", 0.9), ("D2", 0.8)]
    assert EvidenceSettings().tie_break == "dense"
    fused = fuse(EvidenceSettings(), boolean=boolean, dense=dense)
    assert [h.pmid for h in fused] == ["D1", "B1", "D2", "B2"]
    assert fused[0].rrf_score == fused[1].rrf_score == 1 / 61  # a tie, not a reweighting
    old = fuse(EvidenceSettings(tie_break="boolean"), boolean=boolean, dense=dense)
    assert [h.pmid for h in old] == ["B1", "D1", "B2", "D2"]
    # BOOLEAN_WEIGHT keeps its meaning: unequal weights leave no exact tie to break, whatever the rule.
    for tie_break in ("dense", "boolean"):
        heavier = EvidenceSettings(boolean_weight=1.01, tie_break=tie_break)
        assert [h.pmid for h in fuse(heavier, boolean=boolean, dense=dense)] == ["B1", "D1", "B2", "D2"]
        lighter = EvidenceSettings(boolean_weight=0.99, tie_break=tie_break)
        assert [h.pmid for h in fuse(lighter, boolean=boolean, dense=dense)] == ["D1", "B1", "D2", "B2"]


def test_tie_break_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.settings import Settings

    monkeypatch.setenv("COMETA_EVIDENCE__TIE_BREAK", "boolean")
    assert Settings().evidence.tie_break == "boolean"
    monkeypatch.setenv("COMETA_EVIDENCE__TIE_BREAK", "bm25")
    with pytest.raises(ValueError, match="tie_break"):
        Settings()


def test_rrf_duplicates_within_an_arm_count_once_at_best_rank() -> None:
    fused = rrf({"boolean": arm("A", "B", "A", "C")})
    assert scores(fused) == pytest.approx({"A": 1 / 61, "B": 1 / 62, "C": 1 / 64})
    (a,) = [h for h in fused if h.pmid == "A"]
    assert a.provenance == (Provenance("boolean", 1),)


def test_rrf_zero_weight_keeps_provenance_but_adds_nothing() -> None:
    fused = rrf({"boolean": arm("A", "B"), "dense": arm("D", "B")}, weights={"dense": 0.0})
    # D came only from the muted arm: it is not a candidate at all.
    assert [h.pmid for h in fused] == ["A", "B"]
    assert scores(fused) == pytest.approx({"A": 1 / 61, "B": 1 / 62})
    b = fused[1]
    assert b.provenance == (Provenance("boolean", 2), Provenance("dense", 2))
    assert b.from_arm("dense") == Provenance("dense", 2)


def test_rrf_limit_and_validation() -> None:
    arms = {"boolean": arm("A", "B", "C"), "dense": arm("C", "A", "D")}
    assert [h.pmid for h in rrf(arms, limit=2)] == ["A", "C"]
    assert rrf(arms, limit=0) == []
    assert rrf({}) == []
    with pytest.raises(ValueError, match="weight"):
        rrf(arms, weights={"dense": -1.0})
    with pytest.raises(ValueError, match="k"):
        rrf(arms, k=-1)


def test_provenance_carries_tier_query_and_dense_score() -> None:
    boolean = [ArmHit("A", tier=1, query="q1"), ArmHit("B", tier=2, query="q2")]
    dense = dense_hits([("B", 0.91), ("E", 0.85)])
    fused = rrf({"boolean": boolean, "dense": dense})
    by_pmid = {h.pmid: h for h in fused}
    assert by_pmid["B"].provenance == (
        Provenance("boolean", 2, None, 2, "q2"),
        Provenance("dense", 1, 0.91),
    )
    assert by_pmid["A"].provenance == (Provenance("boolean", 1, tier=1, query="q1"),)
    assert by_pmid["E"].provenance == (Provenance("dense", 2, score=0.85),)


def test_dense_hits_accepts_pairs_and_scored_objects_in_given_order() -> None:
    @dataclass
    class Hit:
        pmid: str
        score: float

    hits = dense_hits([Hit("1", 0.5), ("2", 0.9), ArmHit("3", score=0.1)])
    assert [(h.pmid, h.score) for h in hits] == [("1", 0.5), ("2", 0.9), ("3", 0.1)]


def test_boolean_hits_assigns_each_pmid_the_tier_that_first_found_it() -> None:
    tiers = (
        TierResult(1, "q1", count=2, latency_ms=1.0, used=True, new_pmids=2),
        TierResult(2, "q2", count=5, latency_ms=1.0, used=False, new_pmids=0),  # re-found only
        TierResult(3, "q3", count=0, latency_ms=1.0, used=False, new_pmids=0, error="ServerError: x"),
        TierResult(4, "q4", count=9, latency_ms=1.0, used=True, new_pmids=1, kind="fallback"),
    )
    result = AdaptEResult(
        pmids=("11", "22", "33"), tiers=tiers, zero_hit=False, fallback_used=True, stopped_at=None
    )
    hits = boolean_hits(result)
    assert [(h.pmid, h.tier, h.query, h.tier_kind) for h in hits] == [
        ("11", 1, "q1", "ladder"),
        ("22", 1, "q1", "ladder"),
        ("33", 4, "q4", "fallback"),
    ]
    fused = rrf({"boolean": hits})
    assert [p.rank for h in fused for p in h.provenance] == [1, 2, 3]


async def test_boolean_hits_from_a_real_adapte_run() -> None:
    app = create_eutils_app(LocalServerSettings())
    client = EutilsClient(
        EutilsSettings(base_url=LOCAL_BASE_URL, requests_per_second=500.0), transport=eutils_transport(app)
    )
    ladder = ['"lace plant"[tiab]', "zzqqxx", '"programmed cell death"[tiab]', "neoplasms[mh]"]
    result = await AdaptE(client, min_hits=5, retmax=3).run(QueryPlan(corrected_question="q", ladder=ladder))
    hits = boolean_hits(result)
    assert [h.pmid for h in hits] == list(result.pmids)
    assert hits[0].pmid == "21645374" and hits[0].tier == 1 and hits[0].query == ladder[0]
    seen: set[str] = set()
    for tier in result.tiers:
        found = set((await client.esearch(tier.query, retmax=3, sort="relevance")).ids)
        mine = {h.pmid for h in hits if h.tier == tier.tier}
        assert mine == found - seen  # exactly the PMIDs this tier added
        assert all(h.query == tier.query for h in hits if h.tier == tier.tier)
        seen |= found
    await client.aclose()


def test_fuse_uses_settings_k_and_weights() -> None:
    settings = EvidenceSettings(rrf_k=10, boolean_weight=1.0, dense_weight=3.0)
    fused = fuse(settings, boolean=arm("A", "B"), dense=[("B", 0.7)])
    assert scores(fused) == pytest.approx({"A": 1 / 11, "B": 1 / 12 + 3 / 11})
    assert [h.pmid for h in fused] == ["B", "A"]
    assert [h.pmid for h in fuse(settings, dense=[("Z", 0.1)])] == ["Z"]
    assert fuse(settings) == []


def test_a_vague_plan_weighs_the_boolean_arm_less() -> None:
    # A study only the Boolean arm returned interleaves with the dense arm's at full weight; a plan with
    # fewer than two recognised concepts (plain words for a ladder) puts it below the dense arm's top hits.
    settings = EvidenceSettings(
        rrf_k=60, boolean_weight=1.0, dense_weight=1.0, boolean_weight_vague=0.25, tie_break="boolean"
    )
    boolean, dense = arm("A", "B"), [("D", 0.9), ("E", 0.8), ("B", 0.7)]
    assert [h.pmid for h in fuse(settings, boolean=boolean, dense=dense)] == ["B", "A", "D", "E"]
    for recognised in (2, 3):
        clear = fuse(settings, boolean=boolean, dense=dense, recognised=recognised)
        assert [h.pmid for h in clear] == ["B", "A", "D", "E"]
    for recognised in (0, 1):
        vague = fuse(settings, boolean=boolean, dense=dense, recognised=recognised)
        assert [h.pmid for h in vague] == ["B", "D", "E", "A"]
        assert scores(vague) == pytest.approx(
            {"A": 0.25 / 61, "B": 0.25 / 62 + 1 / 63, "D": 1 / 61, "E": 1 / 62}
        )

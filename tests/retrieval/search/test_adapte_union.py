"""Adapt-E's union strategy: one ESearch for the stricter tiers, tiers then checked locally on the records."""

from __future__ import annotations

from urllib.parse import parse_qs

import httpx

from retrieval import EutilsClient, create_eutils_app, eutils_transport
from retrieval.eutils import LOCAL_BASE_URL, EutilsSettings
from retrieval.localncbi import LocalServerSettings
from retrieval.search import AdaptE, boolean_hits, union_query
from retrieval.understand import QueryPlan


class Recording(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = eutils_transport(create_eutils_app(LocalServerSettings()))
        self.endpoints: list[str] = []
        self.terms: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.endpoints.append(request.url.path.rsplit("/", 1)[-1])
        body = request.content.decode() if request.method == "POST" else request.url.query.decode()
        self.terms.extend(parse_qs(body).get("term", []))
        return await self.inner.handle_async_request(request)


def client() -> tuple[EutilsClient, Recording]:
    transport = Recording()
    settings = EutilsSettings(base_url=LOCAL_BASE_URL, requests_per_second=500.0)
    return EutilsClient(settings, transport=transport), transport


def plan(ladder: list[str]) -> QueryPlan:
    return QueryPlan(corrected_question="q", ladder=ladder, concepts=[])


LADDER = ['"lace plant"[tiab]', '"programmed cell death"[tiab]', "apoptosis", "cancer"]


def test_union_query_ors_each_tier_once() -> None:
    assert union_query(["a AND b", "c", "a AND b"]) == "(a AND b) OR (c)"
    assert union_query(["only"]) == "only" and union_query([]) is None


async def test_one_esearch_then_local_tiers_give_the_ladders_hits_in_tier_order() -> None:
    c0, transport0 = client()  # one client each: the second must not be served from the first's cache
    ladder = await AdaptE(c0, min_hits=5, retmax=1000).run(plan(LADDER))
    ladder_calls = transport0.endpoints.count("esearch.fcgi")
    await c0.aclose()
    c, transport = client()
    union = AdaptE(c, min_hits=5, retmax=1000, strategy="union", union_retmax=1000)
    raw = await union.run(plan(LADDER))
    assert transport.endpoints == ["esearch.fcgi"] and ladder_calls == 3  # 1 call where the ladder made 3
    assert raw.union_hits == len(raw.pmids) and raw.tiers[0].kind == "union"
    records = {r.pmid: r for r in await c.efetch_pubmed(raw.pmids)}
    ranked = union.rank_locally(plan(LADDER), raw, records)
    assert set(ranked.pmids) == set(ladder.pmids) and ranked.stopped_at == ladder.stopped_at == 3
    assert ranked.pmids[0] == ladder.pmids[0] == "21645374"  # the strict tier's hit first, as the ladder
    # Every hit sits after all hits of stricter tiers: the tier of each, asked of the server tier by tier.
    tier_of: dict[str, int] = {}
    for number, query in enumerate(LADDER[:-1], start=1):
        for pmid in (await c.esearch(query, retmax=1000)).ids:
            tier_of.setdefault(pmid, number)
    tiers = [tier_of[p] for p in ranked.pmids]
    assert tiers == sorted(tiers)
    # What the ladder's first used tier was, for the evidence gate's "strict" signal.
    assert ranked.strictest_local == LADDER[0] == ladder.tiers[0].query
    assert ranked.union_hits == 0 and union.rank_locally(plan(LADDER), ranked, records) is ranked
    # Provenance still finds each hit's ESearch: every ranked PMID is tagged with the union query.
    hits = boolean_hits(ranked)
    assert [h.pmid for h in hits] == list(ranked.pmids) and {h.tier_kind for h in hits} == {"union"}
    await c.aclose()


async def test_too_few_union_hits_run_the_loosest_tier_after() -> None:
    c, transport = client()
    union = AdaptE(c, min_hits=5, strategy="union")
    ladder = ['"lace plant"[tiab]', "zzqqxx", "cancer"]
    result = await union.run(plan(ladder))
    assert transport.endpoints == ["esearch.fcgi", "esearch.fcgi"]
    assert transport.terms[0] == '("lace plant"[tiab]) OR (zzqqxx)' and transport.terms[1] == "cancer"
    assert result.pmids[0] == "21645374" and result.union_hits == 1 and len(result.pmids) > 5
    records = {r.pmid: r for r in await c.efetch_pubmed(result.pmids[:1])}
    ranked = union.rank_locally(plan(ladder), result, records)
    assert ranked.pmids == result.pmids  # one tier-1 hit, then the loosest tier's, unchanged
    await c.aclose()


async def test_the_check_vocabulary_is_built_once_and_can_be_built_ahead() -> None:
    from retrieval.vocab import MeshVocabulary

    built: list[int] = []

    def factory() -> MeshVocabulary:
        built.append(1)
        return MeshVocabulary.load()

    c, _ = client()
    union = AdaptE(c, min_hits=5, strategy="union", check_vocabulary=factory)
    union.prepare()
    assert built == [1]
    raw = await union.run(plan(LADDER))
    records = {r.pmid: r for r in await c.efetch_pubmed(raw.pmids)}
    union.rank_locally(plan(LADDER), raw, records)
    assert built == [1]  # prepared ahead: the question did not pay for it
    assert AdaptE(c, check_vocabulary=factory).prepare() is None and built == [1]  # ladder needs none
    await c.aclose()


STRICT = ["apoptosis AND cancer", "cancer", "cancer OR tumor"]  # tier 1 has two hits: 19931500, 16414216


async def test_the_other_arms_candidates_join_the_tier_they_satisfy_after_the_unions_own() -> None:
    c, transport = client()
    union = AdaptE(c, min_hits=2, strategy="union", union_retmax=1)
    raw = await union.run(plan(STRICT))
    assert transport.endpoints.count("esearch.fcgi") == 2  # the union found 1 < min_hits: loosest tier ran
    assert raw.pmids[0] == "19931500" and raw.union_hits == 1  # the union's cut kept one strict hit of two
    strict = set((await c.esearch(STRICT[0], retmax=1000)).ids)
    assert strict == {"19931500", "16414216"}
    # Dense candidates, best first: one matching no tier before the union ("lace plant", no cancer), the
    # strict hit the union's cut missed, the union's own hit again.
    others = ["21645374", "16414216", "19931500"]
    records = {r.pmid: r for r in await c.efetch_pubmed([*raw.pmids, *others])}
    before = union.rank_locally(plan(STRICT), raw, records)
    ranked = union.rank_locally(plan(STRICT), raw, records, others)
    # Without the others, tier 1 held one hit and the ladder walked on; with them, tier 1 holds both strict
    # hits, the union's own first, as the ladder's tier-1 ESearch did.
    assert before.pmids[0] == "19931500" and before.pmids[1] != "16414216"
    assert ranked.pmids[:2] == ("19931500", "16414216")
    # The loosest tier's hits still follow, so the ESearches' own stop stands (not tier 1).
    assert ranked.stopped_at == raw.stopped_at == 3
    assert sum(t.new_pmids for t in ranked.tiers) == len(ranked.pmids)
    ladder = await AdaptE(c, min_hits=2).run(plan(STRICT))
    assert set(ladder.pmids) == strict and ladder.stopped_at == 1
    assert len(set(ranked.pmids)) == len(ranked.pmids)  # every PMID once
    hits = boolean_hits(ranked)
    assert hits[1].pmid == "16414216" and hits[1].tier_kind == "union"
    assert "21645374" not in ranked.pmids[: ranked.tiers[0].new_pmids]  # matches no tier: not a Boolean hit
    # The gate's tier signal stays the union's own hits' (the dense arm knows no date window).
    assert ranked.strictest_local == before.strictest_local == STRICT[0]
    await c.aclose()


async def test_joined_candidates_share_the_tiers_retmax_with_the_unions_own_hits() -> None:
    c, _ = client()
    union = AdaptE(c, min_hits=2, retmax=1, strategy="union", union_retmax=1)
    raw = await union.run(plan(STRICT))
    records = {r.pmid: r for r in await c.efetch_pubmed([*raw.pmids, "16414216"])}
    ranked = union.rank_locally(plan(STRICT), raw, records, ["16414216"])
    # Tier 1 is full with the union's own hit (retmax 1): the joined one does not push past the cap; it
    # also satisfies tier 2 ("cancer") and joins there, where min_hits is reached.
    unlimited = AdaptE(c, min_hits=2, retmax=50, strategy="union", union_retmax=1)
    wide = unlimited.rank_locally(plan(STRICT), raw, records, ["16414216"])
    assert wide.pmids[:2] == ranked.pmids[:2] == ("19931500", "16414216")
    assert wide.tiers[0].new_pmids == ranked.tiers[0].new_pmids == 2
    # The loosest tier's hits still follow in both: the ESearches' stop (tier 3) stands.
    assert wide.stopped_at == ranked.stopped_at == raw.stopped_at == 3
    assert sum(t.new_pmids for t in ranked.tiers) == len(ranked.pmids)
    await c.aclose()


async def test_only_candidates_inside_the_date_window_join_a_tier() -> None:
    c, _ = client()
    union = AdaptE(c, min_hits=2, strategy="union", union_retmax=1)
    # 19931500 is from 2009, 16414216 from 2006: the ESearch window 2008-2030 keeps only the first.
    raw = await union.run(plan(STRICT), mindate="2008", maxdate="2030")
    assert raw.pmids[0] == "19931500" and (raw.mindate, raw.maxdate) == ("2008", "2030")
    records = {r.pmid: r for r in await c.efetch_pubmed([*raw.pmids, "16414216"])}
    ranked = union.rank_locally(plan(STRICT), raw, records, ["16414216"])
    assert "16414216" not in ranked.pmids  # the ladder's tier-1 ESearch in that window would not return it
    undated = await union.run(plan(STRICT))
    assert (undated.mindate, undated.maxdate) == (None, None)
    assert union.rank_locally(plan(STRICT), undated, records, ["16414216"]).pmids[1] == "16414216"
    await c.aclose()


async def test_a_joined_candidate_among_the_loosest_tiers_hits_is_counted_once() -> None:
    c, _ = client()
    union = AdaptE(c, min_hits=2, strategy="union", union_retmax=1)
    raw = await union.run(plan(STRICT))
    loosest = raw.pmids[raw.union_hits :]
    records = {r.pmid: r for r in await c.efetch_pubmed(raw.pmids)}
    # Dense candidates that the loosest tier's ESearch also returned, and that satisfy tier 2 ("cancer").
    tier2 = set((await c.esearch(STRICT[1], retmax=1000)).ids)
    others = [p for p in reversed(loosest) if p in tier2][:3]
    assert others
    ranked = union.rank_locally(plan(STRICT), raw, records, others)
    assert set(others) <= set(ranked.pmids[: ranked.tiers[0].new_pmids])  # moved up into the union's tiers
    assert len(ranked.pmids) == len(set(ranked.pmids)) == len(raw.pmids)  # moved, not added
    # Each PMID counted once: the loosest tier's entry no longer counts those moved up.
    assert sum(t.new_pmids for t in ranked.tiers) == len(ranked.pmids)
    assert ranked.tiers[1].new_pmids == raw.tiers[1].new_pmids - len(others)
    assert ranked.stopped_at == raw.stopped_at  # its other hits still follow: the ladder did not stop early
    hits = boolean_hits(ranked)
    assert [h.pmid for h in hits] == list(ranked.pmids)
    await c.aclose()

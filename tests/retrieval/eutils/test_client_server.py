"""Client and local server against each other: the same code path the product uses offline."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr

from retrieval import BadRequest, EutilsSettings, FaultSettings, LocalServerSettings, MalformedResponse
from retrieval.eutils import LOCAL_BASE_URL, CacheSettings, EutilsClient
from retrieval.localncbi import create_eutils_app, eutils_transport
from retrieval.ncbi import load_corpus


def client_for(server: LocalServerSettings, **settings: object) -> tuple[EutilsClient, object]:
    app = create_eutils_app(server)
    # Tests that do not measure rate limiting run unthrottled; the ones that do pass the rate explicitly.
    settings.setdefault("requests_per_second", 500.0)
    eu = EutilsSettings(base_url=LOCAL_BASE_URL, **settings)  # type: ignore[arg-type]
    return EutilsClient(eu, transport=eutils_transport(app)), app


def max_in_window(times: list[float], window: float = 1.0) -> int:
    """Largest number of requests inside any half-open window [t, t + window)."""
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - window:
            j += 1
        best = max(best, i - j + 1)
    return best


@pytest.mark.parametrize(("api_key", "rate"), [(None, 3), ("KEY123", 10)])
async def test_twenty_concurrent_callers_never_exceed_the_rate(api_key: str | None, rate: int) -> None:
    server = LocalServerSettings(rate_limit=True)
    key = SecretStr(api_key) if api_key else None
    client, app = client_for(
        server, api_key=key, cache=CacheSettings(max_entries=0), requests_per_second=None
    )
    terms = [f"neoplasms[mh] AND {1990 + i}[dp]" for i in range(20)]
    results = await asyncio.gather(*(client.esearch(t) for t in terms))
    assert len(results) == 20
    log = [entry for entry in app.state.request_log if entry.endpoint == "esearch"]  # type: ignore[attr-defined]
    assert len(log) == 20
    assert max_in_window([entry.time for entry in log]) <= rate
    # Spacing kept us under the server's own limiter: not a single 429 was needed.
    assert client.stats.retries["rate_limited"] == 0
    await client.aclose()


async def test_client_recovers_when_server_answers_429() -> None:
    # A client configured above the server's limit gets 429s and must back off until it succeeds.
    server = LocalServerSettings(rate_limit=True, rate_no_key=3)
    client, _ = client_for(
        server,
        requests_per_second=50,
        cache=CacheSettings(max_entries=0),
        backoff_base_s=0.3,
        max_attempts=10,
        retry_budget_s=30.0,
    )
    results = await asyncio.gather(*(client.esearch(f"cancer AND {2000 + i}[dp]") for i in range(8)))
    assert len(results) == 8
    assert client.stats.retries["rate_limited"] >= 1
    await client.aclose()


async def test_search_fetch_link_and_full_text_roundtrip() -> None:
    client, _ = client_for(LocalServerSettings())
    corpus = load_corpus()
    result = await client.esearch("neoplasms[mh] AND 2010:2015[dp]", retmax=500)
    assert result.count == len(result.ids) > 0
    records = await client.efetch_pubmed(result.ids)
    assert [r.pmid for r in records] == list(result.ids)
    for record in records:
        assert record.year is not None and 2010 <= record.year <= 2015
        assert record.pmid in corpus.records
    links = await client.elink_pubmed_pmc(["23149571", "21645374"])
    assert links == {"23149571": "PMC3574550", "21645374": None}
    (article,) = await client.efetch_pmc(["PMC3574550"])
    assert article.pmid == "23149571" and article.sections and not article.body_withheld
    await client.aclose()


async def test_restricted_full_text_is_flagged() -> None:
    client, _ = client_for(LocalServerSettings(restricted_pmcids=("PMC3574550",)))
    (article,) = await client.efetch_pmc(["3574550"])
    assert article.body_withheld and article.sections == ()
    assert article.abstract  # the abstract is still there to fall back on
    await client.aclose()


async def test_many_ids_go_by_post_and_survive() -> None:
    client, _ = client_for(LocalServerSettings())
    result = await client.esearch("hasabstract[sb]", retmax=10_000)
    assert result.count >= 1000
    records = await client.efetch_pubmed(result.ids)
    assert len(records) == result.count
    summaries = await client.esummary(result.ids[:250])
    assert len(summaries) == 250 and all(s.error is None for s in summaries)
    await client.aclose()


async def test_invalid_db_and_bad_query_are_bad_requests() -> None:
    client, _ = client_for(LocalServerSettings())
    with pytest.raises(BadRequest, match="fleegle"):
        await client.esearch("cancer", db="fleegle")
    with pytest.raises(BadRequest):
        await client.esearch("(cancer AND")
    await client.aclose()


@pytest.mark.parametrize(
    "faults",
    [
        FaultSettings(error_500_rate=0.3, seed=1),
        FaultSettings(html_rate=0.3, seed=2),
        FaultSettings(truncated_rate=0.3, seed=3),
        FaultSettings(ratelimit_2xx_rate=0.3, seed=4),
    ],
)
async def test_faults_are_retried_to_success(faults: FaultSettings) -> None:
    client, _ = client_for(
        LocalServerSettings(faults=faults),
        backoff_base_s=0.01,
        max_attempts=8,
        cache=CacheSettings(max_entries=0),
    )
    for year in range(2005, 2013):
        result = await client.esearch(f"cancer AND {year}[dp]")
        assert result.count >= 0
    records = await client.efetch_pubmed(["21645374", "23149571"])
    assert {r.pmid for r in records} == {"21645374", "23149571"}
    assert sum(client.stats.retries.values()) >= 1
    await client.aclose()


async def test_always_truncated_body_is_reported_typed() -> None:
    client, _ = client_for(
        LocalServerSettings(faults=FaultSettings(truncated_rate=1.0)), backoff_base_s=0.01, max_attempts=2
    )
    with pytest.raises(MalformedResponse):
        await client.efetch_pubmed(["21645374"])
    await client.aclose()


async def test_stalled_server_times_out_within_budget() -> None:
    client, _ = client_for(
        LocalServerSettings(faults=FaultSettings(stall_rate=1.0, stall_s=5.0)),
        timeout_s=0.2,
        retry_budget_s=1.0,
        backoff_base_s=0.05,
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(Exception) as info:
        await client.esearch("cancer")
    assert type(info.value).__name__ == "TransportError"
    assert loop.time() - started < 2.0
    await client.aclose()

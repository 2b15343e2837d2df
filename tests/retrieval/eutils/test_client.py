"""The async E-utilities client against scripted transports: retries, limits, errors, cache, identity."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

import httpx
import pytest
from pydantic import SecretStr

from retrieval import (
    BadRequest,
    EutilsError,
    EutilsSettings,
    MalformedResponse,
    RateLimited,
    ServerError,
    TransportError,
)
from retrieval.eutils import (
    CacheSettings,
    EutilsClient,
    MemoryStore,
    WindowLimiter,
    deadline_paused,
    question_deadline,
    track_degradation,
)
from tests._paths import BIOPYTHON_SAMPLES, KLORTHO_SAMPLES

ESEARCH_JSON = json.dumps(
    {
        "header": {"type": "esearch", "version": "0.3"},
        "esearchresult": {
            "count": "2",
            "retmax": "2",
            "retstart": "0",
            "idlist": ["222", "111"],
            "translationset": [],
            "querytranslation": "x[All Fields]",
        },
    }
).encode()
RATE_BODY = b'{"error":"API rate limit exceeded","api-key":"127.0.0.1","count":"5","limit":"3"}'

Handler = Callable[[httpx.Request], httpx.Response]


def params_of(request: httpx.Request) -> dict[str, list[str]]:
    """GET query or form-encoded POST body, as NCBI reads them."""
    if request.method == "POST":
        return parse_qs(request.content.decode(), keep_blank_values=True)
    return parse_qs(request.url.query.decode(), keep_blank_values=True)


class Recorder:
    def __init__(self, responses: list[httpx.Response | Exception]) -> None:
        self.responses = responses
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        item = self.responses[min(len(self.requests), len(self.responses)) - 1]
        if isinstance(item, Exception):
            raise item
        return item


def make_client(handler: Handler, sleeps: list[float] | None = None, **overrides: object) -> EutilsClient:
    base: dict[str, object] = {"requests_per_second": 1000.0, "backoff_base_s": 0.01, "retry_budget_s": 5.0}
    base.update(overrides)
    settings = EutilsSettings(**base)  # type: ignore[arg-type]
    record = sleeps if sleeps is not None else []
    now = [0.0]

    async def fake_sleep(delay: float) -> None:
        record.append(delay)
        now[0] += delay

    return EutilsClient(
        settings,
        transport=httpx.MockTransport(handler),
        rng=random.Random(0),
        sleep=fake_sleep,
        clock=lambda: now[0],
    )


async def test_esearch_sends_identity_and_explicit_retmode() -> None:
    rec = Recorder([httpx.Response(200, content=ESEARCH_JSON)])
    client = make_client(rec, email="dev@example.org", api_key=SecretStr("SECRET1"))
    result = await client.esearch("x", retmax=2)
    assert result.ids == ("222", "111") and result.count == 2
    q = params_of(rec.requests[0])
    assert q["tool"] == ["cometa"] and q["email"] == ["dev@example.org"] and q["api_key"] == ["SECRET1"]
    assert q["retmode"] == ["json"] and q["db"] == ["pubmed"] and q["retmax"] == ["2"]
    assert rec.requests[0].url.path.endswith("/esearch.fcgi")
    await client.aclose()


async def test_per_request_api_key_overrides_configured_key() -> None:
    rec = Recorder([httpx.Response(200, content=ESEARCH_JSON)])
    client = make_client(rec, api_key=SecretStr("SERVICE"))
    await client.esearch("x", api_key="USERKEY")
    assert params_of(rec.requests[0])["api_key"] == ["USERKEY"]
    await client.aclose()


@pytest.mark.parametrize(
    ("first", "reason"),
    [
        (httpx.Response(429, content=RATE_BODY), "rate_limited"),
        (httpx.Response(200, content=RATE_BODY), "rate_limited"),  # rate-limit body with a 2xx status
        (httpx.Response(500, content=b"<html>oops</html>"), "server_error"),
        (httpx.Response(503, content=b""), "server_error"),
        (httpx.ReadTimeout("slow"), "timeout"),
        (httpx.ConnectError("refused"), "transport"),
        (httpx.Response(200, content=(BIOPYTHON_SAMPLES / "pubmed3.html").read_bytes()), "malformed"),
    ],
)
async def test_transient_failures_are_retried(first: httpx.Response | Exception, reason: str) -> None:
    rec = Recorder([first, httpx.Response(200, content=ESEARCH_JSON)])
    sleeps: list[float] = []
    client = make_client(rec, sleeps)
    result = await client.esearch("x")
    assert result.count == 2
    assert len(rec.requests) == 2
    assert len(sleeps) == 1 and 0 < sleeps[0] <= 0.01
    assert client.stats.retries[reason] == 1
    await client.aclose()


async def test_429_burst_backs_off_exponentially_then_succeeds() -> None:
    burst: list[httpx.Response | Exception] = [httpx.Response(429, content=RATE_BODY)] * 4
    rec = Recorder([*burst, httpx.Response(200, content=ESEARCH_JSON)])
    sleeps: list[float] = []
    client = make_client(rec, sleeps, backoff_base_s=0.1, backoff_max_s=10.0, max_attempts=5)
    assert (await client.esearch("x")).count == 2
    assert len(rec.requests) == 5
    # Equal jitter: each delay lies in [cap/2, cap] with cap doubling per attempt.
    for attempt, delay in enumerate(sleeps, start=1):
        cap = 0.1 * 2 ** (attempt - 1)
        assert cap / 2 <= delay <= cap
    await client.aclose()


async def test_attempts_exhausted_raise_typed_errors() -> None:
    for response, exc_type in [
        (httpx.Response(429, content=RATE_BODY), RateLimited),
        (httpx.Response(502, content=b"bad gateway"), ServerError),
        (httpx.ReadTimeout("slow"), TransportError),
        (httpx.Response(200, content=b"<html><body>proxy</body></html>"), MalformedResponse),
    ]:
        rec = Recorder([response])
        client = make_client(rec, max_attempts=3)
        with pytest.raises(exc_type) as info:
            await client.esearch("x")
        assert isinstance(info.value, EutilsError) and info.value.endpoint == "esearch"
        assert len(rec.requests) == 3
        await client.aclose()


async def test_retry_budget_bounds_total_time() -> None:
    rec = Recorder([httpx.Response(500)])
    sleeps: list[float] = []
    client = make_client(
        rec, sleeps, backoff_base_s=1.0, backoff_max_s=8.0, retry_budget_s=2.0, max_attempts=20
    )
    with pytest.raises(ServerError):
        await client.esearch("x")
    # The next back-off would cross the 2 s budget, so the client gives up instead of sleeping past it.
    assert sum(sleeps) < 2.0
    assert len(rec.requests) < 20
    await client.aclose()


async def test_bad_request_is_not_retried() -> None:
    rec = Recorder([httpx.Response(400, content=b"bad")])
    client = make_client(rec)
    with pytest.raises(BadRequest):
        await client.esearch("x")
    assert len(rec.requests) == 1
    await client.aclose()


async def test_error_payloads_raise_bad_request_without_retry() -> None:
    body = (KLORTHO_SAMPLES / "esearch.baderror.json").read_bytes()
    rec = Recorder([httpx.Response(200, content=body)])
    client = make_client(rec)
    with pytest.raises(BadRequest, match="fleegle"):
        await client.esearch("cat", db="fleegle")
    assert len(rec.requests) == 1
    await client.aclose()


async def test_truncated_xml_is_reported_not_crashed() -> None:
    body = (BIOPYTHON_SAMPLES / "pubmed4.xml").read_bytes()
    rec = Recorder([httpx.Response(200, content=body[: len(body) // 2])])
    client = make_client(rec)
    with pytest.raises(MalformedResponse):
        await client.efetch_pubmed(["27797938"])
    await client.aclose()


async def test_phrase_not_found_is_a_result_not_an_error() -> None:
    body = (BIOPYTHON_SAMPLES / "esearch8.xml").read_bytes()
    client = make_client(Recorder([httpx.Response(200, content=body)]))
    result = await client.esearch("abcXYZ")
    assert result.count == 0 and result.phrases_not_found == ("abcXYZ",)
    assert "No items found." in result.output_messages
    await client.aclose()


async def test_esearch_cache_keys_on_normalised_parameters() -> None:
    rec = Recorder([httpx.Response(200, content=ESEARCH_JSON)])
    client = make_client(rec)
    a = await client.esearch("x", retmax=2)
    b = await client.esearch("x", retmax=2, api_key="OTHER")  # identity params are not part of the key
    assert a == b and len(rec.requests) == 1
    await client.esearch("x", retmax=3)
    assert len(rec.requests) == 2
    assert client.stats.cache_hits == 1
    await client.aclose()


async def test_efetch_batches_posts_and_caches_per_pmid() -> None:
    seen_batches: list[list[str]] = []
    sample = (BIOPYTHON_SAMPLES / "pubmed4.xml").read_bytes()

    def handler(request: httpx.Request) -> httpx.Response:
        ids = params_of(request)["id"][0].split(",")
        seen_batches.append(ids)
        assert request.method == ("POST" if len(ids) > 200 else "GET")
        return httpx.Response(200, content=sample)

    client = make_client(handler, efetch_batch_size=250)
    pmids = [str(n) for n in range(1, 451)] + ["27797938"]
    records = await client.efetch_pubmed(pmids)
    assert [len(b) for b in seen_batches] == [250, 201]
    assert [r.pmid for r in records] == ["27797938"]
    again = await client.efetch_pubmed(["27797938"])
    assert again == records and len(seen_batches) == 2
    await client.aclose()


async def test_elink_uses_one_to_one_ids_and_filters_on_linkname() -> None:
    body = b"""<?xml version="1.0" encoding="UTF-8" ?>
<eLinkResult>
<LinkSet><DbFrom>pubmed</DbFrom><IdList><Id>111</Id></IdList>
  <LinkSetDb><DbTo>pmc</DbTo><LinkName>pubmed_pmc_refs</LinkName><Link><Id>999</Id></Link></LinkSetDb>
  <LinkSetDb><DbTo>pmc</DbTo><LinkName>pubmed_pmc</LinkName><Link><Id>123</Id></Link></LinkSetDb>
</LinkSet>
<LinkSet><DbFrom>pubmed</DbFrom><IdList><Id>222</Id></IdList>
  <LinkSetDb><DbTo>pmc</DbTo><LinkName>pubmed_pmc_refs</LinkName><Link><Id>555</Id></Link></LinkSetDb>
</LinkSet>
</eLinkResult>"""
    rec = Recorder([httpx.Response(200, content=body)])
    client = make_client(rec)
    links = await client.elink_pubmed_pmc(["111", "222"])
    assert links == {"111": "PMC123", "222": None}
    q = params_of(rec.requests[0])
    assert q["id"] == ["111", "222"] and q["linkname"] == ["pubmed_pmc"]
    await client.elink_pubmed_pmc(["222"])  # cached, including the negative answer
    assert len(rec.requests) == 1
    await client.aclose()


async def test_failed_batch_cancels_siblings_and_raises_typed_error() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(400, content=b"nope")

    client = make_client(handler, efetch_batch_size=2)
    with pytest.raises(BadRequest):
        await client.efetch_pubmed(["1", "2", "3", "4", "5"])
    await client.aclose()


async def test_empty_term_and_half_date_window_rejected_before_network() -> None:
    rec = Recorder([httpx.Response(200, content=ESEARCH_JSON)])
    client = make_client(rec)
    with pytest.raises(BadRequest):
        await client.esearch("   ")
    with pytest.raises(BadRequest):
        await client.esearch("x", mindate="2010")
    assert rec.requests == []
    await client.aclose()


# --- stale-if-error (the stores themselves: tests/test_store.py) ----------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _stale_client(handler: Handler, clock: _Clock) -> EutilsClient:
    store = MemoryStore(ttl_s=10, max_stale_s=100, max_entries=100, clock=clock)
    settings = EutilsSettings(requests_per_second=1000.0, max_attempts=1, backoff_base_s=0.0)
    return EutilsClient(settings, transport=httpx.MockTransport(handler), store=store)


async def test_partial_efetch_only_inside_a_degradation_scope() -> None:
    sample = (BIOPYTHON_SAMPLES / "pubmed4.xml").read_bytes()
    down = [False]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503) if down[0] else httpx.Response(200, content=sample)

    clock = _Clock()
    client = _stale_client(handler, clock)
    assert [r.pmid for r in await client.efetch_pubmed(["27797938"])] == ["27797938"]
    clock.now = 11  # expired: kept for stale-if-error only
    down[0] = True
    # 27797938 could be served stale, 999 not at all: a plain call refuses to drop it silently...
    with pytest.raises(ServerError):
        await client.efetch_pubmed(["27797938", "999"])
    # ...while the pipeline's degraded mode takes what there is and counts the rest.
    with track_degradation() as record:
        got = await client.efetch_pubmed(["27797938", "999"])
    assert [r.pmid for r in got] == ["27797938"]
    assert record.unserved == 1 and record.stale == {"efetch": 1} and len(record.failures) == 1
    # Nothing servable at all: the error surfaces even in degraded mode.
    with track_degradation(), pytest.raises(ServerError):
        await client.efetch_pubmed(["999"])
    await client.aclose()


async def test_bad_requests_are_never_answered_from_stale_entries() -> None:
    responses = [httpx.Response(200, content=ESEARCH_JSON), httpx.Response(400, content=b"bad")]
    rec = Recorder(responses)
    clock = _Clock()
    client = _stale_client(rec, clock)
    await client.esearch("x")
    clock.now = 11
    with track_degradation() as record, pytest.raises(BadRequest):
        await client.esearch("x")
    assert client.stats.stale_served == 0 and not record.unavailable and client.stats.failures == 0
    await client.aclose()


async def test_negative_elink_answers_are_served_stale_too() -> None:
    body = b"""<?xml version="1.0" ?><eLinkResult><LinkSet><DbFrom>pubmed</DbFrom>
<IdList><Id>222</Id></IdList></LinkSet></eLinkResult>"""
    rec = Recorder([httpx.Response(200, content=body), httpx.ConnectError("refused")])
    clock = _Clock()
    client = _stale_client(rec, clock)
    assert await client.elink_pubmed_pmc(["222"]) == {"222": None}
    clock.now = 50
    assert await client.elink_pubmed_pmc(["222"]) == {"222": None}
    assert client.stats.stale_served == 1 and len(rec.requests) == 2
    await client.aclose()


async def test_failures_are_recorded_for_the_pipeline_even_without_a_cache() -> None:
    client = make_client(Recorder([httpx.Response(502)]), max_attempts=2, cache=CacheSettings(max_entries=0))
    assert client.store is None
    with track_degradation() as record, pytest.raises(ServerError):
        await client.esearch("x")
    assert record.unavailable and record.failures[0].startswith("ServerError: esearch: HTTP 502")
    assert not record.degraded and client.stats.failures == 1
    await client.aclose()


class FakeLimiter:
    """The per-process window limiters on the client's fake clock: waits are recorded, not slept."""

    def __init__(self, clock: Callable[[], float], sleep: Callable[[float], Awaitable[None]]) -> None:
        self.clock, self.sleep = clock, sleep
        self.windows: dict[tuple[str | None, float, int], WindowLimiter] = {}

    def window(self, api_key: str | None, rate: float, burst: int) -> WindowLimiter:
        key = (api_key, rate, burst)
        if key not in self.windows:
            self.windows[key] = WindowLimiter(burst, rate, clock=self.clock, sleep=self.sleep)
        return self.windows[key]

    async def acquire(
        self, api_key: str | None, rate: float, burst: int = 1, max_wait_s: float | None = None
    ) -> None:
        await self.window(api_key, rate, burst).acquire()

    async def pause(self, api_key: str | None, rate: float, burst: int, seconds: float) -> None:
        self.window(api_key, rate, burst).pause(seconds)

    async def aclose(self) -> None:
        return None


def send_times(now: list[float], *responses: httpx.Response) -> tuple[Handler, list[float]]:
    """A handler answering ``responses`` in order, and the fake clock's time of each request it got."""
    queue, sent = list(responses), []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(now[0])
        return queue.pop(0)

    return handler, sent


def fake_time_client(
    handler: Handler, sleeps: list[float], now: list[float], **overrides: object
) -> EutilsClient:
    async def fake_sleep(delay: float) -> None:
        sleeps.append(delay)
        now[0] += delay

    def clock() -> float:
        return now[0]

    base: dict[str, object] = {"requests_per_second": 1000.0, "retry_budget_s": 30.0, "backoff_base_s": 1.0}
    base.update(overrides)
    return EutilsClient(
        EutilsSettings(**base),
        transport=httpx.MockTransport(handler),
        rng=random.Random(0),
        sleep=fake_sleep,
        clock=clock,
        limiter=FakeLimiter(clock, fake_sleep),
    )


@pytest.mark.parametrize(
    ("header", "expected"),
    [("0.25", 0.25), ("2", 2.0), ("600", 8.0)],  # seconds, capped by retry_after_max_s (8 s here)
)
async def test_retry_after_is_honoured_instead_of_the_backoff(header: str, expected: float) -> None:
    # The server's own word replaces our jittered guess, once, without the exponential floor on top.
    rec = Recorder(
        [
            httpx.Response(429, content=RATE_BODY, headers={"Retry-After": header}),
            httpx.Response(200, content=ESEARCH_JSON),
        ]
    )
    sleeps: list[float] = []
    client = fake_time_client(rec, sleeps, [0.0], retry_after_max_s=8.0)
    assert (await client.esearch("x")).count == 2
    assert sleeps == [pytest.approx(expected)]
    assert client.stats.retries["rate_limited"] == 1
    await client.aclose()


async def test_retry_after_pauses_every_call_of_the_key_not_only_the_one_that_got_it() -> None:
    now = [0.0]
    handler, sent = send_times(
        now,
        httpx.Response(429, content=RATE_BODY, headers={"Retry-After": "5"}),
        httpx.Response(200, content=ESEARCH_JSON),
    )

    sleeps: list[float] = []
    client = fake_time_client(handler, sleeps, now, max_attempts=1)
    with pytest.raises(RateLimited):  # this call gives up at once (one attempt) ...
        await client.esearch("x")
    assert (await client.esearch("y")).count == 2  # ... and the next call of the key waits out the 5 s
    assert sent == [0.0, pytest.approx(5.0)]
    await client.aclose()


async def test_retry_after_as_an_http_date_and_unreadable_values() -> None:
    import datetime
    from email.utils import format_datetime

    from retrieval.eutils._client import _retry_after_s

    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30)
    assert 25 < (_retry_after_s(format_datetime(soon, usegmt=True)) or 0) <= 30
    past = datetime.datetime(2001, 1, 1, tzinfo=datetime.UTC)
    assert _retry_after_s(format_datetime(past, usegmt=True)) == 0.0
    assert _retry_after_s("soon") is None and _retry_after_s(None) is None and _retry_after_s("-3") == 0.0
    # Unreadable: the usual backoff applies.
    rec = Recorder(
        [
            httpx.Response(503, content=b"", headers={"Retry-After": "later"}),
            httpx.Response(200, content=ESEARCH_JSON),
        ]
    )
    sleeps: list[float] = []
    client = make_client(rec, sleeps, backoff_base_s=0.1)
    assert (await client.esearch("x")).count == 2
    assert len(sleeps) == 1 and 0.05 <= sleeps[0] <= 0.1
    await client.aclose()


async def test_a_pause_longer_than_the_budget_ends_the_call_within_the_budget() -> None:
    # Another call got Retry-After: 10; this one (budget 3 s) must not wait the 10 s and send after all.
    now = [0.0]
    handler, sent = send_times(
        now,
        httpx.Response(429, content=RATE_BODY, headers={"Retry-After": "10"}),
        httpx.Response(200, content=ESEARCH_JSON),
    )

    client = fake_time_client(handler, [], now, max_attempts=1, retry_budget_s=3.0, retry_after_max_s=10.0)
    with pytest.raises(RateLimited):
        await client.esearch("x")
    with pytest.raises(TransportError, match="retry budget spent waiting for the rate limiter"):
        await client.esearch("y")
    assert sent == [0.0]
    await client.aclose()


async def test_the_real_limiter_wait_is_bounded_by_the_budget() -> None:
    import time

    responses = [
        httpx.Response(429, content=RATE_BODY, headers={"Retry-After": "10"}),
        httpx.Response(200, content=ESEARCH_JSON),
    ]
    client = EutilsClient(
        EutilsSettings(requests_per_second=999.0, max_attempts=1, retry_budget_s=0.3, retry_after_max_s=10.0),
        transport=httpx.MockTransport(lambda request: responses.pop(0)),
    )
    with pytest.raises(RateLimited):
        await client.esearch("x")
    started = time.monotonic()
    with pytest.raises(TransportError, match="retry budget spent waiting for the rate limiter"):
        await client.esearch("y")
    assert time.monotonic() - started < 1.5
    assert len(responses) == 1  # the second request was never sent
    await client.aclose()


def in_any_second(times: list[float]) -> int:
    return max(sum(1 for s in times if a <= s < a + 1.0) for a in times)


async def test_many_caller_keys_never_multiply_the_deployments_outbound_rate() -> None:
    # Issue 27 #7: 40 concurrent searches, each with its own (valid-format) ncbi_api_key. Each key alone
    # may send NCBI's 10 per second; together they must stay under the one ceiling of the deployment.
    import asyncio

    now = [0.0]
    sent: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(now[0])
        return httpx.Response(200, content=ESEARCH_JSON)

    rng = random.Random(7)
    keys = ["".join(rng.choice("0123456789abcdef") for _ in range(36)) for _ in range(40)]
    client = fake_time_client(handler, [], now, requests_per_second=None, retry_budget_s=60.0)
    await asyncio.gather(*(client.esearch(f"q{n}", api_key=key) for n, key in enumerate(keys)))
    assert len(sent) == 40
    assert in_any_second(sent) <= 10  # NCBI's rate with one key, not 40 keys x 10
    assert sent[9] == 0.0 and sent[10] == pytest.approx(10 / 9.5)  # the ceiling is spent, not idled
    await client.aclose()


async def test_the_ceiling_is_a_setting() -> None:
    import asyncio

    now = [0.0]
    sent: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(now[0])
        return httpx.Response(200, content=ESEARCH_JSON)

    client = fake_time_client(
        handler, [], now, requests_per_second=None, max_requests_per_second=4.0, retry_budget_s=60.0
    )
    keys = [f"{n:036x}" for n in range(12)]
    await asyncio.gather(*(client.esearch(f"q{n}", api_key=key) for n, key in enumerate(keys)))
    assert len(sent) == 12 and in_any_second(sent) == 4
    await client.aclose()


async def test_a_question_deadline_bounds_its_calls_together_not_each_one() -> None:
    # NCBI hangs: every attempt ends only at its 4 s timeout. Alone, each call would retry for its whole
    # 15 s budget (4 attempts), one after the other; within a 10 s question deadline they share those 10 s.
    now = [0.0]
    sent: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(now[0])
        now[0] += 4.0
        raise httpx.ReadTimeout("no answer", request=request)

    client = fake_time_client(handler, [], now, retry_budget_s=15.0, max_attempts=5, backoff_base_s=0.0)
    with question_deadline(10.0, clock=lambda: now[0]):
        for term in ("a", "b", "c"):
            with pytest.raises(TransportError):
                await client.esearch(term)
        with pytest.raises(TransportError, match="question deadline exhausted"):
            await client.esearch("d")
    assert sent == [0.0, 4.0, 8.0]  # the first call's three attempts; the others sent nothing
    # Outside the block, a call has its own budget again: four attempts within 15 s.
    sent.clear()
    with pytest.raises(TransportError):
        await client.esearch("e")
    assert len(sent) == 4
    await client.aclose()


async def test_an_inner_question_deadline_never_extends_the_outer_one() -> None:
    now = [0.0]
    with question_deadline(5.0, clock=lambda: now[0]):
        with question_deadline(60.0, clock=lambda: now[0]):
            client = fake_time_client(
                lambda request: httpx.Response(503), [], now, retry_budget_s=30.0, backoff_base_s=1.0
            )
            with pytest.raises(ServerError):
                await client.esearch("x")
    assert now[0] < 5.0  # backoff sleeps stopped within the outer 5 s
    await client.aclose()


async def test_time_waiting_on_our_own_start_up_is_not_taken_from_the_question_deadline() -> None:
    # A first question waits 8 s for the dense index to load, then makes its calls: with the wait paused,
    # its 5 s deadline still has 5 s for NCBI; without, the deadline would be spent before any call.
    now = [0.0]
    sent: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(now[0])
        now[0] += 1.0
        return httpx.Response(503)

    client = fake_time_client(handler, [], now, retry_budget_s=30.0, max_attempts=10, backoff_base_s=0.0)
    with question_deadline(5.0, clock=lambda: now[0]):

        async def other_task_call() -> None:  # a task of the same question sees the moved deadline too
            with pytest.raises((TransportError, ServerError)):  # out of time: the last 503 or the deadline
                await client.esearch("x")

        with deadline_paused():
            now[0] += 8.0  # the index loading
        await asyncio.create_task(other_task_call())
    assert sent == [8.0, 9.0, 10.0, 11.0, 12.0]  # five 1 s attempts: the deadline's whole 5 s, after the wait
    with deadline_paused():  # outside any question: nothing to move
        now[0] += 1.0
    await client.aclose()

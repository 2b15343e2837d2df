"""The per-process E-utilities limiter: a sliding window as NCBI counts, FIFO, strict spacing with burst 1."""

from __future__ import annotations

import asyncio

import pytest

from retrieval.eutils import WindowLimiter, burst_for, effective_rate, window_rate
from retrieval.eutils._ratelimit import limiter_for


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


async def sends(limiter: WindowLimiter, time: FakeTime, n: int) -> list[float]:
    out: list[float] = []

    async def one() -> None:
        await limiter.acquire()
        out.append(time.now)

    await asyncio.gather(*(one() for _ in range(n)))
    return out


def max_in(times: list[float], window: float) -> int:
    return max(sum(1 for s in times if a <= s < a + window) for a in times)


async def test_window_spends_an_idle_budget_at_once_and_never_holds_more_than_ncbi_counts() -> None:
    t = FakeTime()
    # NCBI with a key: 10 per second; our rate 10 x 0.95, so the window is 10 / 9.5 = 1.053 s.
    limiter = WindowLimiter(10, 9.5, clock=t.clock, sleep=t.sleep)
    times = await sends(limiter, t, 25)
    assert times[:10] == [0.0] * 10  # ten calls ready at once go out at once: no slot left idle
    assert times[10] == pytest.approx(10 / 9.5)  # the eleventh when the first leaves the window
    assert max_in(times, 1.0) == 10  # any one second NCBI looks at holds at most its 10
    assert times[20] == pytest.approx(2 * 10 / 9.5)  # long run: 10 per window, i.e. our 9.5 per second


async def test_burst_one_is_strict_spacing() -> None:
    t = FakeTime()
    limiter = WindowLimiter(1, 4.0, clock=t.clock, sleep=t.sleep)
    times = await sends(limiter, t, 5)
    assert times == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])


async def test_waiters_are_served_in_arrival_order() -> None:
    t = FakeTime()
    limiter = WindowLimiter(2, 2.0, clock=t.clock, sleep=t.sleep)
    order: list[int] = []

    async def one(n: int) -> None:
        await limiter.acquire()
        order.append(n)

    await asyncio.gather(*(one(n) for n in range(7)))
    assert order == list(range(7))


def test_burst_is_what_ncbi_accepts_in_a_second() -> None:
    assert burst_for(None, None) == 3 and burst_for("KEY", None) == 10
    assert burst_for(None, 2.5) == 2 and burst_for(None, 0.5) == 1
    # The window of NCBI's own rates is 1 / safety s; a fractional rate's is never shorter.
    for configured in (None, 2.5, 1.5, 0.5, 3.0, 7.9):
        burst = burst_for(None, configured)
        window_s = burst / window_rate(burst, effective_rate(None, configured, 0.95), 0.95)
        assert window_s >= 1 / 0.95 - 1e-12
    assert 3 / window_rate(3, 3 * 0.95, 0.95) == pytest.approx(1 / 0.95)
    with pytest.raises(ValueError):
        WindowLimiter(0, 1.0)


@pytest.mark.parametrize("configured", [2.5, 1.5, 3.7, 9.99])
async def test_a_fractional_rate_never_sends_more_than_it_or_ncbi_in_any_second(configured: float) -> None:
    t = FakeTime()
    safety = 0.95
    burst = burst_for(None, configured)
    rate = window_rate(burst, effective_rate(None, configured, safety), safety)
    times = await sends(WindowLimiter(burst, rate, clock=t.clock, sleep=t.sleep), t, 40)
    in_a_second = max_in(times, 1.0)
    assert in_a_second <= min(configured, 3 if configured < 4 else 10)  # 2.5/s: 2, not the 4 it was
    assert in_a_second == burst  # and the budget is still spent: a whole burst at once


async def test_float_edges_never_let_one_send_too_many_through() -> None:
    # 1.5 req/s: windows of 2/3 s, where t + window - now lands within a rounding of 0 again and again.
    for burst in (1, 2, 3):
        t = FakeTime()
        limiter = WindowLimiter(burst, 1.5, clock=t.clock, sleep=t.sleep)
        times = await sends(limiter, t, 60)
        assert max(sum(1 for s in times if a <= s < a + limiter.window_s - 1e-9) for a in times) <= burst
        # The limiter's own count agrees: just before each send, the window never held a full burst.
        assert len(times) == 60


async def test_a_pause_holds_every_send_until_it_ends() -> None:
    t = FakeTime()
    limiter = WindowLimiter(3, 2.85, clock=t.clock, sleep=t.sleep)
    limiter.pause(4.0)
    limiter.pause(1.0)  # an earlier end never shortens a pause
    times = await sends(limiter, t, 4)
    assert times[:3] == [pytest.approx(4.0)] * 3 and times[3] == pytest.approx(4.0 + 3 / 2.85)


async def test_the_limiter_table_is_bounded_under_many_per_request_keys() -> None:
    from retrieval.eutils import _ratelimit

    first = limiter_for("key-0", 9.5, 10)
    for n in range(1, _ratelimit._MAX_LIMITERS + 50):
        limiter_for(f"key-{n}", 9.5, 10)
        if n % 100 == 0:
            assert limiter_for("key-0", 9.5, 10) is first  # recently used: kept
    table = _ratelimit._TABLES[asyncio.get_running_loop()]
    assert len(table) == _ratelimit._MAX_LIMITERS
    assert limiter_for("key-0", 9.5, 10) is first
    assert ("key-1", 9.5, 10) not in table  # least recently used keys went first


async def test_a_busy_limiter_is_not_evicted_by_many_other_keys() -> None:
    from retrieval.eutils import _ratelimit

    paused = limiter_for("paused-key", 9.5, 10)
    paused.pause(10.0)  # a Retry-After: no send of this key for 10 s
    limiter_for("idle-key", 9.5, 10)
    for n in range(_ratelimit._MAX_LIMITERS + 50):  # never touching the two keys above
        limiter_for(f"other-{n}", 9.5, 10)
    table = _ratelimit._TABLES[asyncio.get_running_loop()]
    assert len(table) == _ratelimit._MAX_LIMITERS
    assert ("idle-key", 9.5, 10) not in table  # idle: evicted as before
    again = limiter_for("paused-key", 9.5, 10)
    assert again is paused and again.delay() > 9.0  # the pause still holds every call of the key

"""The per-process E-utilities limiter: a sliding window as NCBI counts, FIFO, strict spacing with burst 1."""

from __future__ import annotations

import asyncio

import pytest

from retrieval.eutils import WindowLimiter, burst_for


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
    with pytest.raises(ValueError):
        WindowLimiter(0, 1.0)

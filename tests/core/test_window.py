"""The one sliding-window counter: what it admits, when the oldest event leaves, float edges."""

from __future__ import annotations

from core import KeyedWindows, SlidingWindow


def test_at_most_limit_events_in_any_window_and_the_wait_until_one_leaves() -> None:
    w = SlidingWindow(2, 1.0, clock=lambda: 0.0)
    assert w.wait(0.0) == 0.0
    w.add(0.0)
    w.add(0.3)
    assert w.wait(0.5) == 0.5  # full: the event at 0.0 leaves at 1.0
    assert w.count(0.99) == 2 and w.wait(1.0) == 0.0 and w.count(1.0) == 1  # at t + window it is gone
    assert w.active(1.2) and not w.active(1.3)


def test_one_comparison_decides_both_leaving_and_waiting() -> None:
    # 2/3 s windows: t + window - now rounds to tiny negatives; such an event has left, never "still in".
    window = 1 / 1.5
    w = SlidingWindow(1, window)
    now = 0.0
    for _ in range(200):
        wait = w.wait(now)
        assert wait >= 0.0
        now += wait
        assert w.wait(now) == 0.0  # after waiting what it said, there is room: no zero-or-negative wait
        w.add(now)
    assert abs(now - 199 * window) < 1e-9


def test_keyed_windows_keep_at_most_max_keys_forgetting_the_least_recently_used() -> None:
    windows = KeyedWindows(max_keys=2, clock=lambda: 0.0)
    a = windows.get("a", 1, 1.0)
    a.add(0.0)
    windows.get("b", 1, 1.0).add(0.0)
    assert windows.get("a", 1, 1.0) is a  # used again: now the most recent
    windows.get("c", 1, 1.0)
    assert len(windows) == 2
    assert windows.get("a", 1, 1.0).wait(0.5) > 0  # kept, still limited
    assert windows.get("b", 1, 1.0).wait(0.5) == 0  # forgotten (evicted), starts empty
    # Settings may change between calls.
    assert windows.get("a", 3, 1.0).limit == 3

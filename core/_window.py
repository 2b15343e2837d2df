"""The one sliding-window counter: at most ``limit`` events in any ``window_s`` seconds, clock injected."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable

__all__ = ["KeyedWindows", "SlidingWindow"]


class SlidingWindow:
    """Event times of the last ``window_s`` seconds; an event at ``t`` counts while ``now < t + window_s``.

    One comparison decides both questions, whether the oldest event has left and how long until it leaves:
    :meth:`wait` computes ``t + window_s - now`` once and drops events while it is ``<= 0``, so a float
    rounding can never leave an event counted whose wait is already over (which would let one send too
    many through). ``limit`` and ``window_s`` may be changed between calls. Not thread-safe: callers hold
    their own lock or event loop.
    """

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._times: deque[float] = deque()

    def _prune(self, now: float) -> float:
        """Drop events that left the window; the seconds until the oldest remaining one leaves (or 0)."""
        while self._times:
            wait = self._times[0] + self.window_s - now
            if wait > 0:
                return wait
            self._times.popleft()
        return 0.0

    def wait(self, now: float | None = None) -> float:
        """Seconds until one more event fits in the window (0: it fits now)."""
        wait = self._prune(self._clock() if now is None else now)
        return 0.0 if len(self._times) < self.limit else wait

    def add(self, now: float | None = None) -> None:
        """Record one event (whether or not it fitted: callers that count refusals too record them)."""
        self._times.append(self._clock() if now is None else now)

    def count(self, now: float | None = None) -> int:
        """Events still in the window."""
        self._prune(self._clock() if now is None else now)
        return len(self._times)

    def active(self, now: float | None = None) -> bool:
        """Whether any event is still in the window (an idle window can be forgotten)."""
        return self.count(now) > 0


class KeyedWindows:
    """One :class:`SlidingWindow` per key (a client, an API key), at most ``max_keys`` of them.

    A caller who sends each request under a new key must not grow memory without bound, nor make every
    request rescan the table: beyond ``max_keys`` the least recently used key is forgotten in O(1). A
    forgotten key starts again with an empty window, which gives it nothing a new key would not get.
    """

    def __init__(self, max_keys: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_keys = max_keys
        self._clock = clock
        self._windows: OrderedDict[str, SlidingWindow] = OrderedDict()

    def get(self, key: str, limit: int, window_s: float) -> SlidingWindow:
        """``key``'s window with the current ``limit`` and ``window_s`` (they may change between calls)."""
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = SlidingWindow(limit, window_s, self._clock)
            while len(self._windows) > self.max_keys:
                self._windows.popitem(last=False)
        else:
            self._windows.move_to_end(key)
            window.limit, window.window_s = limit, window_s
        return window

    def __len__(self) -> int:
        return len(self._windows)

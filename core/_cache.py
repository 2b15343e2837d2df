"""The one in-memory cache shape for large values: least recently used, bounded by entries and by bytes.

A count of entries alone does not bound memory when values vary in size (a full text's passage vectors are a
hundred times an abstract's), so caches of vectors and segments weigh each value and evict until both bounds
hold.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from cachetools import LRUCache

__all__ = ["SizedLRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SizedLRU(LRUCache[K, V]):
    """A ``cachetools.LRUCache`` weighed by ``sizeof`` (bytes), holding at most ``max_entries`` entries.

    Like every cachetools cache it is not thread-safe: an owner shared across threads holds a lock around it.
    ``evictions`` counts entries dropped to respect a bound (not :meth:`clear`, not deletions).
    """

    def __init__(self, max_entries: int, max_bytes: int, sizeof: Callable[[V], int]) -> None:
        super().__init__(maxsize=max_bytes, getsizeof=sizeof)
        self.max_entries = max_entries
        self.evictions = 0

    def put(self, key: K, value: V) -> bool:
        """Store ``value`` unless it cannot fit at all (no room, or larger than the byte bound alone)."""
        if self.max_entries <= 0 or self.getsizeof(value) > self.maxsize:
            return False
        if key in self:
            del self[key]  # a replaced value is not an eviction (cachetools may otherwise count it as one)
        self[key] = value
        while len(self) > self.max_entries:
            self.popitem()
        return True

    def popitem(self) -> tuple[K, V]:
        item = super().popitem()
        self.evictions += 1
        return item

"""The one in-memory cache shape for large values: least recently used, bounded by entries and by bytes.

A count of entries alone does not bound memory when values vary in size (a full text's passage vectors are a
hundred times an abstract's), so caches of vectors and segments weigh each value and evict until both bounds
hold.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from cachetools import LRUCache

__all__ = ["SizedLRU", "approx_size"]

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

    def stats(self) -> dict[str, int]:
        """Entries and bytes held, their bounds, and evictions: the one shape every cache reports."""
        return {
            "entries": len(self),
            "bytes": int(self.currsize),
            "max_entries": self.max_entries,
            "max_bytes": int(self.maxsize),
            "evictions": self.evictions,
        }

    def popitem(self) -> tuple[K, V]:
        item = super().popitem()
        self.evictions += 1
        return item


def approx_size(value: Any, _depth: int = 0) -> int:
    """What ``value`` weighs in memory, roughly (bytes): strings, bytes, numbers, containers, dataclasses and
    numpy arrays walked to a bounded depth. For weighing cache values once, when they are stored; shared
    objects are counted at every reference (an overestimate, which keeps a byte bound safe)."""
    if isinstance(value, str | bytes | bytearray | int | float | bool) or value is None:
        return sys.getsizeof(value)
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):  # numpy arrays
        return nbytes + 112
    if _depth >= 12:
        return 64
    deeper = _depth + 1
    if isinstance(value, Mapping):
        return sys.getsizeof(value) + sum(
            approx_size(k, deeper) + approx_size(v, deeper) for k, v in value.items()
        )
    if isinstance(value, tuple | list | set | frozenset):
        return sys.getsizeof(value) + sum(approx_size(v, deeper) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return 56 + 8 * len(fields) + sum(approx_size(getattr(value, f.name), deeper) for f in fields)
    inner = getattr(value, "__dict__", None)
    if isinstance(inner, dict):
        return sys.getsizeof(value) + approx_size(inner, deeper)
    return sys.getsizeof(value)

"""core's byte-bounded LRU and the size estimate caches weigh values with."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import SizedLRU, approx_size


@dataclass(frozen=True, slots=True)
class Record:
    title: str
    sections: tuple[str, ...]


def test_approx_size_grows_with_the_text_and_counts_arrays_by_their_bytes() -> None:
    small, large = Record("t", ("a" * 100,)), Record("t", ("a" * 100,) * 50)
    assert approx_size(small) > 100 and approx_size(large) > 50 * 100 > approx_size(small)
    assert approx_size(np.zeros((10, 384), dtype=np.float32)) >= 10 * 384 * 4
    assert approx_size({"k": [large, small]}) > approx_size(large) + approx_size(small)
    deep: list[object] = []
    for _ in range(100):
        deep = [deep]
    assert approx_size(deep) < 10_000  # bounded depth: no recursion blow-up


def test_sized_lru_evicts_by_bytes_and_refuses_a_value_larger_than_the_bound() -> None:
    cache: SizedLRU[str, str] = SizedLRU(10, 250, len)
    assert cache.put("a", "x" * 100) and cache.put("b", "x" * 100)
    assert cache.put("c", "x" * 100)  # 300 > 250: the least recently used goes
    assert list(cache) == ["b", "c"] and cache.evictions == 1 and cache.currsize == 200
    assert not cache.put("huge", "x" * 300) and "huge" not in cache
    assert cache.stats() == {"entries": 2, "bytes": 200, "max_entries": 10, "max_bytes": 250, "evictions": 1}

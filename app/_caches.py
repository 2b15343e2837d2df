"""Cache sizes at ``/metrics``: entries, bytes and bounds of every in-process cache, read at scrape time."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["CACHE_METRICS", "CacheMetrics"]

_FAMILIES = {
    "entries": "Entries held, by cache",
    "bytes": "Bytes the held values weigh, by cache",
    "max_entries": "Entry bound, by cache",
    "max_bytes": "Byte bound, by cache",
    "evictions": "Entries evicted to keep the bounds, by cache (since start)",
    "hits": "Lookups served, by cache (since start)",
    "misses": "Lookups not served, by cache (since start)",
}


class CacheMetrics(Collector):
    """``cometa_cache_<figure>{cache=...}`` gauges from owners that report ``{cache: {figure: value}}``.

    Owners are held weakly (a process's container, a test's pipeline): one that is gone reports nothing.
    """

    def __init__(self) -> None:
        self._owners: dict[
            str, tuple[weakref.ref[Any], Callable[[Any], Mapping[str, Mapping[str, int]]]]
        ] = {}

    def track(self, name: str, owner: Any, report: Callable[[Any], Mapping[str, Mapping[str, int]]]) -> None:
        """Report ``report(owner)`` under ``name`` (a later owner of the same name replaces it)."""
        self._owners[name] = (weakref.ref(owner), report)

    def snapshot(self) -> dict[str, dict[str, int]]:
        """Every tracked cache's figures now, keyed by cache name."""
        out: dict[str, dict[str, int]] = {}
        for ref, report in list(self._owners.values()):
            owner = ref()
            if owner is not None:
                out.update({cache: dict(figures) for cache, figures in report(owner).items()})
        return out

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = {
            k: GaugeMetricFamily(f"cometa_cache_{k}", doc, labels=["cache"]) for k, doc in _FAMILIES.items()
        }
        for cache, figures in self.snapshot().items():
            for key, value in figures.items():
                if key in families:
                    families[key].add_metric([cache], float(value))
        yield from families.values()


CACHE_METRICS = CacheMetrics()
REGISTRY.register(CACHE_METRICS)

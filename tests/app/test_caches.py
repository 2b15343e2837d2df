"""Cache sizes at /metrics: read from their owners at scrape time, nothing once an owner is gone."""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry, generate_latest

from app._caches import CacheMetrics


class Owner:
    def stats(self) -> dict[str, dict[str, int]]:
        return {"passages": {"entries": 3, "bytes": 4096, "max_bytes": 8192, "unknown": 1}}


def test_gauges_follow_their_owner_and_vanish_with_it() -> None:
    metrics, registry = CacheMetrics(), CollectorRegistry()
    registry.register(metrics)
    owner = Owner()
    metrics.track("pipeline", owner, Owner.stats)
    text = generate_latest(registry).decode()
    assert 'cometa_cache_bytes{cache="passages"} 4096.0' in text
    assert 'cometa_cache_max_bytes{cache="passages"} 8192.0' in text and "unknown" not in text
    del owner
    gc.collect()
    assert metrics.snapshot() == {} and 'cache="passages"' not in generate_latest(registry).decode()

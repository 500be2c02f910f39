"""What /metrics serves: every worker's samples in multiprocess mode (metrics.py says when), and the gauges apps
register to be computed at scrape time, never on the hot path."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from apps.common.metrics import MULTIPROCESS

_scrape_collectors: list[Collector] = []


def scrape_collector_add(collector: Collector) -> None:
    """Serve `collector` on every scrape. Such collectors report the answering process (e.g. its config
    snapshot, apps/limits/snapshot_holder.py): in multiprocess mode they are not written to files."""
    _scrape_collectors.append(collector)
    if not MULTIPROCESS:
        REGISTRY.register(collector)


def metrics_registry() -> CollectorRegistry:
    """The registry to serve: every worker's files in multiprocess mode, else this process's default registry."""
    if not MULTIPROCESS:
        return REGISTRY
    # A fresh registry per scrape, as prometheus_client documents: files are read at collect time.
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    for collector in _scrape_collectors:
        registry.register(collector)
    return registry


def metrics_exposition() -> bytes:
    """All platform metrics in the Prometheus text format (CONTENT_TYPE_LATEST)."""
    return generate_latest(metrics_registry())

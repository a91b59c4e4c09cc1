"""The hub's Prometheus metrics, one registry per hub (tests run several)."""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from hub.clusterset.status import member_health
from hub.store.base import StoreCounts
from mcapi.mchub.v1 import common_area_pb2 as pb

if TYPE_CHECKING:
    from hub.engine import Engine


class _StoreCounts(Collector):
    """The store's own counts (Store.counts), as of the last refresh."""

    def __init__(self) -> None:
        self.counts: StoreCounts | None = None

    def collect(self) -> Iterator[Metric]:
        counts = self.counts
        if counts is None:
            return
        transactions = "Store transactions committed (each write of the hub is one)"
        syncs = "fsyncs that made commits durable (one serves every commit made before it)"
        yield CounterMetricFamily("mchub_store_transactions", transactions, counts.transactions)
        yield CounterMetricFamily("mchub_store_statements", "SQL statements those transactions ran", counts.statements)
        yield CounterMetricFamily("mchub_store_syncs", syncs, counts.syncs)


class HubMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.exports = Gauge("mchub_exports", "ResourceExports held by the hub", ["kind"], registry=r)
        self.imports = Gauge("mchub_imports", "ResourceImports held by the hub", ["kind"], registry=r)
        self.members_connected = Gauge(
            "mchub_members_connected", "Member clusters announced within the disconnect window", registry=r
        )
        self.members_total = Gauge("mchub_members_total", "Member clusters that joined", registry=r)
        self.export_streams = Gauge("mchub_export_streams", "Open Export streams", registry=r)
        self.watchers = Gauge("mchub_import_watchers", "Open WatchImports streams", registry=r)
        self.exports_received = Counter("mchub_export_upserts_total", "Export upserts received", ["kind"], registry=r)
        self.export_requests = Counter(
            "mchub_export_requests_total",
            "Export stream requests received, by item (upserts: several upserts in one request)",
            ["item"],
            registry=r,
        )
        self.imports_sent = Counter(
            "mchub_import_events_total",
            "Import change events fanned out (per batch, not per watcher)",
            registry=r,
        )
        self.status_report_calls = Counter(
            "mchub_import_status_report_calls_total", "Import status report calls taken", ["method"], registry=r
        )
        self.status_reports = Counter(
            "mchub_import_status_reports_total", "Import status reports taken (a call may carry several)", registry=r
        )
        self.auth_failures = Counter("mchub_auth_failures_total", "Calls refused for a bad token", registry=r)
        self.store_revision = Gauge("mchub_store_revision", "Revision of the last committed write", registry=r)
        self._store_counts = _StoreCounts()
        r.register(self._store_counts)

    def refresh(self, engine: Engine, now: datetime, disconnect_after: float) -> None:
        """The gauges, from what `engine` holds now (the counters count as calls come)."""
        index = engine.index
        health = [member_health(m, now, disconnect_after) for m in index.members.values()]
        self.members_total.set(len(health))
        self.members_connected.set(sum(1 for h in health if h.connected))
        self.store_revision.set(engine.revision)
        self._store_counts.counts = engine.store.counts()
        export_kinds: Tally[str] = Tally(kind for _, (kind, _) in index.exports.facets())
        import_kinds: Tally[str] = Tally(kind for _, (kind, _) in index.imports.facets())
        # Every kind is set, so a kind that dropped to zero reads 0, not its last count.
        for kind in pb.ResourceExport.DESCRIPTOR.oneofs_by_name["payload"].fields:
            self.exports.labels(kind=kind.name).set(export_kinds.get(kind.name, 0))
        for kind in pb.ResourceImport.DESCRIPTOR.oneofs_by_name["payload"].fields:
            self.imports.labels(kind=kind.name).set(import_kinds.get(kind.name, 0))

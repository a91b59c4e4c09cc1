"""The hub's Prometheus metrics, one registry per hub (tests run several)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


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

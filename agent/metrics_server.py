"""The agent's /metrics (Prometheus text format) and /healthz, for scraping and probes.

The agent's metrics (ClusterSet policy verdicts and skips) are only useful when something
can read them.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kube.probe_server import ProbeServer


class MetricsServer(ProbeServer):
    def __init__(self, address: str, registry: CollectorRegistry) -> None:
        super().__init__(address, registry=registry, what="metrics address")

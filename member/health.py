"""The member's health endpoints, for the Deployment's probes.

/healthz answers while the process serves requests (liveness); /readyz answers 200
when the member has nothing to join yet or is connected to its leader hub, and 503
with the reason otherwise (readiness: `kubectl get pods` then shows a member that
cannot reach its hub). With a registry, /metrics shows it (Prometheus text format).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kube.probe_server import ProbeServer, Readiness

__all__ = ["HealthServer", "Readiness"]


class HealthServer(ProbeServer):
    def __init__(self, address: str, readiness: Readiness, registry: CollectorRegistry | None = None) -> None:
        super().__init__(address, readiness=readiness, registry=registry, what="health address")

"""Fixtures of the member Gateway suite (sandbox clusters, no root).

* ``cluster``: a sandbox API server (Service CIDR 10.96.0.0/12) with the CRDs, and its client.
* ``gateways``: ``await gateways.start(config=..., cluster_id=...)`` gives a started
  GatewayController on ``cluster`` whose sink is ``gateways`` (a fake hub session): its
  ClusterInfo goes to ``gateways.exported`` (the export by name, absent once withdrawn;
  ``gateways.changed`` is set on every call), the reachability it forwards to
  ``gateways.reports``. Every controller is stopped at teardown.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kube.client import KubeClient
from kube.events import EventRecorder
from mcapi.config import MultiClusterConfig
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.gateway import GatewayController
from sandbox.server import SandboxServer
from tests.kubeenv.cluster import sandbox_cluster

NAMESPACE = "kube-system"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[SandboxServer, KubeClient]]:
    async with sandbox_cluster(tmp_path / "east", "east") as pair:
        yield pair


@dataclass
class Gateways:
    client: KubeClient
    exported: dict[str, pb.ResourceExport] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    reports: list[tuple[str, bool, str, str]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    controllers: list[GatewayController] = field(default_factory=list)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    answering: set[str] = field(default_factory=set)
    """internalIPs that answer the member's own probe (its check of reports in active-active mode);
    the Nodes' addresses here are made up, so nothing is sent to them."""

    async def probe(self, ip: str) -> bool:
        return ip in self.answering

    def transitions(self, reason: str) -> float:
        """mchub_member_gateway_transitions_total{reason} on the controllers' registry."""
        return self.registry.get_sample_value("mchub_member_gateway_transitions_total", {"reason": reason}) or 0.0

    def set_export(self, export: pb.ResourceExport) -> None:
        self.exported[export.export_name] = export
        self.calls.append(f"set {export.export_name}")
        self.changed.set()

    def remove_export(self, name: str) -> None:
        self.exported.pop(name, None)
        self.calls.append(f"remove {name}")
        self.changed.set()

    def report_import_status(self, import_name: str, succeeded: bool, reason: str = "", message: str = "") -> None:
        self.reports.append((import_name, succeeded, reason, message))

    async def start(self, config: MultiClusterConfig | None = None, cluster_id: str = "east") -> GatewayController:
        controller = GatewayController(
            self.client,
            NAMESPACE,
            config or MultiClusterConfig(),
            cluster_id,
            self,
            recorder=EventRecorder(self.client, "mchub-member"),
            sync_timeout=10.0,
            registry=self.registry,
            probe=self.probe,
        )
        self.controllers.append(controller)
        await controller.start()
        return controller

    async def export_where(
        self, predicate: Callable[[pb.ResourceExport | None], bool], within: float = 10.0
    ) -> pb.ResourceExport | None:
        """Until the clusterinfo export (None: withdrawn) satisfies ``predicate``."""
        async with asyncio.timeout(within):
            while True:
                current = self.exported.get("east-clusterinfo")
                if predicate(current):
                    return current
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
async def gateways(cluster: tuple[SandboxServer, KubeClient]) -> AsyncIterator[Gateways]:
    found = Gateways(cluster[1])
    try:
        yield found
    finally:
        for controller in found.controllers:
            await controller.stop()

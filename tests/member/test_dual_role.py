"""A dual-role cluster: the hub keeps its state in the cluster (kube store, leader Namespace
antrea-multicluster) and the same cluster is a member (kube-system)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hub.app import HubApp
from hub.config import KubeStoreConfig
from kube.client import KubeClient
from kube.leader import LeaseTiming
from mcapi import names
from mcapi.resources import RESOURCE_EXPORTS
from sandbox.server import SandboxServer
from tests.integration.hubrunner import HubRunner
from tests.kubeenv.cluster import ensure_namespace, sandbox_cluster
from tests.member.harness import JoinedMember, eventually, join_member

NS = "shop"


@pytest.fixture
async def north(tmp_path: Path) -> AsyncIterator[tuple[SandboxServer, KubeClient]]:
    async with sandbox_cluster(tmp_path / "north", "north") as cluster:
        await ensure_namespace(cluster[1], names.DEFAULT_LEADER_NAMESPACE)
        yield cluster


@pytest.fixture
async def kube_hub(tmp_path: Path, north: tuple[SandboxServer, KubeClient]) -> AsyncIterator[HubApp]:
    runner = HubRunner(tmp_path / "hub")
    config = dataclasses.replace(
        runner.config(),
        store=KubeStoreConfig(kubeconfig=north[0].kubeconfig_path, lease=LeaseTiming(3.0, 2.0, 0.5)),
    )
    app = HubApp(config)
    await app.start()
    try:
        await eventually(_ready(app), what="the kube-store hub leading")
        yield app
    finally:
        await app.stop()


def _ready(app: HubApp):  # type: ignore[no-untyped-def]
    async def probe() -> bool:
        return app.is_ready()

    return probe


async def test_a_cluster_hosting_the_hub_is_also_a_member(
    tmp_path: Path, north: tuple[SandboxServer, KubeClient], kube_hub: HubApp
) -> None:
    member: JoinedMember = await join_member(kube_hub, "north", tmp_path / "clusters", cluster=north)
    try:
        await member.create_service(NS, "web")
        await member.export(NS, "web")
        await member.wait_condition(NS, "web", "Ready", "True", "Exported")
        export_name = names.service_export_name("north", NS, "web")

        async def stored_as_cr() -> bool:
            listed = await north[1].list(RESOURCE_EXPORTS, names.DEFAULT_LEADER_NAMESPACE)
            return any(o["metadata"]["name"] == export_name for o in listed.items)

        await eventually(stored_as_cr, what="the ResourceExport CR in the leader Namespace")
        cluster_set = await member.cluster_set(kube_hub)
        ready = next(c for c in cluster_set["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True"
    finally:
        await member.aclose()

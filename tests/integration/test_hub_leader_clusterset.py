"""The leader ClusterSet CR names what the hub serves, for a kube-store hub and for a SQLite hub
that mirrors into the leader cluster, on a sandbox and on a real kube-apiserver.

The guide's "Initialize ClusterSet" creates the ClusterSet in the leader Namespace; its name is
the ClusterSet ID and its `spec.clusterID` (= `spec.leaders[0].clusterID`) the leader's. The
hub serves that ClusterSet even where its configuration (ConfigMap mchub-hub-config, flags)
says otherwise, and says so: in the logs, and in the ClusterSet's status (condition
HubConfigMatches False, every mismatch in its message). Without the CR the configuration
holds; with one that agrees, HubConfigMatches is True.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from hub.app import HubApp
from hub.clusterset.end import RECORD_FILE
from hub.config import KubeStoreConfig, MirrorConfig, SqliteStoreConfig
from kube.client import KubeClient
from kube.leader import LeaseTiming
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import CLUSTER_SETS, MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS
from tests.contract.leader_api import LeaderApi, leader_api
from tests.integration.hub_fixtures import hub_config
from tests.integration.hubclient import MemberFactory, service_export

CONFIGURED_SET, CONFIGURED_LEADER = "test-clusterset", "test-cluster-north"


@dataclass
class Leader:
    api: LeaderApi
    namespace: str
    store: str
    tmp: Path

    @property
    def client(self) -> KubeClient:
        return self.api.client

    def hub(self) -> HubApp:
        common: dict[str, Any] = {
            "cluster_set_id": CONFIGURED_SET,
            "leader_cluster_id": CONFIGURED_LEADER,
            "namespace": self.namespace,
            "status_interval": 0.3,
        }
        if self.store == "kube":
            extra: dict[str, Any] = {
                "store": KubeStoreConfig(
                    kubeconfig=self.api.kubeconfig, lease=LeaseTiming(3.0, 2.0, 0.5), replica_id="hub-0"
                )
            }
        else:
            extra = {"store": SqliteStoreConfig(mirror=MirrorConfig(self.api.kubeconfig))}
        return HubApp(hub_config(self.tmp / "hub", **common, **extra))


@pytest.fixture(params=["kube", "mirror"])
async def leader(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Leader]:
    async with leader_api(cluster_kind, request, tmp_path / "leader-cluster") as api:
        ns = await api.namespace("leader") if api.real else await api.fixed_namespace(names.DEFAULT_LEADER_NAMESPACE)
        yield Leader(api, ns, request.param, tmp_path)


def clusterset(name: str, own: str, leader: str) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_SETS.api_version,
        "kind": "ClusterSet",
        "metadata": {"name": name},
        "spec": {"clusterID": own, "leaders": [{"clusterID": leader}]},
    }


async def until(probe: Callable[[], Awaitable[bool]], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await probe():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what}: not within {within}s")


def config_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "HubConfigMatches"), None)


async def serving(hub: HubApp) -> None:
    async def leads() -> bool:
        return hub.is_leader()

    await until(leads, 15, "the hub serving")


async def test_the_hub_serves_the_clusterset_its_leader_cr_names_and_reports_the_mismatch(
    leader: Leader, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="hub.leader_cluster.clusterset_cr")
    ns, client = leader.namespace, leader.client
    await client.create(CLUSTER_SETS, clusterset("prod-clusterset", "leader-a", "leader-a"), namespace=ns)
    hub = leader.hub()
    await hub.start()
    members = MemberFactory(hub)
    try:
        await serving(hub)

        async def adopted() -> bool:
            return hub.config.cluster_set_id == "prod-clusterset" and hub.config.leader_cluster_id == "leader-a"

        await until(adopted, 10, "the CR's IDs adopted")
        east = await members("east")  # announces the hub's (the CR's) IDs
        reply = await east.announce()
        assert (reply.cluster_set_id, reply.leader_cluster_id) == ("prod-clusterset", "leader-a")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await east.stub.Announce(pb.AnnounceRequest(cluster_id="east", cluster_set_id=CONFIGURED_SET))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT

        async def reported() -> bool:
            cr = await client.get(CLUSTER_SETS, "prod-clusterset", ns)
            check = config_condition(cr)
            return bool(check and check["status"] == "False" and (cr.get("status") or {}).get("totalClusters") == 1)

        await until(reported, 10, "the mismatch in the ClusterSet's status")
        check = config_condition(await client.get(CLUSTER_SETS, "prod-clusterset", ns))
        assert check is not None and check["reason"] == "ConfigMismatch"
        assert "'prod-clusterset'" in check["message"] and f"'{CONFIGURED_SET}'" in check["message"]
        assert "'leader-a'" in check["message"] and f"'{CONFIGURED_LEADER}'" in check["message"]
        logged = [r.getMessage() for r in caplog.records if r.name == "hub.leader_cluster.clusterset_cr"]
        assert "leader clusterset mismatch" in logged
    finally:
        await members.close()
        await hub.stop()


async def test_a_matching_cr_says_so_and_a_cr_at_odds_with_itself_is_reported(leader: Leader) -> None:
    ns, client = leader.namespace, leader.client
    hub = leader.hub()
    await hub.start()
    try:
        await serving(hub)
        # Created after the hub started, as in the user guide.
        await client.create(
            CLUSTER_SETS, clusterset(CONFIGURED_SET, CONFIGURED_LEADER, CONFIGURED_LEADER), namespace=ns
        )

        async def matches() -> bool:
            check = config_condition(await client.get(CLUSTER_SETS, CONFIGURED_SET, ns))
            return bool(check and check["status"] == "True")

        await until(matches, 10, "HubConfigMatches True")
        assert hub.config.cluster_set_id == CONFIGURED_SET

        cr = await client.get(CLUSTER_SETS, CONFIGURED_SET, ns)
        cr["spec"]["leaders"] = [{"clusterID": "someone-else"}]
        await client.replace(CLUSTER_SETS, cr)

        async def at_odds() -> bool:
            check = config_condition(await client.get(CLUSTER_SETS, CONFIGURED_SET, ns))
            return bool(check and check["status"] == "False" and "spec.leaders[0].clusterID" in check["message"])

        await until(at_odds, 10, "the CR's own inconsistency reported")
        assert hub.config.leader_cluster_id == CONFIGURED_LEADER  # spec.clusterID, the leader's own ID
    finally:
        await hub.stop()


async def test_deleting_the_leader_clusterset_ends_the_clusterset_and_empties_the_leader(leader: Leader) -> None:
    """The guide's "Remove a Leader Cluster", step 3, for either store: what the hub wrote goes and
    members are refused (a SQLite hub records it in its data dir, as `mcctl destroy` does)."""
    ns, client = leader.namespace, leader.client
    await client.create(CLUSTER_SETS, clusterset(CONFIGURED_SET, CONFIGURED_LEADER, CONFIGURED_LEADER), namespace=ns)
    hub = leader.hub()
    await hub.start()
    members = MemberFactory(hub)
    try:
        await serving(hub)
        east = await members("east")
        await east.export(service_export("east", "default", "nginx"))

        async def crs() -> set[str]:
            found: set[str] = set()
            for resource in (RESOURCE_EXPORTS, RESOURCE_IMPORTS, MEMBER_CLUSTER_ANNOUNCES):
                found |= {o["metadata"]["name"] for o in (await client.list(resource, ns)).items}
            return found

        async def written() -> bool:
            return "member-announce-from-east" in await crs() and "default-nginx-service" in await crs()

        await until(written, 10, "the hub's CRs in the leader")
        await client.delete(CLUSTER_SETS, CONFIGURED_SET, ns)

        async def emptied() -> bool:
            return not await crs()

        await until(emptied, 10, "the leader Namespace emptied of the hub's CRs")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await east.announce()
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "was deleted from Namespace" in (refused.value.details() or "")
        if leader.store == "mirror":
            assert CONFIGURED_SET in (leader.tmp / "hub" / RECORD_FILE).read_text()
    finally:
        await members.close()
        await hub.stop()

"""The hub in production mode: CRs in a Kubernetes API, members' ServiceAccount tokens
checked with TokenReview, Lease election between replicas; on a sandbox and on a real
kube-apiserver (whose token controller fills the ServiceAccount token Secrets).

Hubs run as their own processes (so they can be SIGKILLed); the sandbox runs here. On the
shared real cluster the hub's leader Namespace is one of the test's own (`--namespace`).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import grpc
import pytest

from kube.client import KubeClient
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from mcapi.resources import CLUSTER_SETS, RESOURCE_EXPORTS
from tests.contract.leader_api import LeaderApi, leader_api
from tests.integration.hubclient import read_until_synced, secure_channel, service_export
from tests.integration.hubprocess import HubProcess, hub_process

FAST_LEASE = ("--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.5")
# client-go's defaults (and the hub's): for tests that do not wait for a lease to expire, so a
# machine under load must stall a hub for 10 s before it steps down.
DEFAULT_LEASE = ("--lease-duration", "15", "--renew-deadline", "10", "--retry-period", "2")


@dataclass
class Leader:
    """The leader cluster and the hub's leader Namespace in it."""

    api: LeaderApi
    namespace: str

    @property
    def client(self) -> KubeClient:
        return self.api.client


@pytest.fixture
async def leader(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Leader]:
    async with leader_api(cluster_kind, request, tmp_path / "leader-cluster") as api:
        if api.real:
            yield Leader(api, await api.namespace("leader"))
        else:
            yield Leader(api, await api.fixed_namespace(names.DEFAULT_LEADER_NAMESPACE))


async def member_token(leader: Leader, account: str, cluster_id: str | None) -> str:
    """A ServiceAccount in the leader Namespace (annotated with its cluster ID) and its token Secret."""
    return await leader.api.service_account_token(leader.namespace, account, cluster_id)


def kube_args(leader: Leader, replica: str, lease: tuple[str, ...] = FAST_LEASE) -> tuple[str, ...]:
    return (
        "--store", "kube", "--kubeconfig", str(leader.api.kubeconfig), "--namespace", leader.namespace,
        "--replica-id", replica, *lease,
    )  # fmt: skip


async def wait_ready(hub: HubProcess, within: float) -> float:
    """Seconds until /readyz says 200."""
    start = time.monotonic()
    async with hub.rest_session() as http:
        while time.monotonic() - start < within:
            try:
                async with http.get("/readyz") as response:
                    if response.status == 200:
                        return time.monotonic() - start
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"hub not ready within {within}s")


async def export_services(hub: HubProcess, token: str, count: int) -> list[str]:
    async with secure_channel(hub.target, hub.ca, token) as channel:
        stub = pb_grpc.CommonAreaServiceStub(channel)
        await stub.Announce(pb.AnnounceRequest(cluster_id="east", cluster_set_id="test-clusterset"))
        call = stub.Export()
        for i in range(count):
            await call.write(pb.ExportRequest(sequence=i + 1, upsert=service_export("east", "default", f"svc-{i}")))
        acknowledged = []
        for _ in range(count):
            answer = await call.read()
            assert answer.status.verdict == pb.VERDICT_ACCEPTED
            acknowledged.append(answer.export_name)
        call.cancel()
        return acknowledged


async def imports_seen(hub: HubProcess, token: str) -> dict[str, pb.ResourceImport]:
    async with secure_channel(hub.target, hub.ca, token) as channel:
        stub = pb_grpc.CommonAreaServiceStub(channel)
        snapshot, _ = await read_until_synced(stub.WatchImports(pb.WatchImportsRequest(cluster_id="east")).__aiter__())
        return snapshot


async def test_a_kube_backed_hub_killed_and_restarted_loses_no_acknowledged_export(
    leader: Leader, tmp_path: Path
) -> None:
    token = await member_token(leader, "member-east", "east")
    async with hub_process(tmp_path / "hub", *kube_args(leader, "hub-0")) as first:
        await wait_ready(first, 15)
        acknowledged = await export_services(first, token, 30)
        first.process.send_signal(signal.SIGKILL)
        await first.process.wait()
    crs = await leader.client.list(RESOURCE_EXPORTS, namespace=leader.namespace)
    assert {cr["metadata"]["name"] for cr in crs.items} >= set(acknowledged)
    async with hub_process(tmp_path / "hub", *kube_args(leader, "hub-0")) as second:
        await wait_ready(second, 15)
        snapshot = await imports_seen(second, token)
    for export_name in acknowledged:
        name = export_name.removeprefix("east-default-").removesuffix("-service")
        assert names.service_import_name("default", name) in snapshot


async def test_when_the_leader_replica_dies_the_other_serves_within_the_lease_time(
    leader: Leader, tmp_path: Path
) -> None:
    token = await member_token(leader, "member-east", "east")
    async with (
        hub_process(tmp_path / "hub-a", *kube_args(leader, "hub-a")) as first,
        hub_process(tmp_path / "hub-b", *kube_args(leader, "hub-b")) as second,
    ):
        ready = await asyncio.wait(
            [asyncio.create_task(wait_ready(h, 15)) for h in (first, second)], return_when=asyncio.FIRST_COMPLETED
        )
        del ready
        leading, following = await _who_leads(first, second)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await export_services(following, token, 1)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        acknowledged = await export_services(leading, token, 20)

        leading.process.send_signal(signal.SIGKILL)
        await leading.process.wait()
        took = await wait_ready(following, 10)
        assert took < 3 + 2, f"the follower took {took:.1f}s to serve (lease 3 s)"
        snapshot = await imports_seen(following, token)
    for export_name in acknowledged:
        name = export_name.removeprefix("east-default-").removesuffix("-service")
        assert names.service_import_name("default", name) in snapshot


async def _who_leads(a: HubProcess, b: HubProcess) -> tuple[HubProcess, HubProcess]:
    async with a.rest_session() as http, http.get("/readyz") as response:
        return (a, b) if response.status == 200 else (b, a)


async def test_service_account_tokens_speak_for_the_annotated_cluster_only(leader: Leader, tmp_path: Path) -> None:
    east = await member_token(leader, "member-east", "east")
    unannotated = await member_token(leader, "member-nobody", None)
    shared = await member_token(leader, "antrea-mc-member-access-sa", "*")
    async with hub_process(tmp_path / "hub", *kube_args(leader, "hub-0")) as hub:
        await wait_ready(hub, 15)
        request = pb.AnnounceRequest(cluster_id="east", cluster_set_id="test-clusterset")
        async with secure_channel(hub.target, hub.ca, east) as channel:
            await pb_grpc.CommonAreaServiceStub(channel).Announce(request)
            with pytest.raises(grpc.aio.AioRpcError) as other:
                await pb_grpc.CommonAreaServiceStub(channel).Announce(
                    pb.AnnounceRequest(cluster_id="west", cluster_set_id="test-clusterset")
                )
            assert other.value.code() == grpc.StatusCode.PERMISSION_DENIED
        async with secure_channel(hub.target, hub.ca, unannotated) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as nobody:
                await pb_grpc.CommonAreaServiceStub(channel).Announce(request)
            assert nobody.value.code() == grpc.StatusCode.UNAUTHENTICATED
        async with secure_channel(hub.target, hub.ca, shared) as channel:
            stub = pb_grpc.CommonAreaServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as unnamed:
                await stub.Announce(pb.AnnounceRequest(cluster_id="west", cluster_set_id="test-clusterset"))
            assert unnamed.value.code() == grpc.StatusCode.PERMISSION_DENIED
            await stub.Announce(
                pb.AnnounceRequest(cluster_id="west", cluster_set_id="test-clusterset"),
                metadata=(("mchub-cluster-id", "west"),),
            )


async def test_the_leader_clusterset_status_counts_connected_members(leader: Leader, tmp_path: Path) -> None:
    token = await member_token(leader, "member-east", "east")
    clusterset = {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha2",
        "kind": "ClusterSet",
        "metadata": {"name": "test-clusterset"},
        "spec": {"clusterID": "leader", "leaders": [{"clusterID": "leader"}]},
    }
    await leader.client.create(CLUSTER_SETS, clusterset, namespace=leader.namespace)
    async with hub_process(tmp_path / "hub", *kube_args(leader, "hub-0")) as hub:
        await wait_ready(hub, 15)
        async with secure_channel(hub.target, hub.ca, token) as channel:
            await pb_grpc.CommonAreaServiceStub(channel).Announce(
                pb.AnnounceRequest(cluster_id="east", cluster_set_id="test-clusterset")
            )
        deadline = time.monotonic() + 15
        status: dict[str, object] = {}
        while time.monotonic() < deadline:
            status = (await leader.client.get(CLUSTER_SETS, "test-clusterset", leader.namespace)).get("status") or {}
            if status.get("readyClusters") == 1:
                break
            await asyncio.sleep(0.2)
        assert status.get("totalClusters") == 1 and status.get("readyClusters") == 1, status

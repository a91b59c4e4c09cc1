"""Membership as the user guide runs it: a member leaves, comes back, is removed, and the leader
is removed, leaving a Ready ClusterSet (or nothing) behind.

On "sandbox": sandbox clusters and the hub with its SQLite store, read through its REST facade.
On "real": the session's real clusters, the hub with `--store kube` on the real leader, read
as the guide does (`kubectl get memberclusterannounce,resourceexports,resourceimports` and the
leader ClusterSet's status columns). Each test builds its own ClusterSet (they end it).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ctl.main import main as mcctl_main
from kube.client import KubeClient, connect
from kube.errors import NotFound
from mcapi import names
from mcapi.resources import CLUSTER_SETS, MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS
from mchub_cli.localset import LocalClusterSet
from tests.e2e.conftest import make_namespace, new_clusterset
from tests.e2e.mcs import eventually, export, service, service_import
from tests.e2e.realset import LEADER, RealClusterSet
from tests.integration.hub_fixtures import rest_session

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

EAST, WEST, NORTH = "test-cluster-east", "test-cluster-west", "test-cluster-north"
# The brief's budget: after a member's ClusterSet is deleted, its announce gone and the
# leader ClusterSet Ready with the members that remain.
WITHIN = 10.0


class Leader:
    """The leader side as its operator sees it: kubectl on the real leader, REST on the sandbox's hub."""

    def __init__(self, local: LocalClusterSet, client: KubeClient | None) -> None:
        self.local = local
        self.client = client

    @property
    def namespace(self) -> str:
        return self.local.leader_namespace if isinstance(self.local, RealClusterSet) else ""

    async def _rest(self, path: str) -> tuple[int, Any]:
        hub = self.local.hub
        assert hub is not None
        headers = {"Authorization": f"Bearer {hub.admin_token}"}
        async with rest_session(hub) as http, http.get(path, headers=headers) as response:
            return response.status, await response.json()

    async def names(self, resource: Any) -> set[str]:
        """Names of the hub's MemberClusterAnnounces, ResourceExports or ResourceImports."""
        if self.client is not None:
            listed = await self.client.list(resource, namespace=self.namespace)
            return {o["metadata"]["name"] for o in listed.items}
        path = {
            MEMBER_CLUSTER_ANNOUNCES: "/api/v1/members",
            RESOURCE_EXPORTS: "/api/v1/resourceexports",
            RESOURCE_IMPORTS: "/api/v1/resourceimports",
        }[resource]
        _, body = await self._rest(path)
        return {o["metadata"]["name"] for o in body["items"]}

    async def counts(self) -> tuple[Any, Any, Any] | None:
        """(TOTAL CLUSTERS, READY CLUSTERS, Ready) of the leader ClusterSet; None when it is gone."""
        if self.client is not None:
            try:
                cr = await self.client.get(CLUSTER_SETS, self.local.clusterset_id, self.namespace)
            except NotFound:
                return None
            status = cr.get("status") or {}
        else:
            code, body = await self._rest("/api/v1/clusterset")
            if code == 404:
                return None
            status = body["status"]
        ready = next((c["status"] for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
        return status.get("totalClusters"), status.get("readyClusters"), ready

    async def wait_ready_with(self, members: int, what: str) -> None:
        async def ready() -> bool:
            return await self.counts() == (members, members, "True")

        await eventually(ready, within=WITHIN, what=what)

    async def announced(self) -> set[str]:
        return {n.removeprefix("member-announce-from-") for n in await self.names(MEMBER_CLUSTER_ANNOUNCES)}


@pytest_asyncio.fixture(loop_scope="module")
async def local(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[LocalClusterSet, Leader]]:
    cs = new_clusterset(cluster_kind, request, tmp_path, kube_store=True)
    client: KubeClient | None = None
    try:
        await cs.start()
        if isinstance(cs, RealClusterSet):
            client = await connect(cs.real[LEADER].kubeconfig)
        leader = Leader(cs, client)
        await leader.wait_ready_with(3, "the ClusterSet Ready with its three members")
        yield cs, leader
    finally:
        if client is not None:
            await client.close()
        await cs.stop()


async def mcctl(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """`mcctl ARGS` as the operator runs it (its own event loop, in a thread)."""
    capsys.readouterr()
    code = await asyncio.to_thread(mcctl_main, [str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def hub_args(local: LocalClusterSet) -> list[str]:
    hub = local.hub
    assert hub is not None and hub.ca_cert is not None
    return ["--hub-url", hub.rest_url, "--token", hub.admin_token, "--hub-ca-file", str(hub.ca_cert)]


async def delete_member_clusterset(local: LocalClusterSet, name: str) -> dict[str, Any]:
    """The guide's "Remove a Member Cluster": delete the member's ClusterSet CR (returned, to make it again)."""
    client = local.clusters[name].client
    written = await client.get(CLUSTER_SETS, local.clusterset_id, local.member_namespace)
    await client.delete(CLUSTER_SETS, local.clusterset_id, local.member_namespace)
    return written


async def create_member_clusterset(local: LocalClusterSet, name: str, written: dict[str, Any]) -> None:
    meta = {"name": written["metadata"]["name"], "namespace": local.member_namespace}
    await local.clusters[name].client.create(CLUSTER_SETS, {"metadata": meta, "spec": written["spec"]})


async def member_status(local: LocalClusterSet, name: str) -> dict[str, Any]:
    cs = await local.clusters[name].client.get(CLUSTER_SETS, local.clusterset_id, local.member_namespace)
    ready = next((c for c in (cs.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), {})
    return ready


async def test_a_member_whose_clusterset_is_deleted_leaves_and_joins_again_when_it_is_created(
    local: tuple[LocalClusterSet, Leader],
) -> None:
    cs, leader = local
    ns = f"lifecycle-{os.getpid()}-1"
    await make_namespace(cs, ns)
    await export(cs.clusters[WEST].client, ns, service("web"))
    await eventually(lambda: service_import(cs.clusters[EAST].client, ns, "web"), what="web imported into east")
    assert names.member_announce_name(WEST) in await leader.names(MEMBER_CLUSTER_ANNOUNCES)

    written = await delete_member_clusterset(cs, WEST)

    async def west_gone() -> bool:
        return WEST not in await leader.announced()

    await eventually(west_gone, within=WITHIN, what="west's MemberClusterAnnounce gone")
    await leader.wait_ready_with(2, "the ClusterSet Ready with the two members that remain")
    assert not {n for n in await leader.names(RESOURCE_EXPORTS) if n.startswith(WEST)}

    async def web_gone_from_east() -> bool:
        return await service_import(cs.clusters[EAST].client, ns, "web") is None

    await eventually(web_gone_from_east, what="west's export no longer imported into east")

    await create_member_clusterset(cs, WEST, written)

    async def west_back() -> bool:
        return WEST in await leader.announced()

    await eventually(west_back, within=WITHIN, what="west announced again")
    await leader.wait_ready_with(3, "the ClusterSet Ready with three members again")
    await eventually(lambda: service_import(cs.clusters[EAST].client, ns, "web"), what="web imported into east again")


async def test_mcctl_delete_member_removes_a_stopped_member(
    local: tuple[LocalClusterSet, Leader], capsys: pytest.CaptureFixture[str]
) -> None:
    cs, leader = local
    await cs.stop_member(NORTH)  # dies without leaving: its announce stays
    assert NORTH in await leader.announced()

    code, out, err = await mcctl(capsys, "delete", "member", NORTH, "--yes", *hub_args(cs))

    assert code == 0, err
    assert names.member_announce_name(NORTH) in out
    assert NORTH not in await leader.announced()
    await leader.wait_ready_with(2, "the ClusterSet Ready with the two members that remain")

    await cs.start_member(NORTH)  # the same member comes back
    if isinstance(cs, RealClusterSet):
        # Its ServiceAccount token is the leader cluster's: mcctl said how to revoke it, and
        # until then the member is admitted again, cleanly.
        assert "ServiceAccount" in err
        await leader.wait_ready_with(3, "north admitted again")
    else:
        # Its hub token was revoked with it: it is refused and says why.
        async def refused() -> bool:
            ready = await member_status(cs, NORTH)
            return ready.get("status") == "False" and "revoked" in ready.get("message", "")

        await eventually(refused, what="north's ClusterSet saying its token was refused (revoked)")
        assert NORTH not in await leader.announced()


async def test_the_guides_leader_removal_leaves_no_mchub_objects(
    local: tuple[LocalClusterSet, Leader], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cs, leader = local
    ns = f"lifecycle-{os.getpid()}-3"
    await make_namespace(cs, ns)
    await export(cs.clusters[WEST].client, ns, service("web"))
    await eventually(lambda: service_import(cs.clusters[EAST].client, ns, "web"), what="web imported into east")

    # Remove every member (their ClusterSets), then verify no MemberClusterAnnounce remains.
    for name in (EAST, WEST, NORTH):
        await delete_member_clusterset(cs, name)

    async def no_announce() -> bool:
        return not await leader.announced()

    await eventually(no_announce, within=WITHIN, what="no MemberClusterAnnounce left")

    # Delete the ClusterSet CR (mcctl destroy does, and waits for the hub); check nothing is left.
    if isinstance(cs, RealClusterSet):
        leader_cluster = cs.real[LEADER]
        argv = ["--kubeconfig", leader_cluster.kubeconfig, "-n", leader.namespace]
    else:
        monkeypatch.delenv("KUBECONFIG", raising=False)
        argv = []
    code, _, err = await mcctl(capsys, "destroy", "--clusterset", cs.clusterset_id, *argv, *hub_args(cs))
    assert code == 0, err

    assert await leader.counts() is None
    for resource in (MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS):
        assert await leader.names(resource) == set(), resource.kind
    if isinstance(cs, RealClusterSet):
        shown = cs.real[LEADER].kubectl(
            "get", "resourceexports,resourceimports,memberclusterannounce", "-n", leader.namespace
        )
        assert shown.strip() == "", shown


async def test_deleting_the_clusterset_under_its_members_removes_what_they_exported_and_refuses_them(
    local: tuple[LocalClusterSet, Leader], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cs, leader = local
    ns = f"lifecycle-{os.getpid()}-4"
    await make_namespace(cs, ns)
    await export(cs.clusters[WEST].client, ns, service("web"))
    await eventually(lambda: service_import(cs.clusters[EAST].client, ns, "web"), what="web imported into east")

    if isinstance(cs, RealClusterSet):
        assert leader.client is not None
        await leader.client.delete(CLUSTER_SETS, cs.clusterset_id, leader.namespace)  # kubectl delete clusterset
    else:
        monkeypatch.delenv("KUBECONFIG", raising=False)
        code, _, err = await mcctl(capsys, "destroy", "--clusterset", cs.clusterset_id, *hub_args(cs))
        assert code == 0, err

    async def nothing_left() -> bool:
        for resource in (MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS):
            if await leader.names(resource):
                return False
        return True

    await eventually(nothing_left, within=WITHIN, what="no MemberClusterAnnounce, ResourceExport or ResourceImport")

    async def east_refused() -> bool:
        ready = await member_status(cs, EAST)
        return ready.get("status") == "False" and "deleted" in ready.get("message", "")

    await eventually(east_refused, what="east's ClusterSet saying the leader's ClusterSet was deleted")
    assert not await leader.announced()

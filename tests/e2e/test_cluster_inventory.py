"""The sig-multicluster APIs beyond MCS, end to end: ClusterProperties (KEP-2149), ClusterProfiles
(KEP-4322) and ServiceExport cluster selectors (KEP-5939).

On "sandbox": sandbox clusters and a SQLite hub that mirrors into north, the leader. On "real":
the session's real clusters and the hub with `--store kube` on the real leader. Both with a 1 s
heartbeat (a member is Disconnected 5 s after its last announce), so a stopped member shows soon.

- a `@SameAsImporter@` region selector keeps each region's traffic in the region: every
  importer's ServiceImport, MCS EndpointSlices and `antrea-mc-<name>` Endpoints list only its
  region's exporters, each ServiceExport says which clusters it serves, `mcctl get
  clusterproperty|serviceimport` shows the properties and each importer's selection, and a
  region left without ready endpoints falls back to every exporter;
- a second cluster claiming a member's ID is refused (ClusterIDInUse on its ClusterSet);
- `kubectl get clusterprofiles -A` (and `mcctl get clusterprofile`) on the leader shows every
  member, whose profile turns ControlPlaneHealthy=False when it disconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ctl.main import main as mcctl_main
from kube.client import KubeClient, connect
from kube.errors import AlreadyExists, NotFound
from kube.resources import ENDPOINTS, NAMESPACES, SECRETS
from mcapi import names
from mcapi.crds import PROPERTY_CLUSTER_ID
from mcapi.resources import CLUSTER_PROPERTIES, CLUSTER_SETS, SERVICE_EXPORTS_V1BETA1
from mchub_cli.localset import LocalClusterSet
from member.app import MemberApp
from tests.e2e.conftest import make_namespace, new_clusterset
from tests.e2e.mcs import ensure_namespace, eventually, export, mcs_slices, service, service_import, unexport
from tests.e2e.realset import LEADER, RealClusterSet
from tests.sandbox.kubectl_runner import Kubectl

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

EAST, WEST, NORTH = "test-cluster-east", "test-cluster-west", "test-cluster-north"
REGION = "region.topology.k8s.io"
REGIONS = {EAST: "us-east", NORTH: "us-east", WEST: "eu-west"}
SAME_REGION = [{"propertySelector": {"matchProperties": {REGION: "@SameAsImporter@"}}}]
FAST = {"heartbeat_interval": 1.0, "disconnect_after": 5.0}
RUN = secrets.token_hex(2)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def inventory_set(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalClusterSet]:
    where = {"kube_store": True} if cluster_kind == "real" else {"mirror": True}
    local = new_clusterset(cluster_kind, request, tmp_path_factory.mktemp("inventory"), hub_overrides=FAST, **where)
    try:
        await local.start()
        for name, region in REGIONS.items():
            await write_property(local.clusters[name].client, REGION, region)
        yield local
    finally:
        for name in REGIONS:
            if name in local.clusters:
                with contextlib.suppress(NotFound):
                    await local.clusters[name].client.delete(CLUSTER_PROPERTIES, REGION)
        await local.stop()


async def write_property(client: KubeClient, name: str, value: str) -> None:
    body = {"apiVersion": CLUSTER_PROPERTIES.api_version, "kind": "ClusterProperty", "metadata": {"name": name}}
    try:
        await client.create(CLUSTER_PROPERTIES, {**body, "spec": {"value": value}})
    except AlreadyExists:
        await client.patch(CLUSTER_PROPERTIES, name, {"spec": {"value": value}})


def client_of(cs: LocalClusterSet, name: str) -> KubeClient:
    return cs.clusters[name].client


async def selection_seen(
    cs: LocalClusterSet, namespace: str, importer: str, expected: list[str], results: list[str] | None = None
) -> bool:
    """The importer's ServiceImport selects ``results`` (by default ``expected``), and its MCS
    EndpointSlices and Endpoints hold exactly ``expected``'s clusters."""
    client = client_of(cs, importer)
    imported = await service_import(client, namespace, "api")
    if imported is None:
        return False
    status = imported.get("status") or {}
    if status.get("clusterSelectorResults") != [{"clusters": expected if results is None else results}]:
        return False
    if status.get("observedGeneration") != imported["metadata"]["generation"]:
        return False
    if sorted(await mcs_slices(client, namespace, "api")) != expected:
        return False
    try:
        endpoints = await client.get(ENDPOINTS, "antrea-mc-api", namespace)
    except NotFound:
        return False
    addresses = [a["ip"] for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []]
    return len(addresses) == len(expected)


async def test_a_same_as_importer_region_selector_keeps_each_regions_traffic_in_the_region(
    inventory_set: LocalClusterSet, capsys: pytest.CaptureFixture[str]
) -> None:
    cs = inventory_set
    namespace = f"e2e-{RUN}-regions"
    await make_namespace(cs, namespace)
    for exporter, ip in ((EAST, "10.0.1.1"), (WEST, "10.0.2.1")):
        await export(client_of(cs, exporter), namespace, service("api"), (ip,), cluster_selectors=SAME_REGION)

    for importer, expected in ((NORTH, [EAST]), (EAST, [EAST]), (WEST, [WEST])):
        await eventually(
            lambda i=importer, e=expected: selection_seen(cs, namespace, i, e),  # type: ignore[misc]
            what=f"{importer} imports api from {expected} only",
        )
    imported = await service_import(client_of(cs, NORTH), namespace, "api")
    assert imported is not None
    assert imported["spec"]["clusterSelectors"] == SAME_REGION
    assert sorted(c["cluster"] for c in imported["status"]["clusters"]) == [EAST, WEST]  # the KEP's constituents

    async def serves(exporter: str, importers: list[str]) -> bool:
        obj = await client_of(cs, exporter).get(SERVICE_EXPORTS_V1BETA1, "api", namespace)
        return [c["cluster"] for c in (obj.get("status") or {}).get("clusters") or []] == importers

    await eventually(lambda: serves(EAST, [EAST, NORTH]), what="east's ServiceExport serves east and north")
    await eventually(lambda: serves(WEST, [WEST]), what="west's ServiceExport serves west")

    # What a user sees with mcctl: each cluster's properties, and each importer's selection.
    properties = await mcctl_rows(capsys, "get", "clusterproperty", "--kubeconfig", cs.clusters[EAST].kubeconfig)
    assert properties[0] == ["NAME", "VALUE"]
    assert [PROPERTY_CLUSTER_ID, EAST] in properties and [REGION, "us-east"] in properties
    exporters = f"{EAST},{WEST}"
    for importer, chosen in ((NORTH, EAST), (WEST, WEST)):
        kubeconfig = cs.clusters[importer].kubeconfig
        rows = await mcctl_rows(capsys, "get", "serviceimport", "-n", namespace, "--kubeconfig", kubeconfig)
        assert rows == [
            ["NAMESPACE", "NAME", "TYPE", "EXPORTERS", "SELECTED"],
            [namespace, "api", "ClusterSetIP", exporters, chosen],
        ]

    # West no longer exports: its region has no exporter, so west falls back to every exporter.
    await unexport(client_of(cs, WEST), namespace, "api")
    await eventually(lambda: selection_seen(cs, namespace, WEST, [EAST], results=[]), what="west falls back to east")
    await eventually(lambda: serves(EAST, [EAST, NORTH, WEST]), what="east now serves west too")


async def test_an_invalid_selector_is_refused_on_its_service_export(inventory_set: LocalClusterSet) -> None:
    cs = inventory_set
    namespace = f"e2e-{RUN}-invalid"
    await make_namespace(cs, namespace)
    client = client_of(cs, EAST)
    await export(client, namespace, service("bad"), cluster_selectors=[{"propertySelector": {}}])

    async def refused() -> dict[str, Any] | None:
        obj = await client.get(SERVICE_EXPORTS_V1BETA1, "bad", namespace)
        valid = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Valid"), None)
        return valid if valid is not None and valid["status"] == "False" else None

    valid = await eventually(refused, what="Valid=False")
    assert valid["reason"] == "InvalidClusterSelector"
    assert await service_import(client_of(cs, NORTH), namespace, "bad") is None


async def test_a_second_cluster_claiming_a_members_id_is_refused(inventory_set: LocalClusterSet) -> None:
    cs = inventory_set
    async with impostor_cluster(cs) as (client, member_namespace):
        await claim_east_from(cs, client, member_namespace)


async def claim_east_from(cs: LocalClusterSet, client: KubeClient, member_namespace: str) -> None:
    """A member in ``client``'s cluster that says it is east, with east's own token."""
    secret = "impostor-token"
    await client.create(
        SECRETS,
        {"metadata": {"name": secret}, "type": "Opaque", "data": await token_of(cs, EAST)},
        namespace=member_namespace,
    )
    hub = cs.hub
    assert hub is not None
    leader_namespace = cs.leader_namespace if isinstance(cs, RealClusterSet) else names.DEFAULT_LEADER_NAMESPACE
    clusterset = {
        "metadata": {"name": cs.clusterset_id},
        "spec": {
            "clusterID": EAST,
            "namespace": leader_namespace,
            "leaders": [{"clusterID": cs.leader_cluster_id, "server": f"https://{hub.grpc_target}", "secret": secret}],
        },
    }
    await client.create(CLUSTER_SETS, clusterset, namespace=member_namespace)
    impostor = MemberApp(client, member_namespace)
    await impostor.start()
    try:

        async def refused() -> dict[str, Any] | None:
            obj = await client.get(CLUSTER_SETS, cs.clusterset_id, member_namespace)
            ready = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), None)
            return ready if ready is not None and ready.get("reason") == names.REASON_CLUSTER_ID_IN_USE else None

        ready = await eventually(refused, what="the impostor's ClusterSet Ready=False ClusterIDInUse")
        assert ready["status"] == "False" and f"{EAST!r} is in use" in ready["message"]
        east_uid = (await client_of(cs, EAST).get(NAMESPACES, "kube-system"))["metadata"]["uid"]
        assert hub.engine.index.members[EAST].inventory.cluster_uid == east_uid
        with contextlib.suppress(NotFound):  # the refused cluster claimed no ID property
            assert (await client.get(CLUSTER_PROPERTIES, PROPERTY_CLUSTER_ID))["spec"]["value"] != EAST
    finally:
        await client.delete(CLUSTER_SETS, cs.clusterset_id, member_namespace)
        await impostor.stop()


@contextlib.asynccontextmanager
async def impostor_cluster(cs: LocalClusterSet) -> AsyncIterator[tuple[KubeClient, str]]:
    """A cluster with no member of this set (the real leader; a new sandbox), and a member Namespace."""
    if not isinstance(cs, RealClusterSet):
        cluster = await cs.add_cluster("test-cluster-impostor", "10.99.0.0/16")
        yield cluster.client, names.DEFAULT_MEMBER_NAMESPACE
        return
    client = await connect(cs.real[LEADER].kubeconfig)
    namespace = f"{cs.member_namespace}-impostor"
    try:
        await ensure_namespace(client, namespace)
        yield client, namespace
    finally:
        with contextlib.suppress(NotFound):
            await client.delete(NAMESPACES, namespace)
        await client.close()


async def token_of(cs: LocalClusterSet, name: str) -> dict[str, str]:
    """The data of member ``name``'s token Secret (its token and the hub's CA), as a copy would be."""
    found = await client_of(cs, name).get(SECRETS, f"{name}-member-token", cs.member_namespace)
    return dict(found["data"])


def leader_kubeconfig(cs: LocalClusterSet) -> Path:
    return cs.real[LEADER].kubeconfig if isinstance(cs, RealClusterSet) else cs.leader_cluster.kubeconfig


async def leader_kubectl(cs: LocalClusterSet, *args: str) -> str:
    """kubectl on the leader cluster, without blocking the loop (a sandbox is served by it)."""
    return (await Kubectl(leader_kubeconfig(cs))(*args)).check().stdout


async def mcctl_rows(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> list[list[str]]:
    """`mcctl ARGV` as a user runs it (its own loop, in a thread: a sandbox is served by this one):
    the rows of its table, header first."""
    capsys.readouterr()
    code = await asyncio.to_thread(mcctl_main, [str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [line.split() for line in out.splitlines() if line.strip()]


async def test_kubectl_shows_every_members_profile_which_turns_unhealthy_when_it_disconnects(
    inventory_set: LocalClusterSet, capsys: pytest.CaptureFixture[str]
) -> None:
    cs = inventory_set
    namespace = cs.leader_namespace

    async def profiles() -> dict[str, dict[str, Any]] | None:
        listed = json.loads(await leader_kubectl(cs, "get", "clusterprofiles", "-A", "-o", "json"))
        found = {p["metadata"]["name"]: p for p in listed["items"] if p["metadata"]["namespace"] == namespace}
        return found if set(found) == set(REGIONS) and all(_healthy(p) == "True" for p in found.values()) else None

    found = await eventually(profiles, what="a healthy profile of every member")
    table = await leader_kubectl(cs, "get", "clusterprofiles", "-A")
    assert all(name in table for name in REGIONS) and namespace in table
    east = found[EAST]
    assert east["metadata"]["labels"]["x-k8s.io/cluster-manager"] == "mchub"
    assert east["spec"]["clusterManager"]["name"] == "mchub"
    assert east["status"]["version"]["kubernetes"].startswith("v1.")
    properties = {p["name"]: p["value"] for p in east["status"]["properties"]}
    assert properties[REGION] == "us-east" and properties[PROPERTY_CLUSTER_ID] == EAST
    labels = json.loads(await leader_kubectl(cs, "get", "namespace", namespace, "-o", "json"))["metadata"]["labels"]
    assert labels["multicluster.x-k8s.io/clusterset"] == cs.clusterset_id
    shown = await mcctl_rows(capsys, "get", "clusterprofile", "-n", namespace, "--kubeconfig", leader_kubeconfig(cs))
    assert shown[0] == ["CLUSTER-ID", "NAMESPACE", "MANAGER", "HEALTHY", "REASON", "VERSION", "PROPERTIES"]
    assert sorted(row[:5] for row in shown[1:]) == [
        [name, namespace, "mchub", "True", "Healthy"] for name in sorted(REGIONS)
    ]

    await cs.stop_member(WEST)
    try:

        async def disconnected() -> dict[str, Any] | None:
            west = json.loads(await leader_kubectl(cs, "get", "clusterprofile", WEST, "-n", namespace, "-o", "json"))
            condition = _condition(west)
            return condition if condition.get("status") == "False" else None

        condition = await eventually(disconnected, within=30.0, what="west's profile ControlPlaneHealthy=False")
        assert condition["reason"] == "Disconnected"
        shown = await mcctl_rows(
            capsys, "get", "clusterprofile", WEST, "-n", namespace, "--kubeconfig", leader_kubeconfig(cs)
        )
        assert shown[1][:5] == [WEST, namespace, "mchub", "False", "Disconnected"]
    finally:
        await cs.start_member(WEST)


def _condition(profile: dict[str, Any]) -> dict[str, Any]:
    conditions = (profile.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "ControlPlaneHealthy"), {})


def _healthy(profile: dict[str, Any]) -> str:
    return str(_condition(profile).get("status", ""))

"""Version N and N+1 on the wire: the previous release's member against this hub, and its hub
against this member, each with a member of the other release, a Service exported each way.

The previous release is tests/compat/PREVIOUS (see tests/compat/previous.py), run as
processes of its own; this release runs in-process (tests/e2e's LocalClusterSet). The member
clusters are sandbox API servers. An import counts when the importing member wrote the
ServiceImport with the exporter's port and the derived Service's Endpoints with the exporter's
address: its Pod IP in its own cluster, its ClusterIP in the other (endpointIPType ClusterIP).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import ENDPOINTS
from mchub_cli.localset import SERVICE_CIDRS, LocalClusterSet, write_join_objects
from tests.compat.previous import PREVIOUS_COMMIT, previous_hub, previous_mchub, previous_token, previous_tree
from tests.e2e.mcs import ensure_namespace, eventually, export, import_ports, service, service_import

pytestmark = pytest.mark.slow

EAST, WEST = "test-cluster-east", "test-cluster-west"
NAMESPACE = "compat"
MEMBER_READY = re.compile(r"member: watching Namespace")


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return previous_tree(tmp_path_factory.mktemp("previous") / PREVIOUS_COMMIT[:12])


@pytest.fixture
async def clusters(tmp_path: Path) -> AsyncIterator[LocalClusterSet]:
    """East and west, sandbox clusters with the CRDs and Namespace ``compat``; no hub, no member."""
    local = LocalClusterSet(tmp_path, cluster_names=(EAST, WEST))
    try:
        for index, name in enumerate(local.cluster_names):
            cluster = await local.add_cluster(name, SERVICE_CIDRS[index])
            await ensure_namespace(cluster.client, NAMESPACE)
        yield local
    finally:
        await local.stop()


def previous_member(tree: Path, local: LocalClusterSet, name: str) -> AbstractAsyncContextManager[re.Match[str]]:
    cluster = local.clusters[name]
    log = local.work_dir / f"{name}-previous-member.log"
    return previous_mchub(tree, log, "member", "--kubeconfig", str(cluster.kubeconfig), ready=MEMBER_READY)


async def imported(client: KubeClient, name: str, address: str) -> bool:
    """The ServiceImport with the exported port, and its Service's Endpoints with ``address``."""
    imp = await service_import(client, NAMESPACE, name)
    if imp is None or import_ports(imp) != [("http", 80, "TCP")]:
        return False
    try:
        endpoints = await client.get(ENDPOINTS, f"antrea-mc-{name}", NAMESPACE)
    except NotFound:
        return False
    return any(a.get("ip") == address for s in endpoints.get("subsets") or [] for a in s.get("addresses") or [])


async def exchange(local: LocalClusterSet, *, new: str, old: str, log: Path) -> None:
    """Each member exports a Service; each imports the other's (and its own)."""
    pods = {new: "10.0.1.1", old: "10.0.2.1"}
    names = {new: "from-new", old: "from-old"}
    cluster_ips = {}
    for exporter, name in names.items():
        created = await export(local.clusters[exporter].client, NAMESPACE, service(name), (pods[exporter],))
        cluster_ips[exporter] = created["spec"]["clusterIP"]
    for importer in (new, old):
        client = local.clusters[importer].client

        async def both(client: KubeClient = client, importer: str = importer) -> bool:
            for exporter, name in names.items():
                address = pods[exporter] if exporter == importer else cluster_ips[exporter]
                if not await imported(client, name, address):
                    return False
            return True

        await eventually(both, within=40, what=f"both Services imported in {importer} (previous release: {log})")


async def test_the_previous_member_against_this_hub(previous: Path, clusters: LocalClusterSet) -> None:
    await clusters.start_hub()
    await clusters.join(EAST)
    await clusters.write_join_objects(WEST)
    async with previous_member(previous, clusters, WEST):
        await exchange(clusters, new=EAST, old=WEST, log=clusters.work_dir / f"{WEST}-previous-member.log")


async def test_the_previous_hub_against_this_member(previous: Path, clusters: LocalClusterSet) -> None:
    data_dir = clusters.work_dir / "previous-hub"
    tokens = {name: await previous_token(previous, data_dir, name) for name in (EAST, WEST)}
    async with previous_hub(previous, data_dir, clusters.clusterset_id, clusters.leader_cluster_id) as listening:
        ca = (data_dir / "tls" / "ca.crt").read_bytes()
        for name, token in tokens.items():
            await write_join_objects(clusters.clusters[name].client, clusters.join_spec(name), token, ca, listening[1])
        await clusters.start_member(EAST)
        async with previous_member(previous, clusters, WEST):
            await exchange(clusters, new=EAST, old=WEST, log=data_dir.with_suffix(".log"))

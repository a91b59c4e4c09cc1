"""Member behaviours across clusters that the conformance suite does not cover:
endpointIPType PodIP, a user's same-named Service left alone, a legacy (v1alpha1) join.

Fixture `podip_clusterset`: a hub (SQLite store) and east/west, west configured with
endpointIPType PodIP through antrea-mc-controller-config before its member starts; on
sandbox clusters, then on the real ones (tests/e2e/conftest.py). Tests work in Namespace
`SHOP`, made in every cluster of the set.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kube.errors import NotFound
from kube.resources import CONFIG_MAPS, ENDPOINTS, EVENTS, SECRETS, SERVICES
from mcapi import names
from mcapi.resources import CLUSTER_CLAIMS_V1ALPHA1, CLUSTER_SETS_V1ALPHA1
from mchub_cli.localset import SERVICE_CIDRS, LocalClusterSet
from tests.e2e.conftest import make_namespace, new_clusterset
from tests.e2e.mcs import eventually, export, service, service_import

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

EAST, WEST = "podip-east", "podip-west"
SHOP = f"shop-{secrets.token_hex(2)}"
PODIP_CONFIG = """apiVersion: multicluster.crd.antrea.io/v1alpha1
kind: MultiClusterConfig
endpointIPType: PodIP
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def podip_clusterset(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalClusterSet]:
    local = new_clusterset(cluster_kind, request, tmp_path_factory.mktemp("podip"), cluster_names=(EAST, WEST))
    try:
        await local.start(join=False)
        config = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": names.MC_CONTROLLER_CONFIGMAP},
            "data": {names.MC_CONTROLLER_CONFIG_KEY: PODIP_CONFIG},
        }
        await local.clusters[WEST].client.create(CONFIG_MAPS, config, namespace=local.member_namespace)
        for name in (EAST, WEST):
            await local.join(name)
        await make_namespace(local, SHOP)
        yield local
    finally:
        await local.stop()


async def test_with_endpoint_ip_type_pod_ip_the_importer_gets_the_pod_ips(podip_clusterset: LocalClusterSet) -> None:
    east, west = podip_clusterset.clusters[EAST].client, podip_clusterset.clusters[WEST].client
    await export(west, SHOP, service("cart"), pod_ips=("10.20.1.4", "10.20.2.7"))

    async def pod_ips() -> list[str] | None:
        try:
            eps = await east.get(ENDPOINTS, "antrea-mc-cart", SHOP)
        except NotFound:
            return None
        ips = sorted(a["ip"] for s in eps.get("subsets") or [] for a in s.get("addresses") or [])
        return ips or None

    assert await eventually(pod_ips, what="east's antrea-mc-cart Endpoints") == ["10.20.1.4", "10.20.2.7"]


async def test_a_users_same_named_service_is_left_alone_with_a_warning(podip_clusterset: LocalClusterSet) -> None:
    east, west = podip_clusterset.clusters[EAST].client, podip_clusterset.clusters[WEST].client
    mine = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "antrea-mc-search"},
        "spec": {"ports": [{"name": "http", "port": 9200, "protocol": "TCP"}]},
    }
    created = await east.create(SERVICES, mine, namespace=SHOP)
    await export(west, SHOP, service("search"))

    async def warned() -> list[dict[str, Any]] | None:
        listed = await east.list(EVENTS, namespace=SHOP)
        found = [
            e
            for e in listed.items
            if e.get("type") == "Warning" and e.get("involvedObject", {}).get("name") == "antrea-mc-search"
        ]
        return found or None

    await eventually(warned, what="a Warning Event on the user's Service")
    after = await east.get(SERVICES, "antrea-mc-search", SHOP)
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert names.ANNOTATION_IMPORTED_SERVICE not in (after["metadata"].get("annotations") or {})


async def test_a_cluster_joined_the_legacy_v1alpha1_way_imports_too(podip_clusterset: LocalClusterSet) -> None:
    """ClusterClaims and a ClusterSet v1alpha1, as installation-legacy-v1alpha1.md writes them
    (in the member Namespace of the set). A real apiserver stores them as v1alpha2: the CRDs
    must keep the claims' `name`, or the member finds no claim naming its cluster."""
    hub = podip_clusterset.hub
    assert hub is not None and hub.ca_cert is not None
    cluster = await podip_clusterset.add_cluster("legacy-north", SERVICE_CIDRS[2])
    client, member_ns = cluster.client, podip_clusterset.member_namespace
    token = hub.tokens.create("member-legacy-north", cluster_id="legacy-north")
    await client.create(
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "leader-token"},
            "data": {
                "token": base64.b64encode(token.encode()).decode(),
                "ca.crt": base64.b64encode(hub.ca_cert.read_bytes()).decode(),
            },
        },
        namespace=member_ns,
    )
    for object_name, claim, value in (
        ("legacy-north-membercluster-id", "id.k8s.io", "legacy-north"),
        ("clusterset-id", "clusterSet.k8s.io", podip_clusterset.clusterset_id),
    ):
        await client.create(
            CLUSTER_CLAIMS_V1ALPHA1,
            {"metadata": {"name": object_name}, "name": claim, "value": value},
            namespace=member_ns,
        )
    await client.create(
        CLUSTER_SETS_V1ALPHA1,
        {
            "metadata": {"name": podip_clusterset.clusterset_id},
            "spec": {
                "leaders": [
                    {
                        "clusterID": podip_clusterset.leader_cluster_id,
                        "secret": "leader-token",
                        "server": f"https://{hub.grpc_target}",
                    }
                ],
                "members": [{"clusterID": "legacy-north"}],
                "namespace": names.DEFAULT_LEADER_NAMESPACE,
            },
        },
        namespace=member_ns,
    )
    await make_namespace(podip_clusterset, SHOP)
    await podip_clusterset.start_member("legacy-north")
    await export(podip_clusterset.clusters[WEST].client, SHOP, service("legacy-visible"))
    await eventually(lambda: service_import(client, SHOP, "legacy-visible"), what="import in the legacy member")
    assert "legacy-north" in hub.engine.index.members

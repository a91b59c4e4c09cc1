"""Service CIDR discovery and the CIDRConflict condition on ClusterInfoImports (sandbox)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kube.client import KubeClient
from kube.conditions import find_condition
from kube.resources import EVENTS, SERVICES
from mcapi.config import MultiClusterConfig
from mcapi.resources import CLUSTER_INFO_IMPORTS
from member.gateway import discover_service_cidr
from member.gateway.service_cidr import from_service_cidr_api
from member.imports import set_cluster_info_import_condition
from sandbox.server import SandboxServer
from tests.kubeenv.cluster import sandbox_cluster
from tests.member_gateway.conftest import NAMESPACE, Gateways
from tests.member_gateway.kubeobjects import named, until

Cluster = tuple[SandboxServer, KubeClient]


async def test_the_service_cidr_is_discovered_from_the_invalid_cluster_ip_error(tmp_path: Path) -> None:
    async with sandbox_cluster(tmp_path / "odd", "odd", service_cidr="10.200.0.0/16") as (_, client):
        assert await from_service_cidr_api(client) is None  # the sandbox serves no ServiceCIDR API
        assert await discover_service_cidr(client, NAMESPACE) == "10.200.0.0/16"
        names = [s["metadata"]["name"] for s in (await client.list(SERVICES, NAMESPACE)).items]
        assert names == []


def cluster_info_import(cluster_id: str, service_cidr: str, pod_cidrs: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{cluster_id}-clusterinfo", "namespace": NAMESPACE},
        "spec": {
            "clusterID": cluster_id,
            "serviceCIDR": service_cidr,
            "gatewayInfos": [{"gatewayIP": "172.16.0.1"}],
            "podCIDRs": pod_cidrs,
        },
    }


def conflict(name: str, status: str) -> Any:
    def probe(objs: list[dict[str, Any]]) -> dict[str, Any] | None:
        obj = named(name)(objs)
        found = find_condition(((obj or {}).get("status") or {}).get("conditions"), "CIDRConflict")
        return obj if found is not None and found["status"] == status else None

    return probe


async def test_an_import_overlapping_our_service_cidr_gets_a_conflict_condition_and_keeps_ready(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    created = await client.create(CLUSTER_INFO_IMPORTS, cluster_info_import("west", "10.100.0.0/16", ["10.2.0.0/16"]))
    await set_cluster_info_import_condition(client, created, "Ready", "True", reason="Imported")
    await gateways.start(MultiClusterConfig(pod_cidrs=["10.1.0.0/16"]))

    obj = await until(client, CLUSTER_INFO_IMPORTS, conflict("west-clusterinfo", "True"), namespace=NAMESPACE)
    conditions = obj["status"]["conditions"]
    overlap = find_condition(conditions, "CIDRConflict")
    assert overlap is not None and overlap["reason"] == "ServiceCIDROverlap"
    assert "10.100.0.0/16" in overlap["message"] and "10.96.0.0/12" in overlap["message"]
    ready = find_condition(conditions, "Ready")
    assert ready is not None and ready["reason"] == "Imported"
    assert obj["spec"]["serviceCIDR"] == "10.100.0.0/16"
    events = (await client.list(EVENTS, NAMESPACE)).items
    (event,) = [e for e in events if e.get("reason") == "CIDRConflict"]
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "west-clusterinfo"
    assert "The ranges of cluster west overlap this cluster's (east)" in event["message"]
    assert "--global-cidr" in event["message"]

    fixed = {**obj, "spec": {**obj["spec"], "serviceCIDR": "10.150.0.0/16"}}
    await client.replace(CLUSTER_INFO_IMPORTS, fixed)
    obj = await until(client, CLUSTER_INFO_IMPORTS, conflict("west-clusterinfo", "False"), namespace=NAMESPACE)
    assert find_condition(obj["status"]["conditions"], "CIDRConflict")["reason"] == "NoOverlap"  # type: ignore[index]


async def test_two_imports_with_overlapping_pod_cidrs_both_get_the_condition(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await gateways.start()
    await client.create(CLUSTER_INFO_IMPORTS, cluster_info_import("west", "10.130.0.0/16", ["10.5.0.0/16"]))
    await client.create(CLUSTER_INFO_IMPORTS, cluster_info_import("north", "10.140.0.0/16", ["10.5.1.0/24"]))
    for name in ("west-clusterinfo", "north-clusterinfo"):
        obj = await until(client, CLUSTER_INFO_IMPORTS, conflict(name, "True"), namespace=NAMESPACE, what=name)
        condition = find_condition(obj["status"]["conditions"], "CIDRConflict")
        assert condition is not None and condition["reason"] == "PodCIDROverlap"
        assert "cluster north keeps the route" in condition["message"]

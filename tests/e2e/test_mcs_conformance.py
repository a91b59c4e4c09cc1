"""The Required cases of the mcs-api conformance suite, at the API level, on three clusters
joined to one hub (north, east, west): sandbox clusters with the hub's SQLite store, then
real kube-apiservers with the hub's kube store on the real leader (tests/e2e/conftest.py).
Each wait keeps to the suite's 20 s budget; the second exporter follows the first after 1.1 s."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kube.client import KubeClient
from kube.resources import SERVICES
from mchub_cli.localset import LocalClusterSet
from tests.e2e.mcs import (
    consistently,
    eventually,
    export,
    export_condition,
    import_ports,
    imported_service,
    service,
    service_import,
    unexport,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

NORTH, EAST, WEST = "test-cluster-north", "test-cluster-east", "test-cluster-west"
SECOND_EXPORTER_DELAY = 1.1


def clients(clusterset: LocalClusterSet) -> list[KubeClient]:
    return [c.client for c in clusterset.clusters.values()]


async def imported_everywhere(clusterset: LocalClusterSet, namespace: str, name: str) -> list[dict[str, Any]]:
    found = []
    for client in clients(clusterset):
        found.append(
            await eventually(lambda c=client: service_import(c, namespace, name), what=f"ServiceImport {name}")
        )
    return found


async def gone_everywhere(clusterset: LocalClusterSet, namespace: str, name: str) -> None:
    for client in clients(clusterset):

        async def absent(c=client) -> bool:
            return (
                await service_import(c, namespace, name) is None and await imported_service(c, namespace, name) is None
            )

        await eventually(absent, what=f"ServiceImport {name} deleted")


async def conflict_on(clusterset: LocalClusterSet, cluster: str, namespace: str, name: str) -> dict[str, Any]:
    client = clusterset.clusters[cluster].client

    async def conflicted() -> dict[str, Any] | None:
        condition = await export_condition(client, namespace, name, "Conflict")
        return condition if condition and condition.get("status") == "True" else None

    return await eventually(conflicted, what=f"Conflict=True on {cluster}'s ServiceExport")


async def test_an_import_lives_while_any_cluster_exports_it(clusterset: LocalClusterSet, namespace: str) -> None:
    east, west = clusterset.clusters[EAST].client, clusterset.clusters[WEST].client
    await export(east, namespace, service("shared"))
    await asyncio.sleep(SECOND_EXPORTER_DELAY)
    await export(west, namespace, service("shared"))
    await imported_everywhere(clusterset, namespace, "shared")

    await unexport(east, namespace, "shared")
    await consistently(
        lambda: _present(clients(clusterset), namespace, "shared"), duration=2, what="import kept by west's export"
    )
    await unexport(west, namespace, "shared")
    await gone_everywhere(clusterset, namespace, "shared")


async def _present(all_clients: list[KubeClient], namespace: str, name: str) -> bool:
    return all([await service_import(c, namespace, name) is not None for c in all_clients])


async def test_a_clustersetip_import_has_one_ip_in_every_cluster_and_goes_on_unexport(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    west = clusterset.clusters[WEST].client
    await export(west, namespace, service("web"))
    for cluster in clusterset.clusters.values():

        async def ready(c=cluster.client):
            imp = await service_import(c, namespace, "web")
            return imp if imp and imp["spec"].get("ips") else None

        imp = await eventually(ready, what=f"ServiceImport web with an IP in {cluster.name}")
        assert imp["spec"]["type"] == "ClusterSetIP"
        assert len(imp["spec"]["ips"]) == 1
        local = await imported_service(cluster.client, namespace, "web")
        assert local is not None and imp["spec"]["ips"] == [local["spec"]["clusterIP"]]
    await unexport(west, namespace, "web")
    await gone_everywhere(clusterset, namespace, "web")


async def test_session_affinity_and_its_config_are_imported(clusterset: LocalClusterSet, namespace: str) -> None:
    await export(
        clusterset.clusters[EAST].client,
        namespace,
        service("sticky", session_affinity="ClientIP", affinity_timeout=300),
    )
    for imp in await imported_everywhere(clusterset, namespace, "sticky"):
        assert imp["spec"]["sessionAffinity"] == "ClientIP"
        assert imp["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"] == 300


async def test_internal_traffic_policy_is_imported(clusterset: LocalClusterSet, namespace: str) -> None:
    await export(clusterset.clusters[EAST].client, namespace, service("local", internal_traffic_policy="Local"))
    for client in clients(clusterset):

        async def has_policy(c=client):
            imp = await service_import(c, namespace, "local")
            return imp if imp and imp["spec"].get("internalTrafficPolicy") == "Local" else None

        await eventually(has_policy, what="internalTrafficPolicy Local imported")


async def test_traffic_distribution_is_imported(clusterset: LocalClusterSet, namespace: str) -> None:
    east = clusterset.clusters[EAST].client
    await export(east, namespace, service("close", traffic_distribution="PreferClose"))
    exported = await east.get(SERVICES, "close", namespace)
    if "trafficDistribution" not in exported["spec"]:
        pytest.skip("this kube-apiserver drops Service spec.trafficDistribution (a Kubernetes 1.30+ field)")
    for client in clients(clusterset):

        async def has_distribution(c=client):
            imp = await service_import(c, namespace, "close")
            return imp if imp and imp["spec"].get("trafficDistribution") == "PreferClose" else None

        await eventually(has_distribution, what="trafficDistribution PreferClose imported")


async def test_one_ip_per_family_in_ip_families_order(clusterset: LocalClusterSet, namespace: str) -> None:
    await export(clusterset.clusters[WEST].client, namespace, service("fam"))
    for client in clients(clusterset):

        async def with_ip(c=client):
            imp = await service_import(c, namespace, "fam")
            return imp if imp and imp["spec"].get("ips") else None

        imp = await eventually(with_ip, what="ServiceImport fam with IPs")
        # The exported Service's families travel to the import; one IP per family, in order.
        assert imp["spec"]["ipFamilies"] == ["IPv4"]
        assert len(imp["spec"]["ips"]) == 1
        assert ":" not in imp["spec"]["ips"][0]


async def test_the_exported_ports_are_imported(clusterset: LocalClusterSet, namespace: str) -> None:
    ports = [("http", 80, "TCP"), ("dns", 53, "UDP")]
    await export(clusterset.clusters[EAST].client, namespace, service("ports", ports))
    for imp in await imported_everywhere(clusterset, namespace, "ports"):
        assert import_ports(imp) == sorted(ports)


async def test_different_ports_are_imported_as_their_union_with_a_conflict_on_both(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    await export(clusterset.clusters[EAST].client, namespace, service("union", [("a", 80, "TCP")]))
    await asyncio.sleep(SECOND_EXPORTER_DELAY)
    await export(clusterset.clusters[WEST].client, namespace, service("union", [("b", 81, "TCP")]))
    for client in clients(clusterset):

        async def both(c=client):
            imp = await service_import(c, namespace, "union")
            return imp if imp and len(imp["spec"].get("ports", [])) == 2 else None

        imp = await eventually(both, what="both ports imported")
        assert import_ports(imp) == [("a", 80, "TCP"), ("b", 81, "TCP")]
    for cluster in (EAST, WEST):
        await conflict_on(clusterset, cluster, namespace, "union")


async def test_a_conflicting_port_is_won_by_the_oldest_export_with_a_conflict_on_both(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    await export(clusterset.clusters[EAST].client, namespace, service("clash", [("http", 80, "TCP")]))
    await imported_everywhere(clusterset, namespace, "clash")
    await asyncio.sleep(SECOND_EXPORTER_DELAY)
    await export(clusterset.clusters[WEST].client, namespace, service("clash", [("http", 8080, "TCP")]))
    for cluster in (EAST, WEST):
        condition = await conflict_on(clusterset, cluster, namespace, "clash")
        assert condition["reason"] == "PortConflict"
    for client in clients(clusterset):
        imp = await service_import(client, namespace, "clash")
        assert imp is not None and import_ports(imp) == [("http", 80, "TCP")]


async def test_a_headless_import_has_no_ips_and_goes_on_unexport(clusterset: LocalClusterSet, namespace: str) -> None:
    west = clusterset.clusters[WEST].client
    await export(west, namespace, service("hl", headless=True))
    for imp in await imported_everywhere(clusterset, namespace, "hl"):
        assert imp["spec"]["type"] == "Headless"

    async def no_ips() -> bool:
        for client in clients(clusterset):
            imp = await service_import(client, namespace, "hl")
            if imp is None or imp["spec"].get("ips"):
                return False
        return True

    await consistently(no_ips, what="a headless import never gets an IP")
    await unexport(west, namespace, "hl")
    await gone_everywhere(clusterset, namespace, "hl")


async def test_an_external_name_service_is_invalid_and_never_imported(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    east = clusterset.clusters[EAST].client
    await export(east, namespace, service("ext", service_type="ExternalName", external_name="example.invalid"))

    async def invalid() -> dict[str, Any] | None:
        condition = await export_condition(east, namespace, "ext", "Valid")
        return condition if condition and condition.get("status") == "False" else None

    condition = await eventually(invalid, what="Valid=False on the ExternalName export")
    assert condition["reason"] == "InvalidServiceType"

    async def nowhere() -> bool:
        return all([await service_import(c, namespace, "ext") is None for c in clients(clusterset)])

    await consistently(nowhere, what="no ServiceImport for an ExternalName Service")


async def test_conflicting_headlessness_imports_a_clustersetip_with_a_conflict_on_both(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    await export(clusterset.clusters[EAST].client, namespace, service("mixed"))
    await imported_everywhere(clusterset, namespace, "mixed")
    await asyncio.sleep(SECOND_EXPORTER_DELAY)
    await export(clusterset.clusters[WEST].client, namespace, service("mixed", headless=True))
    for cluster in (EAST, WEST):
        condition = await conflict_on(clusterset, cluster, namespace, "mixed")
        assert condition["reason"] == "TypeConflict"
    for client in clients(clusterset):
        imp = await service_import(client, namespace, "mixed")
        assert imp is not None and imp["spec"]["type"] == "ClusterSetIP"

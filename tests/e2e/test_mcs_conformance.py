"""The cases of the mcs-api conformance suite, at the API level, on three clusters joined to
one hub (north, east, west): sandbox clusters with the hub's SQLite store, then real
kube-apiservers with the hub's kube store on the real leader (tests/e2e/conftest.py): every
Required case, the Optional ExportedLabels cases, and what the StrictPortConflict and
Connectivity cases need of the imported endpoints (the traffic itself needs Pods and nodes:
`make conformance` runs the suite). Each wait keeps to the suite's 20 s budget; the second
exporter follows the first after 1.1 s. The members export in endpointIPType ClusterIP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kube.client import KubeClient
from kube.resources import ENDPOINTS
from mcapi.resources import SERVICE_EXPORTS
from mchub_cli.localset import LocalClusterSet
from tests.e2e.mcs import (
    consistently,
    eventually,
    export,
    export_condition,
    import_ports,
    imported_service,
    mcs_slices,
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
    """The suite compares the import's trafficDistribution with the Service's as the API server
    returned it. A kube-apiserver before 1.30 drops that field (v1.28 here): both are absent and
    the case passes, comparing nothing with nothing (upstream reports it passed); mchub must then
    write none. A server that keeps the field gets it imported."""
    east = clusterset.clusters[EAST].client
    exported = await export(east, namespace, service("close", traffic_distribution="PreferClose"))
    expected = exported["spec"].get("trafficDistribution")
    for client in clients(clusterset):

        async def as_exported(c=client):
            imp = await service_import(c, namespace, "close")
            return imp if imp and imp["spec"].get("trafficDistribution") == expected else None

        await eventually(as_exported, what=f"trafficDistribution {expected!r} imported")


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


async def test_only_the_exported_labels_and_annotations_go_to_the_service_import_and_follow_the_export(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    """Optional, ExportedLabels: the ServiceExport's exportedLabels/exportedAnnotations, not the
    Service's own; a change of the ServiceExport reaches every import."""
    east = clusterset.clusters[EAST].client
    await export(
        east,
        namespace,
        service("labelled", metadata={"dummy-svc": "dummy"}),
        exported_labels={"dummy-label": "true"},
        exported_annotations={"dummy-annotation": "true"},
    )
    for client in clients(clusterset):
        imp = await eventually(
            lambda c=client: _with_label(c, namespace, "labelled", "dummy-label", "true"),
            what="exported label on the ServiceImport",
        )
        labels, annotations = imp["metadata"].get("labels") or {}, imp["metadata"].get("annotations") or {}
        assert annotations["dummy-annotation"] == "true"
        assert "dummy-svc" not in labels and "dummy-svc" not in annotations

    await east.patch(
        SERVICE_EXPORTS, "labelled", {"spec": {"exportedLabels": {"dummy-label": None, "tier": "web"}}}, namespace
    )
    for client in clients(clusterset):
        imp = await eventually(
            lambda c=client: _with_label(c, namespace, "labelled", "tier", "web"), what="changed exported labels"
        )
        assert "dummy-label" not in imp["metadata"]["labels"]
        assert imp["metadata"]["annotations"]["dummy-annotation"] == "true"


async def _with_label(client: KubeClient, namespace: str, name: str, key: str, value: str) -> dict[str, Any] | None:
    imp = await service_import(client, namespace, name)
    return imp if imp and (imp["metadata"].get("labels") or {}).get(key) == value else None


async def test_conflicting_exported_labels_and_annotations_are_won_by_the_oldest_with_a_conflict_on_both(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    """Optional, ExportedLabels: any difference is a conflict on every exporter; the oldest's maps win."""
    await export(
        clusterset.clusters[EAST].client,
        namespace,
        service("tagged"),
        exported_labels={"dummy-label": "true"},
        exported_annotations={"dummy-annotation": "true"},
    )
    await imported_everywhere(clusterset, namespace, "tagged")
    await asyncio.sleep(SECOND_EXPORTER_DELAY)
    await export(
        clusterset.clusters[WEST].client,
        namespace,
        service("tagged"),
        exported_labels={"dummy-label2": "true"},
        exported_annotations={"dummy-annotation2": "true"},
    )
    for cluster in (EAST, WEST):
        condition = await conflict_on(clusterset, cluster, namespace, "tagged")
        assert condition["reason"] == "LabelsConflict"
        assert "exported annotations" in condition["message"]
    for client in clients(clusterset):
        imp = await eventually(lambda c=client: _with_label(c, namespace, "tagged", "dummy-label", "true"))
        labels, annotations = imp["metadata"]["labels"], imp["metadata"]["annotations"]
        assert annotations["dummy-annotation"] == "true"
        assert "dummy-label2" not in labels and "dummy-annotation2" not in annotations


async def test_a_port_that_lost_a_port_conflict_gets_no_endpoints_under_the_imports_port(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    """Optional, StrictPortConflict: east's "tcp" is 42, west's 4242. Traffic to the import's
    "tcp" (42) must reach east only; west's own "tcp2" reaches west only. So in every cluster
    west's endpoints carry "tcp2" and never "tcp"."""
    east_service = await export(
        clusterset.clusters[EAST].client, namespace, service("strict", [("tcp", 42, "TCP")]), pod_ips=("10.0.1.1",)
    )
    await imported_everywhere(clusterset, namespace, "strict")
    await asyncio.sleep(SECOND_EXPORTER_DELAY)
    west_service = await export(
        clusterset.clusters[WEST].client,
        namespace,
        service("strict", [("tcp", 4242, "TCP"), ("tcp2", 4243, "TCP")]),
        pod_ips=("10.0.2.1",),
    )
    for cluster in (EAST, WEST):
        condition = await conflict_on(clusterset, cluster, namespace, "strict")
        assert condition["reason"] == "PortConflict"
    for cluster in clusterset.clusters.values():

        async def both(c=cluster.client) -> dict[str, Any] | None:
            slices = await mcs_slices(c, namespace, "strict")
            return slices if set(slices) == {EAST, WEST} else None

        slices = await eventually(both, what=f"both exporters' endpoints in {cluster.name}")
        # Its own share is its Pods; another cluster's is that cluster's Service ClusterIP.
        east_address = "10.0.1.1" if cluster.name == EAST else east_service["spec"]["clusterIP"]
        west_address = "10.0.2.1" if cluster.name == WEST else west_service["spec"]["clusterIP"]
        assert slices == {EAST: [("tcp", 42, [east_address])], WEST: [("tcp2", 4243, [west_address])]}


async def test_the_exporting_cluster_imports_its_own_pods_and_the_others_its_cluster_ip(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    """Connectivity from the exporting cluster (ClusterIP mode): kube-proxy translates the
    ClusterSet IP once, so the exporter's own endpoints must be its Pods (with their target
    port), not its Service ClusterIP, which only the Gateways of other clusters translate
    again. Its Pods changing changes its own import, though its export does not change."""
    west = clusterset.clusters[WEST].client
    exported = await export(west, namespace, service("own"), pod_ips=("10.0.3.1",))
    cluster_ip = exported["spec"]["clusterIP"]

    async def shares(client: KubeClient, expected: dict[str, Any]) -> bool:
        return await mcs_slices(client, namespace, "own") == expected

    for cluster in clusterset.clusters.values():
        address = "10.0.3.1" if cluster.name == WEST else cluster_ip
        await eventually(
            lambda c=cluster.client, a=address: shares(c, {WEST: [("http", 80, [a])]}),
            what=f"west's endpoints in {cluster.name}",
        )

    pods = await west.get(ENDPOINTS, "own", namespace)
    pods["subsets"] = [
        {"addresses": [{"ip": "10.0.3.1"}, {"ip": "10.0.3.2"}], "ports": [{"name": "http", "port": 8080}]}
    ]
    await west.replace(ENDPOINTS, pods)
    await eventually(
        lambda: shares(west, {WEST: [("http", 8080, ["10.0.3.1", "10.0.3.2"])]}), what="west's new Pods in west"
    )
    for name in (NORTH, EAST):
        assert await shares(clusterset.clusters[name].client, {WEST: [("http", 80, [cluster_ip])]})

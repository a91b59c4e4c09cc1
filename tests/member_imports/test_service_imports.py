"""ServiceImport and Endpoints imports become antrea-mc Services, Endpoints, EndpointSlices
and MCS ServiceImports, shaped as Antrea and the MCS API shape them."""

from __future__ import annotations

from kube.client import KubeClient
from kube.resources import ENDPOINT_SLICES, ENDPOINTS, NAMESPACES, SERVICES
from mcapi import names
from mcapi.resources import SERVICE_IMPORTS
from tests.member_imports.conftest import Appliers, Reports
from tests.member_imports.messages import endpoints_import, service_import

IMPORTED = names.ANNOTATION_IMPORTED_SERVICE


async def test_a_service_import_creates_a_selectorless_antrea_mc_service_and_an_mcs_service_import(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    applier = await appliers.new()
    upsert = service_import(
        "default",
        "nginx",
        [("http", 80, "TCP"), ("dns", 53, "UDP")],
        clusters=["east", "north"],
        affinity="ClientIP",
        affinity_timeout=300,
    )
    await applier.handle(upsert)

    service = await member.get(SERVICES, "antrea-mc-nginx", "default")
    assert service["metadata"]["annotations"][IMPORTED] == "true"
    spec = service["spec"]
    assert spec["type"] == "ClusterIP" and "selector" not in spec
    assert [(p["name"], p["port"], p["protocol"]) for p in spec["ports"]] == [("http", 80, "TCP"), ("dns", 53, "UDP")]
    assert spec["sessionAffinity"] == "ClientIP"
    assert spec["clusterIP"] not in ("", "None")

    imported = await member.get(SERVICE_IMPORTS, "nginx", "default")
    assert imported["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"  # Antrea's version, served here
    assert imported["metadata"]["annotations"][IMPORTED] == "true"
    assert imported["metadata"]["annotations"]["multicluster.antrea.io/local-cluster-id"] == "west"
    assert imported["spec"]["type"] == "ClusterSetIP"
    assert imported["spec"]["ips"] == [spec["clusterIP"]]
    assert [(p["name"], p["port"], p["protocol"]) for p in imported["spec"]["ports"]] == [
        ("http", 80, "TCP"),
        ("dns", 53, "UDP"),
    ]
    assert imported["spec"]["sessionAffinity"] == "ClientIP"
    assert imported["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 300}}
    assert imported["status"]["clusters"] == [{"cluster": "east"}, {"cluster": "north"}]
    assert reports.last(upsert.import_name) == (True, "Succeeded", "")


async def test_a_headless_import_gets_a_headless_service_and_a_service_import_without_ips(
    member: KubeClient, appliers: Appliers
) -> None:
    applier = await appliers.new()
    await applier.handle(service_import("default", "db", import_type="Headless"))

    service = await member.get(SERVICES, "antrea-mc-db", "default")
    assert service["spec"]["clusterIP"] == "None"
    imported = await member.get(SERVICE_IMPORTS, "db", "default")
    assert imported["spec"]["type"] == "Headless"
    assert "ips" not in imported["spec"]


async def test_an_import_that_turns_headless_replaces_its_service_and_drops_the_ips(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    applier = await appliers.new()
    await applier.handle(service_import("default", "db"))
    await applier.handle(upsert := service_import("default", "db", import_type="Headless"))

    assert (await member.get(SERVICES, "antrea-mc-db", "default"))["spec"]["clusterIP"] == "None"
    imported = await member.get(SERVICE_IMPORTS, "db", "default")
    assert imported["spec"]["type"] == "Headless" and "ips" not in imported["spec"]
    assert reports.last(upsert.import_name) == (True, "Succeeded", "")


async def test_an_endpoints_import_creates_endpoints_without_cluster_ids_and_one_slice_per_source_cluster(
    member: KubeClient, appliers: Appliers
) -> None:
    applier = await appliers.new()
    await applier.handle(
        endpoints_import("default", "nginx", {"east": ["10.10.0.5", "10.10.0.6"], "north": ["10.20.0.7"]})
    )

    endpoints = await member.get(ENDPOINTS, "antrea-mc-nginx", "default")
    assert endpoints["metadata"]["annotations"][IMPORTED] == "true"
    assert endpoints["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"] == "true"
    assert endpoints["subsets"] == [
        {
            "addresses": [{"ip": "10.10.0.5"}, {"ip": "10.10.0.6"}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        },
        {"addresses": [{"ip": "10.20.0.7"}], "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]},
    ]

    slices = (
        await member.list(ENDPOINT_SLICES, "default", label_selector=f"{names.LABEL_MCS_SERVICE_NAME}=nginx")
    ).items
    by_cluster = {s["metadata"]["labels"][names.LABEL_MCS_SOURCE_CLUSTER]: s for s in slices}
    assert set(by_cluster) == {"east", "north"}
    east = by_cluster["east"]
    assert east["metadata"]["name"] == "antrea-mc-nginx.east"
    assert east["metadata"]["labels"]["kubernetes.io/service-name"] == "antrea-mc-nginx"
    assert east["metadata"]["annotations"][IMPORTED] == "true"
    assert east["addressType"] == "IPv4"
    assert [e["addresses"] for e in east["endpoints"]] == [["10.10.0.5"], ["10.10.0.6"]]
    assert east["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]


async def test_a_source_cluster_that_leaves_takes_its_endpoint_slice_with_it(
    member: KubeClient, appliers: Appliers
) -> None:
    applier = await appliers.new()
    await applier.handle(endpoints_import("default", "nginx", {"east": ["10.10.0.5"], "north": ["10.20.0.7"]}))
    await applier.handle(endpoints_import("default", "nginx", {"east": ["10.10.0.5"]}))

    slices = (await member.list(ENDPOINT_SLICES, "default")).items
    assert [s["metadata"]["name"] for s in slices] == ["antrea-mc-nginx.east"]
    endpoints = await member.get(ENDPOINTS, "antrea-mc-nginx", "default")
    assert [a["ip"] for s in endpoints["subsets"] for a in s["addresses"]] == ["10.10.0.5"]


async def test_an_import_waits_for_its_namespace_and_is_applied_when_the_namespace_is_created(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    applier = await appliers.new()
    upsert = service_import("later", "web")
    await applier.handle(upsert)
    failed = reports.last(upsert.import_name)
    assert failed is not None and failed[:2] == (False, "NamespaceNotFound")
    assert "Namespace later does not exist" in failed[2]

    await member.create(NAMESPACES, {"metadata": {"name": "later"}})
    await eventually_applied(reports, upsert.import_name)
    assert (await member.get(SERVICE_IMPORTS, "web", "later"))["spec"]["type"] == "ClusterSetIP"


async def eventually_applied(reports: Reports, import_name: str) -> None:
    from tests.member_imports.conftest import eventually  # noqa: PLC0415 - keeps the helper next to its use

    async def succeeded() -> bool:
        last = reports.last(import_name)
        return last is not None and last[0]

    await eventually(succeeded)


async def test_an_endpoints_import_without_addresses_writes_nothing_until_it_has_some(
    member: KubeClient, appliers: Appliers
) -> None:
    """The hub holds a cluster's endpoints back until its Service export is merged: the first
    version of an Endpoints import may be empty. Nothing is published for it (kube-proxy sees no
    endpoints either way), so the object is written once, when there is something in it."""
    applier = await appliers.new(discovery_ttl=60.0)
    before = member.metrics.writes()
    await applier.handle(endpoints_import("default", "nginx", {}))
    assert member.metrics.writes() == before
    assert "antrea-mc-nginx" not in {e["metadata"]["name"] for e in (await member.list(ENDPOINTS, "default")).items}

    await applier.handle(endpoints_import("default", "nginx", {"east": ["10.10.0.5"]}))
    assert member.metrics.writes() == before + 2  # the Endpoints and one EndpointSlice, each created once

    # Endpoints that lose every address are emptied, not left behind.
    await applier.handle(endpoints_import("default", "nginx", {}))
    assert "subsets" not in await member.get(ENDPOINTS, "antrea-mc-nginx", "default")
    assert (await member.list(ENDPOINT_SLICES, "default")).items == []

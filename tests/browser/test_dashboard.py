"""The dashboard in headless Chromium: sign-in, live updates, verdicts, topology."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from hub.app import HubApp
from mcapi import names
from mcapi.cluster_selection import selectors_from_json
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.browser import own_network
from tests.browser.conftest import ARTIFACTS, NO_CHROMIUM
from tests.integration.hub_fixtures import rest_session
from tests.integration.hubclient import MemberFactory, endpoints_export, service_export
from tests.needs import needs

pytestmark = [pytest.mark.browser, needs(NO_CHROMIUM)]

ACNP: dict[str, Any] = {
    "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
    "kind": "ResourceExport",
    "metadata": {"name": "strict-namespace-isolation", "namespace": "antrea-multicluster"},
    "spec": {
        "kind": "AntreaClusterNetworkPolicy",
        "name": "strict-namespace-isolation",
        "clusterNetworkPolicy": {
            "priority": 1,
            "tier": "securityops",
            "appliedTo": [{"namespaceSelector": {}}],
            "ingress": [{"action": "Pass", "from": [{"namespaces": {"match": "Self"}}]}],
        },
    },
}


def cluster_info_export(cluster: str, service_cidr: str, gateway_ip: str, pod_cidr: str) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.cluster_info_export_name(cluster),
        cluster_id=cluster,
        cluster_info=pb.ClusterInfo(
            cluster_id=cluster,
            service_cidr=service_cidr,
            gateway_infos=[pb.GatewayInfo(gateway_ip=gateway_ip)],
            pod_cidrs=[pod_cidr],
        ),
    )


async def sign_in(page: Page, hub: HubApp, token: str) -> None:
    await page.goto(hub.rest_url + "/")
    await expect(page.get_by_test_id("token-panel")).to_be_visible()
    await page.get_by_test_id("token-input").fill(token)
    await page.get_by_test_id("token-submit").click()


async def test_the_dashboard_shows_the_connected_members_once_given_the_token(
    hub: HubApp, connect: MemberFactory, page: Page, page_problems: list[str]
) -> None:
    await connect("east")
    await connect("west")

    await sign_in(page, hub, hub.admin_token)

    assert page.url.startswith("https://")  # the token travels over TLS
    await expect(page.get_by_test_id("live-state")).to_have_text("Live")
    for cluster in ("east", "west"):
        await expect(page.get_by_test_id(f"member-{cluster}-state")).to_have_text("Connected")
        await expect(page.get_by_test_id(f"topology-node-{cluster}")).to_have_attribute("data-state", "ok")
    await expect(page.get_by_test_id("stat-ready")).to_have_text("2/2")
    await expect(page.get_by_test_id("clusterset-ready")).to_have_text("Ready")
    assert page_problems == []


async def test_a_service_exported_after_the_page_loaded_appears_without_a_reload(
    hub: HubApp, connect: MemberFactory, page: Page, page_problems: list[str]
) -> None:
    east = await connect("east")
    await sign_in(page, hub, hub.admin_token)
    await expect(page.get_by_test_id("live-state")).to_have_text("Live")
    await page.evaluate("window.loadedOnce = true")

    await east.export(
        service_export("east", "default", "nginx", [("http", 80)]),
        endpoints_export("east", "default", "nginx", ["10.10.0.5", "10.10.0.6"]),
    )

    await expect(page.get_by_test_id("export-east-default-nginx-service")).to_be_visible()
    await expect(page.get_by_test_id("verdict-east-default-nginx-service")).to_have_text("Accepted")
    imported = page.get_by_test_id("import-default-nginx-service")
    await expect(imported).to_contain_text("http 80/TCP")
    await expect(imported).to_contain_text("east")
    assert await page.evaluate("window.loadedOnce") is True  # the same document: no reload
    assert page_problems == []


async def test_a_conflicting_export_shows_its_conflict_verdict(
    hub: HubApp, connect: MemberFactory, page: Page, page_problems: list[str]
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "nginx", [("http", 80)]))
    await sign_in(page, hub, hub.admin_token)
    await expect(page.get_by_test_id("verdict-east-default-nginx-service")).to_have_text("Accepted")

    await west.export(service_export("west", "default", "nginx", [("http", 8080)]))

    conflicting = page.get_by_test_id("export-west-default-nginx-service")
    await expect(page.get_by_test_id("verdict-west-default-nginx-service")).to_have_text("Conflict")
    await expect(conflicting).to_contain_text("PortConflict")
    await expect(page.get_by_test_id("stat-conflicts")).not_to_have_text("0")
    assert page_problems == []


async def test_a_wrong_token_shows_a_clear_error_and_no_data(hub: HubApp, page: Page) -> None:
    await sign_in(page, hub, "not-the-token")

    error = page.get_by_test_id("token-error")
    await expect(error).to_be_visible()
    await expect(error).to_contain_text("refused this token")
    await expect(page.get_by_test_id("dashboard")).to_be_hidden()
    assert await page.evaluate("sessionStorage.getItem('mchub.token')") is None


async def test_the_whole_clusterset_renders_gateways_policies_and_topology(
    hub: HubApp, connect: MemberFactory, page: Page, page_problems: list[str]
) -> None:
    east, west, south = await connect("east"), await connect("west"), await connect("south")
    await east.export(
        cluster_info_export("east", "10.96.0.0/16", "192.0.2.10", "10.10.0.0/16"),
        service_export("east", "default", "nginx", [("http", 80)]),
        endpoints_export("east", "default", "nginx", ["10.10.0.5", "10.10.0.6"]),
        service_export("east", "shop", "cart", [("grpc", 9090)], cluster_ip="10.96.0.20"),
    )
    await west.export(
        cluster_info_export("west", "10.97.0.0/16", "192.0.2.20", "10.20.0.0/16"),
        service_export("west", "default", "nginx", [("http", 80)], cluster_ip="10.97.0.10"),
        endpoints_export("west", "default", "nginx", ["10.20.0.7"]),
        service_export("west", "shop", "cart", [("grpc", 9091)], cluster_ip="10.97.0.20"),
    )
    await south.export(cluster_info_export("south", "10.98.0.0/16", "192.0.2.30", "10.30.0.0/16"))
    reports = [("west", "east", True), ("east", "west", True), ("south", "east", False), ("east", "south", True)]
    members = {"east": east, "west": west, "south": south}
    for reporter, imported, ok in reports:
        await members[reporter].stub.ReportImportStatus(
            pb.ReportImportStatusRequest(
                cluster_id=reporter,
                import_name=names.cluster_info_import_name(imported),
                succeeded=ok,
                reason="" if ok else "TunnelDown",
                message="" if ok else "no reply from gateway 192.0.2.10",
            )
        )
    async with rest_session(hub) as http:
        headers = {"Authorization": f"Bearer {hub.admin_token}"}
        async with http.post("/api/v1/resourceexports", json=ACNP, headers=headers) as response:
            assert response.status == 201, await response.text()

    await sign_in(page, hub, hub.admin_token)

    await expect(page.get_by_test_id("gateway-east")).to_contain_text("192.0.2.10")
    await expect(page.get_by_test_id("gateway-west")).to_contain_text("10.97.0.0/16")
    await expect(page.get_by_test_id("topology-link-east-west")).to_have_attribute("data-health", "healthy")
    await expect(page.get_by_test_id("topology-link-east-south")).to_have_attribute("data-health", "unhealthy")
    await expect(page.get_by_test_id("topology-link-south-west")).to_have_attribute("data-health", "unknown")
    await expect(page.get_by_test_id("verdict-west-shop-cart-service")).to_have_text("Conflict")
    policy = page.get_by_test_id("policy-strict-namespace-isolation-antreaclusternetworkpolicy")
    await expect(policy).to_contain_text("securityops")
    await expect(page.get_by_test_id("import-default-nginx-service")).to_contain_text("3")  # endpoints

    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    assert page_problems == []


async def test_members_properties_and_each_importers_cluster_selection_are_shown(
    hub: HubApp, connect: MemberFactory, page: Page, page_problems: list[str]
) -> None:
    region = "region.topology.k8s.io"
    members = {}
    for cluster, value in (("east", "us"), ("west", "eu"), ("north", "us")):
        members[cluster] = member = await connect(cluster, announce=False)
        await member.announce(uid=f"uid-{cluster}", properties={region: value})
    for cluster in ("east", "west"):
        export = service_export(cluster, "shop", "api")
        export.service.cluster_selectors.extend(
            selectors_from_json([{"propertySelector": {"matchProperties": {region: "@SameAsImporter@"}}}])
        )
        await members[cluster].export(export)

    await sign_in(page, hub, hub.admin_token)

    await expect(page.get_by_test_id("member-west-properties")).to_have_text(f"{region}=eu")
    await expect(page.get_by_test_id("import-shop-api-service-selection-east-north")).to_have_text("east, north → east")
    await expect(page.get_by_test_id("import-shop-api-service-selection-west")).to_have_text("west → west")
    assert page_problems == []


@pytest.mark.skipif(not own_network.available(), reason="Chromium's own network namespace needs root")
async def test_as_root_chromium_runs_in_a_network_namespace_of_its_own(hub: HubApp, page: Page) -> None:
    await sign_in(page, hub, hub.admin_token)  # the relay carries the page
    await expect(page.get_by_test_id("live-state")).to_have_text("Live")
    ours = os.readlink("/proc/self/ns/net")
    # Chromium's processes are this test process's descendants (through Playwright's driver); the
    # namespace of one that has just exited cannot be read.
    found = {pid: _netns(pid) for pid in _descendants(os.getpid()) if _read(pid, "comm").startswith("chrom")}
    running = {pid: netns for pid, netns in found.items() if netns is not None}
    assert running, "no Chromium process found"
    assert ours not in running.values(), f"Chromium processes share the host's network: {running}"


def _descendants(root: int) -> set[str]:
    parent = {pid: _read(pid, "stat").rpartition(")")[2].split()[1:2] for pid in os.listdir("/proc") if pid.isdigit()}
    found: set[str] = set()
    frontier = {str(root)}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid and ppid[0] in frontier} - found
        found |= frontier
    return found


def _read(pid: str, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_text()
    except OSError:
        return ""


def _netns(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None

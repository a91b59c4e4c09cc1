"""The REST facade: health, metrics, CRD-shaped views, admin ACNP exports, liveness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from hub.app import HubApp
from mcapi import names
from tests.integration.hub_fixtures import hub_config, rest_session
from tests.integration.hubclient import MemberFactory, service_export
from tests.integration.rest_fixtures import (  # noqa: F401 (the fixtures clock, hub, http)
    FakeClock,
    bearer,
    clock_fixture,
    clocked_hub_fixture,
    http_fixture,
)


async def get_json(http: aiohttp.ClientSession, path: str, token: str, **params: str) -> Any:
    async with http.get(path, headers=bearer(token), params=params) as response:
        assert response.status == 200, await response.text()
        return await response.json()


ACNP = {
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


async def test_health_needs_no_token_and_everything_else_does(http: aiohttp.ClientSession) -> None:
    for path in ("/healthz", "/readyz"):
        async with http.get(path) as response:
            assert response.status == 200
    for path in ("/metrics", "/api/v1/clusterset", "/api/v1/resourceexports", "/api/v1/openapi.json"):
        async with http.get(path) as response:
            assert response.status == 401, path
            assert (await response.json())["reason"] == "Unauthorized"
        async with http.get(path, headers=bearer("mch_wrong")) as response:
            assert response.status == 401, path


async def test_metrics_count_members_and_exports(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east = await connect("east")
    await east.export(service_export("east", "default", "nginx"))
    async with http.get("/metrics", headers=bearer(hub.admin_token)) as response:
        text = await response.text()
    assert "mchub_members_connected 1.0" in text
    assert 'mchub_exports{kind="service"} 1.0' in text
    assert 'mchub_imports{kind="service_import"} 1.0' in text


async def test_the_clusterset_turns_not_ready_when_a_member_misses_its_announces(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory, clock: FakeClock
) -> None:
    empty = await get_json(http, "/api/v1/clusterset", hub.admin_token)
    assert empty["status"]["conditions"][0]["status"] == "Unknown"
    east, west = await connect("east"), await connect("west")
    ready = await get_json(http, "/api/v1/clusterset", east.token)
    assert (ready["status"]["totalClusters"], ready["status"]["readyClusters"]) == (2, 2)
    assert ready["status"]["conditions"][0]["status"] == "True"

    clock.advance(25)
    await east.announce()
    clock.advance(6)  # west: 31 s without an announce; east: 6 s
    status = (await get_json(http, "/api/v1/clusterset", hub.admin_token))["status"]
    assert (status["totalClusters"], status["readyClusters"]) == (2, 1)
    assert status["conditions"][0]["status"] == "False"
    connected = {s["clusterID"]: s["conditions"][0]["status"] for s in status["clusterStatuses"]}
    assert connected == {"east": "True", "west": "False"}
    members = await get_json(http, "/api/v1/members", hub.admin_token)
    by_name = {m["metadata"]["name"]: m for m in members["items"]}
    assert by_name["member-announce-from-west"]["status"]["connected"] is False
    assert by_name["member-announce-from-east"]["clusterID"] == "east"
    del west


async def test_exports_and_imports_are_shaped_like_the_crds_and_filterable(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "nginx"), service_export("east", "prod", "api"))
    await west.export(service_export("west", "default", "nginx"))

    listing = await get_json(http, "/api/v1/resourceexports", hub.admin_token)
    assert listing["kind"] == "ResourceExportList"
    item = next(i for i in listing["items"] if i["metadata"]["name"] == "east-default-nginx-service")
    assert item["apiVersion"] == "multicluster.crd.antrea.io/v1alpha1"
    assert item["kind"] == "ResourceExport"
    assert item["spec"]["clusterID"] == "east"
    assert item["spec"]["kind"] == "Service"
    assert item["metadata"]["labels"]["sourceClusterID"] == "east"

    only_west = await get_json(http, "/api/v1/resourceexports", hub.admin_token, clusterID="west")
    assert [i["metadata"]["name"] for i in only_west["items"]] == ["west-default-nginx-service"]
    prod = await get_json(http, "/api/v1/resourceexports", hub.admin_token, namespace="prod")
    assert [i["metadata"]["name"] for i in prod["items"]] == ["east-prod-api-service"]

    imports = await get_json(http, "/api/v1/resourceimports", east.token, kind="ServiceImport")
    assert sorted(i["metadata"]["name"] for i in imports["items"]) == ["default-nginx-service", "prod-api-service"]
    nginx = next(i for i in imports["items"] if i["metadata"]["name"] == "default-nginx-service")
    assert nginx["kind"] == "ResourceImport"
    assert nginx["spec"]["kind"] == "ServiceImport"


async def test_the_admin_exports_and_withdraws_a_cluster_network_policy(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    async with http.post("/api/v1/resourceexports", json=ACNP, headers=bearer(hub.admin_token)) as response:
        assert response.status == 201, await response.text()
        body = await response.json()
    assert body["verdict"] == "Accepted"
    import_name = names.acnp_import_name("strict-namespace-isolation")
    imports = await get_json(http, "/api/v1/resourceimports", hub.admin_token, kind="AntreaClusterNetworkPolicy")
    [imp] = imports["items"]
    assert imp["metadata"]["name"] == import_name
    assert imp["spec"]["clusternetworkpolicy"]["tier"] == "securityops"

    async with http.delete(
        "/api/v1/resourceexports/strict-namespace-isolation", headers=bearer(hub.admin_token)
    ) as response:
        assert response.status == 200
    assert import_name not in hub.engine.index.imports


async def test_a_member_token_cannot_write_and_bad_bodies_change_nothing(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east = await connect("east")
    revision = hub.engine.revision
    async with http.post("/api/v1/resourceexports", json=ACNP, headers=bearer(east.token)) as response:
        assert response.status == 403
    async with http.post("/api/v1/resourceexports", data=b"{nope", headers=bearer(hub.admin_token)) as response:
        assert response.status == 400
    service = {"metadata": {"name": "x"}, "spec": {"kind": "Service", "name": "x", "namespace": "default"}}
    async with http.post("/api/v1/resourceexports", json=service, headers=bearer(hub.admin_token)) as response:
        assert response.status in (400, 403)
    async with http.delete("/api/v1/resourceexports/absent", headers=bearer(hub.admin_token)) as response:
        assert response.status == 404
    assert hub.engine.revision == revision


async def test_the_openapi_document_lists_every_route(hub: HubApp, http: aiohttp.ClientSession) -> None:
    doc = await get_json(http, "/api/v1/openapi.json", hub.admin_token)
    assert doc["openapi"].startswith("3.")
    for path in ("/api/v1/clusterset", "/api/v1/members", "/api/v1/resourceexports", "/api/v1/resourceimports"):
        assert path in doc["paths"]


async def test_the_admin_removes_a_member_and_its_exports(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "nginx"))
    await west.export(service_export("west", "default", "nginx"))
    async with http.delete("/api/v1/members/east", headers=bearer(east.token)) as response:
        assert response.status == 403
    async with http.delete("/api/v1/members/east", headers=bearer(hub.admin_token)) as response:
        assert response.status == 200
    assert "east" not in hub.engine.index.members
    assert hub.engine.index.owned_by("east", admin=False) == set()
    imp = hub.engine.index.imports[names.service_import_name("default", "nginx")]
    assert list(imp.service_import.clusters) == ["west"]
    async with http.delete("/api/v1/members/east", headers=bearer(hub.admin_token)) as response:
        assert response.status == 404


async def test_items_live_in_the_configured_leader_namespace(tmp_path: Path) -> None:
    app = HubApp(hub_config(tmp_path / "hub", namespace="mc-leader"))
    await app.start()
    factory = MemberFactory(app)
    try:
        east = await factory("east")
        await east.export(service_export("east", "default", "nginx"))
        async with rest_session(app) as http:
            clusterset = await get_json(http, "/api/v1/clusterset", app.admin_token)
            members = await get_json(http, "/api/v1/members", app.admin_token)
            exports = await get_json(http, "/api/v1/resourceexports", app.admin_token)
            imports = await get_json(http, "/api/v1/resourceimports", app.admin_token)
        assert clusterset["metadata"]["namespace"] == "mc-leader"
        items = members["items"] + exports["items"] + imports["items"]
        assert len(items) == 4
        assert {i["metadata"]["namespace"] for i in items} == {"mc-leader"}
    finally:
        await factory.close()
        await app.stop()

"""The dashboard's live stream (GET /api/v1/events) and the page it feeds.

Members act through real gRPC (MemberFactory); the stream is read with aiohttp
as a browser's EventSource would, with the token in the query string.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub.app import HubApp
from hub.rest.dashboard import liveness_view, resources_view
from hub.rest.live import REFRESH_SECONDS
from mcapi import names
from mcapi.cluster_selection import selectors_from_json
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hub_fixtures import hub_config, rest_session
from tests.integration.hubclient import MemberFactory, service_export

WAIT = 5.0


@dataclass
class Event:
    name: str
    data: dict[str, Any]


class EventReader:
    """Parses a text/event-stream body into events (comments and retry lines skipped)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> Event:
        name, data = "message", list[str]()
        async with asyncio.timeout(WAIT):
            while True:
                raw = await self.response.content.readline()
                if not raw:
                    raise EOFError("the stream ended")
                line = raw.decode().rstrip("\n")
                if line == "" and data:
                    return Event(name, json.loads("\n".join(data)))
                field, _, value = line.partition(": ")
                if field == "event":
                    name = value
                elif field == "data":
                    data.append(value)

    async def until(self, accept: Callable[[Event], bool]) -> Event:
        """The first event `accept` likes; the others (e.g. liveness) are skipped."""
        while True:
            event = await self.next()
            if accept(event):
                return event


@pytest.fixture
async def http(hub: HubApp) -> AsyncIterator[aiohttp.ClientSession]:
    async with rest_session(hub) as session:
        yield session


async def open_stream(http: aiohttp.ClientSession, token: str) -> aiohttp.ClientResponse:
    response = await http.get("/api/v1/events", params={"token": token})
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return response


def cluster_info_export(cluster: str, service_cidr: str, gateway_ip: str) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.cluster_info_export_name(cluster),
        cluster_id=cluster,
        cluster_info=pb.ClusterInfo(
            cluster_id=cluster, service_cidr=service_cidr, gateway_infos=[pb.GatewayInfo(gateway_ip=gateway_ip)]
        ),
    )


def by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in rows}


async def eventually(condition: Callable[[], bool], within: float = REFRESH_SECONDS + WAIT) -> None:
    """Poll a condition no event announces: a stream notices a departed client at its next refresh."""
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 - there is no event to await here
            await asyncio.sleep(0.05)


async def test_the_event_stream_refuses_a_missing_or_wrong_token(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/events") as response:
        assert response.status == 401
    async with http.get("/api/v1/events", params={"token": "not-a-token"}) as response:
        assert response.status == 401
        assert (await response.json())["reason"] == "Unauthorized"


async def test_the_page_and_its_assets_load_without_a_token_under_a_strict_policy(
    http: aiohttp.ClientSession,
) -> None:
    async with http.get("/") as response:
        assert response.status == 200
        assert response.content_type == "text/html"
        assert "script-src 'self'" in response.headers["Content-Security-Policy"]
        assert response.headers["Referrer-Policy"] == "no-referrer"
        page = await response.text()
    assert 'src="/static/app.js"' in page
    for asset, kind in (("/static/app.js", "text/javascript"), ("/static/dashboard.css", "text/css")):
        async with http.get(asset) as response:
            assert response.status == 200, asset
            assert response.content_type == kind
    async with http.get("/static/../dashboard.py") as response:
        assert response.status in (401, 404)


async def test_a_client_gets_a_snapshot_then_a_changed_event_when_a_member_exports(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east = await connect("east")
    response = await open_stream(http, hub.admin_token)
    try:
        events = EventReader(response)
        snapshot = await events.next()
        assert snapshot.name == "snapshot"
        assert snapshot.data["clusterSet"]["totalClusters"] == 1
        [member] = snapshot.data["members"]
        assert member["clusterID"] == "east"
        assert member["connected"] is True
        assert snapshot.data["exports"] == []

        await east.export(service_export("east", "default", "nginx", [("http", 80)]))

        changed = await events.until(lambda e: e.name == "changed")
        export = by_name(changed.data["exports"])["east-default-nginx-service"]
        assert export["verdict"] == "Accepted"
        assert export["ports"] == [{"name": "http", "protocol": "TCP", "port": 80}]
        [service_import] = changed.data["serviceImports"]
        assert service_import["name"] == "default-nginx-service"
        assert service_import["clusters"] == ["east"]
    finally:
        response.close()


async def test_a_conflicting_export_reaches_the_stream_with_its_reason(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "nginx", [("http", 80)]))
    response = await open_stream(http, hub.admin_token)
    try:
        events = EventReader(response)
        await events.next()
        await west.export(service_export("west", "default", "nginx", [("http", 8080)]))
        changed = await events.until(lambda e: e.name == "changed" and len(e.data["exports"]) == 2)
        conflicting = by_name(changed.data["exports"])["west-default-nginx-service"]
        assert conflicting["verdict"] == "Conflict"
        assert conflicting["reason"] == "PortConflict"
        assert conflicting["message"]
    finally:
        response.close()


async def test_import_status_reports_arrive_with_the_periodic_refresh(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(cluster_info_export("east", "10.96.0.0/16", "192.0.2.1"))
    response = await open_stream(http, hub.admin_token)
    try:
        events = EventReader(response)
        snapshot = await events.next()
        assert by_name(snapshot.data["gateways"])["east-clusterinfo"]["health"] == {}
        # Reports travel on no bus: the stream sees them when it next compares its view.
        await west.stub.ReportImportStatus(
            pb.ReportImportStatusRequest(
                cluster_id="west",
                import_name="east-clusterinfo",
                succeeded=False,
                reason="TunnelDown",
                message="no route",
            )
        )
        changed = await events.until(lambda e: e.name == "changed")
        health = by_name(changed.data["gateways"])["east-clusterinfo"]["health"]
        assert health["west"]["succeeded"] is False
        assert health["west"]["reason"] == "TunnelDown"
    finally:
        response.close()


async def test_subscriptions_are_dropped_when_the_client_goes(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    await connect("east")
    response = await open_stream(http, hub.admin_token)
    await EventReader(response).next()
    assert hub.engine.imports_bus.count() == 1
    # The admin's topic and east's: verdicts are published per owner.
    assert hub.engine.verdicts_bus.count() == 2
    response.close()
    await eventually(lambda: hub.engine.imports_bus.count() == 0 and hub.engine.verdicts_bus.count() == 0)


async def test_open_streams_end_promptly_when_the_hub_stops(tmp_path: Path) -> None:
    app = HubApp(hub_config(tmp_path / "hub"))
    await app.start()
    stopped = False
    try:
        async with rest_session(app) as http:
            response = await open_stream(http, app.admin_token)
            events = EventReader(response)
            await events.next()
            async with asyncio.timeout(WAIT):
                await app.stop()
            stopped = True
            with pytest.raises((EOFError, aiohttp.ClientPayloadError)):
                await events.next()
            response.close()
    finally:
        if not stopped:
            await app.stop()


async def test_a_member_that_stops_announcing_is_streamed_as_disconnected(tmp_path: Path) -> None:
    moments = [datetime(2026, 1, 1, tzinfo=UTC)]
    app = HubApp(hub_config(tmp_path / "hub"), clock=lambda: moments[-1])
    await app.start()
    factory = MemberFactory(app)
    try:
        await factory("east")
        async with rest_session(app) as http:
            response = await open_stream(http, app.admin_token)
            events = EventReader(response)
            snapshot = await events.next()
            assert snapshot.data["members"][0]["connected"] is True
            moments.append(moments[-1] + timedelta(seconds=app.config.disconnect_after + 1))
            liveness = await events.until(lambda e: e.name == "liveness")
            [member] = liveness.data["members"]
            assert member["connected"] is False
            assert liveness.data["clusterSet"]["readyClusters"] == 0
            assert "exports" not in liveness.data  # liveness carries members only
            response.close()
    finally:
        await factory.close()
        await app.stop()


async def test_the_view_model_pairs_gateways_and_colours_links_by_reported_health(
    hub: HubApp, connect: MemberFactory
) -> None:
    east, west, south = await connect("east"), await connect("west"), await connect("south")
    await east.export(cluster_info_export("east", "10.96.0.0/16", "192.0.2.1"))
    await west.export(cluster_info_export("west", "10.97.0.0/16", "192.0.2.2"))
    await south.export(cluster_info_export("south", "10.98.0.0/16", "192.0.2.3"))
    for reporter, imported, ok in (("west", "east", True), ("east", "west", True), ("south", "east", False)):
        member = {"east": east, "west": west, "south": south}[reporter]
        await member.stub.ReportImportStatus(
            pb.ReportImportStatusRequest(
                cluster_id=reporter, import_name=f"{imported}-clusterinfo", succeeded=ok, reason="" if ok else "Down"
            )
        )

    view = resources_view(hub)

    gateways = {g["clusterID"]: g for g in view["gateways"]}
    assert gateways["east"]["gatewayIPs"] == ["192.0.2.1"]
    assert gateways["west"]["serviceCIDR"] == "10.97.0.0/16"
    links = {(link["a"], link["b"]): link["health"] for link in view["gatewayLinks"]}
    assert links == {("east", "west"): "healthy", ("east", "south"): "unhealthy", ("south", "west"): "unknown"}


async def test_the_view_model_shows_members_properties_and_each_importers_cluster_selection(
    hub: HubApp, connect: MemberFactory
) -> None:
    region = "region.topology.k8s.io"
    regions = {"east": "us", "west": "eu", "north": "us"}
    members = {}
    for cluster, value in regions.items():
        members[cluster] = member = await connect(cluster, announce=False)
        await member.announce(uid=f"uid-{cluster}", properties={region: value})
    same_region = selectors_from_json([{"propertySelector": {"matchProperties": {region: "@SameAsImporter@"}}}])
    for cluster in ("east", "west"):
        export = service_export(cluster, "shop", "api")
        export.service.cluster_selectors.extend(same_region)
        await members[cluster].export(export)

    live = {m["clusterID"]: m for m in liveness_view(hub)["members"]}
    assert live["west"]["properties"] == {region: "eu"}

    def selections() -> list[dict[str, Any]]:
        imported = by_name(resources_view(hub)["serviceImports"]).get("shop-api-service")
        return imported["selections"] if imported is not None and imported["selective"] else []

    await eventually(lambda: len(selections()) == 2, within=WAIT)
    assert sorted(selections(), key=lambda s: s["importers"]) == [
        {"importers": ["east", "north"], "results": [["east"]]},
        {"importers": ["west"], "results": [["west"]]},
    ]

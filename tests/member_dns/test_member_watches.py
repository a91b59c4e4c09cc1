"""A joined member with DNS on watches its imported kinds once: the DNS reads the importer's
caches, and keeps answering from them across a restart and a reconnection."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import dns.asyncquery
import dns.message
import dns.rcode
import pytest

from hub.app import HubApp
from kube.client import KubeClient
from kube.resources import ENDPOINT_SLICES
from mcapi.resources import SERVICE_IMPORTS_V1BETA1
from member.app import MemberApp
from member.dns.service import DnsOptions
from tests.integration.hubrunner import HubRunner, hub, hubs
from tests.kubeenv.cluster import ensure_namespace
from tests.member.harness import MEMBER_NAMESPACE, MEMBER_OPTIONS, JoinedMember, eventually, join_member

__all__ = ["hub", "hubs"]

NAME = "nginx.web.svc.clusterset.local."
SERVICE_IMPORTS = SERVICE_IMPORTS_V1BETA1.qualified_name
SLICES = ENDPOINT_SLICES.qualified_name
DNS_OPTIONS = dataclasses.replace(MEMBER_OPTIONS, dns=DnsOptions("127.0.0.1:0"))


@pytest.fixture
async def east(hub: HubApp, hubs: HubRunner, tmp_path: Path) -> AsyncIterator[JoinedMember]:
    """Cluster east set up to join ``hub`` (with the Namespace web), its member not started."""
    member = await join_member(hub, "east", tmp_path / "clusters", start=False)
    try:
        await ensure_namespace(member.client, "web")
        yield member
    finally:
        await member.aclose()


@pytest.fixture
async def west(hub: HubApp, hubs: HubRunner, tmp_path: Path) -> AsyncIterator[JoinedMember]:
    """Cluster west, joined, exporting web/nginx (one endpoint)."""
    member = await join_member(hub, "west", tmp_path / "clusters")
    try:
        await member.wait_connected()
        await member.create_service("web", "nginx")
        await member.create_endpoints("web", "nginx", ["10.0.0.1"])
        await member.export("web", "nginx")
        yield member
    finally:
        await member.aclose()


async def start_with_dns(member: JoinedMember) -> MemberApp:
    app = MemberApp(member.client, MEMBER_NAMESPACE, options=DNS_OPTIONS)
    await app.start()
    member.app = app
    return app


def watches(client: KubeClient) -> dict[str, int]:
    """Watch requests the client made, by resource."""
    out: dict[str, int] = {}
    for (verb, resource, _), value in client.metrics.counts().items():
        if verb == "watch":
            out[resource] = out.get(resource, 0) + int(value)
    return out


async def answer(app: MemberApp) -> set[str] | None:
    assert app.dns is not None
    query = dns.message.make_query(NAME, "A")
    reply = await dns.asyncquery.udp(query, "127.0.0.1", port=app.dns.server.port, timeout=2)
    if reply.rcode() == dns.rcode.NXDOMAIN:
        return None
    return {r.to_text() for rrset in reply.answer for r in rrset}


async def test_a_joined_member_with_dns_watches_service_imports_and_endpoint_slices_once(
    east: JoinedMember,
) -> None:
    app = await start_with_dns(east)
    await east.wait_connected()
    assert app.dns is not None and app.dns.feed.synced

    async def all_watching() -> dict[str, int] | None:
        # The importer's kinds are listed before it starts; each watch opens right after its list.
        found = watches(east.client)
        return found if {SERVICE_IMPORTS, SLICES, "namespaces"} <= found.keys() else None

    found = await eventually(all_watching, what="the member's watches open")
    assert found[SERVICE_IMPORTS] == 1, found
    assert found[SLICES] == 1, found


async def test_an_import_stays_answered_when_the_importer_stops_without_withdrawing(
    west: JoinedMember, east: JoinedMember
) -> None:
    app = await start_with_dns(east)
    await east.wait_connected()
    await eventually(lambda: answer(app), what="east answers nginx")
    answered = await answer(app)
    assert answered is not None and len(answered) == 1
    # Leaving without withdrawing (a ClusterSet change, before joining again) leaves the
    # imported objects in the cluster: they are still answered.
    await app.leave(withdraw=False)
    assert app.importer is None
    assert await answer(app) == answered
    assert app.dns is not None and app.dns.feed.synced
    # Still followed, not just still there: a change made after leaving reaches the DNS.
    await east.client.delete(SERVICE_IMPORTS_V1BETA1, "nginx", "web")

    async def nxdomain() -> bool:
        return await answer(app) is None

    await eventually(nxdomain, what="east's nginx gone from the DNS after it left")

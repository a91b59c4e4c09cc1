"""The member and the About API (KEP-2149): where its cluster ID comes from, the well-known
ClusterProperties it keeps while a member, and what its announces tell the hub."""

from __future__ import annotations

import base64
import secrets
from typing import Any

from hub.app import HubApp
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import NAMESPACES, SECRETS
from mcapi import names
from mcapi.crds import PROPERTY_CLUSTER_ID, PROPERTY_CLUSTER_SET
from mcapi.resources import CLUSTER_PROPERTIES, CLUSTER_SETS
from member.about.properties import LABEL_MANAGED_BY, MANAGED_BY_MEMBER
from tests.integration.hubrunner import HubRunner
from tests.member.conftest import MemberFactory
from tests.member.harness import MEMBER_NAMESPACE, eventually, write_cluster_set

REGION = "region.topology.k8s.io"


async def property_value(client: KubeClient, name: str) -> str | None:
    try:
        found = await client.get(CLUSTER_PROPERTIES, name)
    except NotFound:
        return None
    return str(found["spec"]["value"])


async def write_property(client: KubeClient, name: str, value: str) -> None:
    body = {"metadata": {"name": name}, "spec": {"value": value}}
    try:
        current = await client.get(CLUSTER_PROPERTIES, name)
    except NotFound:
        await client.create(CLUSTER_PROPERTIES, body)
        return
    await client.patch(CLUSTER_PROPERTIES, name, {"spec": {"value": value}, "metadata": current["metadata"]})


async def ready_condition(client: KubeClient, hub: HubApp) -> dict[str, Any]:
    obj = await client.get(CLUSTER_SETS, hub.config.cluster_set_id, MEMBER_NAMESPACE)
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), {})


async def test_without_an_id_property_the_member_writes_both_from_its_cluster_set_and_removes_them_when_it_leaves(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.wait_connected()

    assert await eventually(lambda: property_value(east.client, PROPERTY_CLUSTER_SET)) == hub.config.cluster_set_id
    assert await property_value(east.client, PROPERTY_CLUSTER_ID) == "east"
    written = await east.client.get(CLUSTER_PROPERTIES, PROPERTY_CLUSTER_ID)
    assert written["metadata"]["labels"][LABEL_MANAGED_BY] == MANAGED_BY_MEMBER

    await east.delete_cluster_set(hub)

    async def both_gone() -> bool:
        return all([await property_value(east.client, n) is None for n in (PROPERTY_CLUSTER_ID, PROPERTY_CLUSTER_SET)])

    await eventually(both_gone, what="the well-known properties removed")


async def test_an_id_property_someone_wrote_is_the_cluster_id_and_stays_when_the_member_leaves(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east", cluster_id="east-by-property", start=False, with_cluster_set=False)
    await write_property(east.client, PROPERTY_CLUSTER_ID, "east-by-property")
    # The ClusterSet names another ID: the property wins (KEP-2149's source of the cluster ID).
    await write_cluster_set(east.client, hub, "some-other-id", "member-east-by-property-token")
    await east.start_member()
    await east.wait_connected()

    assert east.member.joined is not None and east.member.joined.cluster_id == "east-by-property"
    assert "east-by-property" in hub.engine.index.members
    assert await eventually(lambda: property_value(east.client, PROPERTY_CLUSTER_SET)) == hub.config.cluster_set_id

    await east.delete_cluster_set(hub)
    await eventually(lambda: _absent(east.client, PROPERTY_CLUSTER_SET), what="clusterset.k8s.io removed")
    assert await property_value(east.client, PROPERTY_CLUSTER_ID) == "east-by-property"


async def _absent(client: KubeClient, name: str) -> bool:
    return await property_value(client, name) is None


async def test_the_announces_carry_the_clusters_uid_version_health_and_properties(
    hubs: HubRunner, members: MemberFactory
) -> None:
    # Heartbeats far apart: a changed property must reach the hub by an announce of its own,
    # not ride on the next heartbeat (the harness's is 1 s).
    await hubs.stop()
    hubs.overrides.update(heartbeat_interval=30.0, disconnect_after=90.0)
    hub = await hubs.start()
    east = await members.join("east", start=False)
    await write_property(east.client, REGION, "eu-west")
    await east.start_member()
    await east.wait_connected()
    uid = (await east.client.get(NAMESPACES, "kube-system"))["metadata"]["uid"]

    async def announced_region(value: str) -> bool:
        member = hub.engine.index.members.get("east")
        return member is not None and member.inventory.property_map.get(REGION) == value

    await eventually(lambda: announced_region("eu-west"), what="the region announced")
    inventory = hub.engine.index.members["east"].inventory
    assert inventory.cluster_uid == uid
    assert inventory.kubernetes_version.startswith("v1.")
    assert inventory.control_plane_healthy is True
    assert inventory.property_map[PROPERTY_CLUSTER_ID] == "east"

    await write_property(east.client, REGION, "eu-north")
    await eventually(lambda: announced_region("eu-north"), within=5.0, what="the new region announced at once")


async def test_a_changed_id_property_is_refused_by_the_hub_until_it_says_the_joined_id_again(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east", start=False)
    await write_property(east.client, PROPERTY_CLUSTER_ID, "east")
    await east.start_member()
    await east.wait_connected()

    # A hub token names one cluster ID: the member gets one for its new ID, so that what the hub
    # says is about the ID itself (with a shared ServiceAccount token no new token is needed).
    await point_token(east.client, hub, "east-renamed")
    await write_property(east.client, PROPERTY_CLUSTER_ID, "east-renamed")

    async def refused() -> dict[str, Any] | None:
        ready = await ready_condition(east.client, hub)
        return ready if ready.get("reason") == names.REASON_CLUSTER_ID_IMMUTABLE else None

    ready = await eventually(refused, what="Ready=False ClusterIDImmutable")
    assert ready["status"] == "False" and "immutable" in ready["message"]
    assert set(hub.engine.index.members) == {"east"}  # joined as east, still

    await point_token(east.client, hub, "east")
    await write_property(east.client, PROPERTY_CLUSTER_ID, "east")

    async def ready_again() -> bool:
        return (await ready_condition(east.client, hub)).get("status") == "True"

    await eventually(ready_again, what="Ready again as east")


async def point_token(client: KubeClient, hub: HubApp, cluster_id: str) -> None:
    """The member's token Secret (member-east-token) now holds a hub token for ``cluster_id``."""
    token = hub.tokens.create(f"member-{cluster_id}-{secrets.token_hex(4)}", cluster_id=cluster_id)
    data = {"token": base64.b64encode(token.encode()).decode()}
    await client.patch(SECRETS, "member-east-token", {"data": data}, MEMBER_NAMESPACE)

"""A globally addressed member's exports (issue 26): east and west share their ranges and the hub
has a global CIDR of /29 blocks (five addresses for Services and Pods each), so both are
globally addressed. Their exports carry global addresses of their block, a ClusterIP export
gets its shadow Service, the record (ConfigMap mchub-global-addresses) keeps the addresses over
a restart, and what cannot be translated is not exported and says why."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from hub.app import HubApp
from kube.errors import NotFound
from kube.resources import CONFIG_MAPS, EVENTS, SERVICES
from mcapi import global_addresses, names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import SERVICE_EXPORTS
from tests.integration.hubrunner import HubRunner
from tests.member.conftest import MemberFactory
from tests.member.harness import MEMBER_NAMESPACE, JoinedMember, eventually
from tests.member_gateway.kubeobjects import create_node

NS = "shop"
OVERLAPPING = "serviceCIDR: 10.96.0.0/16\npodCIDRs: ['10.1.0.0/16']\n"
WEB = {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}


@pytest.fixture
async def hub(hubs: HubRunner) -> HubApp:
    hubs.overrides.update(global_cidr="242.0.0.0/16", global_block_prefix=29)
    return await hubs.start()


async def join(members: MemberFactory, name: str, node_ip: str, config: str = "") -> JoinedMember:
    member = await members.join(name, config_yaml=OVERLAPPING + config)
    await create_node(member.client, f"{name}-node1", node_ip, pod_cidr="10.1.0.0/24")
    return member


async def addressed(member: JoinedMember) -> ipaddress.IPv4Network:
    async def probe() -> ipaddress.IPv4Network | None:
        state = member.member.session.state if member.member.session else None
        return ipaddress.IPv4Network(state.global_cidr) if state and state.globally_addressed else None

    return await eventually(probe, what=f"{member.cluster_id} globally addressed")


async def record(member: JoinedMember) -> global_addresses.GlobalAddresses:
    try:
        live = await member.client.get(CONFIG_MAPS, global_addresses.CONFIGMAP, MEMBER_NAMESPACE)
    except NotFound:
        return global_addresses.GlobalAddresses()
    return global_addresses.GlobalAddresses.from_data(live.get("data"))


async def at_hub(hub: HubApp, name: str, ready: Any = bool) -> pb.ResourceExport:
    async def probe() -> pb.ResourceExport | None:
        found = hub.engine.index.exports.get(name)
        return found if found is not None and ready(found) else None

    return await eventually(probe, what=f"export {name} at the hub")


def global_ips(export: pb.ResourceExport) -> list[str]:
    return [a.global_ip for s in export.endpoints.subsets for a in s.addresses]


async def shadow(member: JoinedMember, name: str) -> dict[str, Any] | None:
    try:
        return await member.client.get(SERVICES, f"mchub-global-{name}", NS)
    except NotFound:
        return None


async def test_a_cluster_ip_export_gets_a_global_address_and_a_shadow_service_which_go_with_it(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await join(members, "east", "198.18.0.11")
    await join(members, "west", "198.18.0.12")
    block = await addressed(east)
    await east.create_service(NS, "web", spec=WEB)
    await east.create_endpoints(NS, "web", ["10.1.0.5"])
    await east.export(NS, "web")

    name = names.endpoints_export_name("east", NS, "web")
    exported = await at_hub(hub, name, lambda e: all(global_ips(e)))
    (global_ip,) = global_ips(exported)
    assert ipaddress.IPv4Address(global_ip) in block and global_ip != str(block[1])  # never the egress address
    found = await eventually(lambda: shadow(east, "web"), what="the shadow Service")
    assert found["spec"]["externalIPs"] == [global_ip]
    assert found["spec"]["selector"] == {"app": "web"}
    assert [(p["port"], p["targetPort"]) for p in found["spec"]["ports"]] == [(80, 8080)]
    assert (await record(east)).services == {f"{NS}/web": global_ip}
    assert (await record(east)).egress_ip == str(block[1])

    await east.client.delete(SERVICE_EXPORTS, "web", NS)

    async def gone() -> bool:
        return await shadow(east, "web") is None and (await record(east)).services == {}

    await eventually(gone, what="the shadow and the address gone with the export")


async def test_a_selectorless_service_cannot_be_shadowed_and_is_not_exported(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await join(members, "east", "198.18.0.11")
    await join(members, "west", "198.18.0.12")
    await addressed(east)
    await east.create_service(NS, "db")  # no selector: its Endpoints are the user's
    await east.create_endpoints(NS, "db", ["10.1.0.7"])
    await east.export(NS, "db")
    condition = await east.wait_condition(NS, "db", "Ready", "False", "SelectorlessService")
    assert "has no selector" in condition["message"]
    assert names.service_export_name("east", NS, "db") not in hub.engine.index.exports


async def test_pod_endpoints_that_do_not_fit_the_block_are_not_exported_and_say_so(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await join(members, "east", "198.18.0.11", "endpointIPType: PodIP\n")
    await join(members, "west", "198.18.0.12")
    block = await addressed(east)
    await east.create_service(NS, "web", spec=WEB)
    await east.create_endpoints(NS, "web", ["10.1.0.5", "10.1.0.6", "10.1.0.7"])
    await east.export(NS, "web")
    exported = await at_hub(hub, names.endpoints_export_name("east", NS, "web"), lambda e: all(global_ips(e)))
    assert sorted(global_ips(exported)) == [str(block[n]) for n in (2, 3, 4)]
    assert (await record(east)).pods == {
        "10.1.0.5": str(block[2]),
        "10.1.0.6": str(block[3]),
        "10.1.0.7": str(block[4]),
    }

    # Six more Pods behind another Service: only two addresses are left.
    await east.create_service(NS, "big", spec={**WEB, "selector": {"app": "big"}})
    await east.create_endpoints(NS, "big", [f"10.1.1.{n}" for n in range(1, 7)])
    await east.export(NS, "big")
    condition = await east.wait_condition(NS, "big", "Ready", "False", "GlobalAddressExhausted")
    assert f"global CIDR {block} has 2 free addresses, 6 more are needed" in condition["message"]
    assert names.service_export_name("east", NS, "big") not in hub.engine.index.exports

    async def warned() -> list[dict[str, Any]]:
        listed = await east.client.list(EVENTS, NS)
        return [e for e in listed.items if e.get("reason") == "GlobalAddressExhausted"]

    (event,) = await eventually(warned, what="a Warning Event on the ServiceExport")
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "big"
    assert (await record(east)).pods.keys() == {"10.1.0.5", "10.1.0.6", "10.1.0.7"}  # nothing half done


async def test_a_restarted_member_exports_the_same_global_addresses(hub: HubApp, members: MemberFactory) -> None:
    east = await join(members, "east", "198.18.0.11", "endpointIPType: PodIP\n")
    await join(members, "west", "198.18.0.12")
    await addressed(east)
    await east.create_service(NS, "web", spec=WEB)
    await east.create_endpoints(NS, "web", ["10.1.0.5", "10.1.0.6"])
    await east.export(NS, "web")
    name = names.endpoints_export_name("east", NS, "web")
    before = await at_hub(hub, name, lambda e: all(global_ips(e)))
    await east.stop_member()
    await east.start_member()
    await east.wait_connected()
    assert east.member.exports is not None
    await east.member.exports.wait_idle()
    after = hub.engine.index.exports[name]
    assert after.endpoints == before.endpoints  # the same addresses: importers see no change


async def test_leaving_the_clusterset_takes_the_shadow_services_and_the_record_along(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await join(members, "east", "198.18.0.11")
    await join(members, "west", "198.18.0.12")
    await addressed(east)
    await east.create_service(NS, "web", spec=WEB)
    await east.create_endpoints(NS, "web", ["10.1.0.5"])
    await east.export(NS, "web")
    await eventually(lambda: shadow(east, "web"), what="the shadow Service")
    await east.delete_cluster_set(hub)

    async def gone() -> bool:
        try:
            await east.client.get(CONFIG_MAPS, global_addresses.CONFIGMAP, MEMBER_NAMESPACE)
        except NotFound:
            return await shadow(east, "web") is None
        return False

    await eventually(gone, what="the shadow Service and mchub-global-addresses gone with the member")

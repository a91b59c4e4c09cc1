"""Overlapping CIDRs through the whole chain on one machine (issue 26): a hub with a global CIDR,
three sandbox clusters whose Nodes describe the namespace topology — east and west with the same
Pod and Service CIDRs, north with its own — their members (endpointIPType PodIP) and one
KubeAgent per Node.

The hub finds the overlap in the ClusterInfo exports, gives every member a block and makes east
and west globally addressed; west's member gives its exported Pod a global address and records
it for its agent; east's member imports that address; a Pod in east reaches it, and west's Pod
sees east's egress address. North is reached at its own addresses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Any

import pytest

from agent.config import AgentConfig
from kube.client import KubeClient
from kube.conditions import find_condition
from kube.errors import NotFound
from kube.resources import CONFIG_MAPS, ENDPOINT_SLICES
from mcapi import global_addresses
from mcapi.names import DEFAULT_MEMBER_NAMESPACE
from mcapi.resources import CLUSTER_INFO_IMPORTS
from tests.datapath.driver import FAST_HEALTH
from tests.datapath.kube_agents import start_agents
from tests.datapath.member_knock import knock_from_the_cluster
from tests.datapath.topology import ClusterNs, Topology, build_topology, destroy_topology
from tests.datapath.traffic import eventually_seen_source, peer_reporting_server
from tests.integration.hubrunner import HubRunner
from tests.kubeenv.cluster import ensure_namespace
from tests.member.harness import JoinedMember, eventually, join_member
from tests.member_gateway.kubeobjects import create_node

NAMESPACE = DEFAULT_MEMBER_NAMESPACE
WAIT = 30.0
PORT = 7070
AGENT_CONFIG = AgentConfig(enable_gateway=True, enable_pod_to_pod_connectivity=True, health=FAST_HEALTH)
GLOBAL_CIDR = "242.0.0.0/16"


@dataclass
class OverlapSet:
    topo: Topology
    members: dict[str, JoinedMember]

    def cluster(self, name: str) -> ClusterNs:
        return self.topo.clusters[name]


@pytest.fixture
async def overlap_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OverlapSet]:
    topo = await build_topology(same_ranges={"west": "east"})
    knock_from_the_cluster(topo, monkeypatch)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(destroy_topology, topo)
        hubs = HubRunner(tmp_path / "hub", overrides={"global_cidr": GLOBAL_CIDR, "global_block_prefix": 20})
        hub = await hubs.start()
        stack.push_async_callback(hubs.stop)
        members: dict[str, JoinedMember] = {}
        for cluster in topo.clusters.values():
            config_yaml = (
                f"serviceCIDR: {cluster.service_cidr}\npodCIDRs: ['{cluster.pod_cidr}']\nendpointIPType: PodIP\n"
            )
            joined = await join_member(hub, cluster.cluster_id, tmp_path, config_yaml=config_yaml)
            stack.push_async_callback(joined.aclose)
            await joined.wait_connected()
            for node in cluster.nodes:
                await create_node(joined.client, node.name, node.underlay_ip, pod_cidr=node.pod_cidr)
            await start_agents(stack, joined.client, cluster, AGENT_CONFIG, tmp_path)
            members[cluster.cluster_id] = joined
        yield OverlapSet(topo, members)


async def export_pod(member: JoinedMember, cluster: ClusterNs, name: str) -> None:
    """The Pod on the cluster's second Node behind a Service ``web/<name>``, exported."""
    await member.create_service("web", name, [("http", PORT)])
    await member.create_endpoints("web", name, [cluster.nodes[1].pod.ip], port=PORT)
    await member.export("web", name)


async def record_of(client: KubeClient) -> global_addresses.GlobalAddresses:
    try:
        live = await client.get(CONFIG_MAPS, global_addresses.CONFIGMAP, NAMESPACE)
    except NotFound:
        return global_addresses.GlobalAddresses()
    return global_addresses.GlobalAddresses.from_data(live.get("data"))


async def imported_address(client: KubeClient, service: str, source: str) -> str:
    """The one address of the MCS EndpointSlice ``antrea-mc-<service>.<source>`` in ``web``."""

    async def probe() -> str | None:
        try:
            found = await client.get(ENDPOINT_SLICES, f"antrea-mc-{service}.{source}", "web")
        except NotFound:
            return None
        addresses = [a for e in found.get("endpoints") or [] for a in e.get("addresses") or []]
        return addresses[0] if len(addresses) == 1 else None

    return await eventually(probe, WAIT, f"the slice of {service} from {source}")


async def cluster_info_import(client: KubeClient, cluster_id: str) -> dict[str, Any]:
    return await client.get(CLUSTER_INFO_IMPORTS, f"{cluster_id}-clusterinfo", NAMESPACE)


async def test_overlapping_clusters_reach_each_other_through_global_addresses_and_north_directly(
    overlap_set: OverlapSet,
) -> None:
    east, west, north = (overlap_set.members[c] for c in ("east", "west", "north"))
    for member in (east, west, north):
        await ensure_namespace(member.client, "web")

    # The hub's verdict: east and west globally addressed, each with its block; north not.
    async def addressed(member: JoinedMember) -> global_addresses.GlobalAddresses | None:
        record = await record_of(member.client)
        return record if record.globally_addressed and record.block else None

    east_record, west_record = (
        await eventually(lambda: addressed(east), WAIT),
        await eventually(lambda: addressed(west), WAIT),
    )
    assert IPv4Network(east_record.block).subnet_of(IPv4Network(GLOBAL_CIDR))
    assert east_record.block != west_record.block
    assert not (await record_of(north.client)).globally_addressed
    west_in_north = await eventually(
        lambda: _stamped(north.client, "west"), WAIT, "west's ClusterInfoImport in north stamped"
    )
    assert west_in_north["spec"]["globalCIDR"] == west_record.block
    north_in_east = await cluster_info_import(east.client, "north")
    assert "globallyAddressed" not in north_in_east["spec"]

    # West exports a Pod: it gets an address of west's block, which east imports.
    await export_pod(west, overlap_set.cluster("west"), "web")
    await export_pod(east, overlap_set.cluster("east"), "api")
    await export_pod(north, overlap_set.cluster("north"), "nweb")
    west_global = await imported_address(east.client, "web", "west")
    assert IPv4Address(west_global) in IPv4Network(west_record.block)
    assert (await record_of(west.client)).pods == {overlap_set.cluster("west").nodes[1].pod.ip: west_global}
    assert await imported_address(north.client, "web", "west") == west_global
    east_global = await imported_address(west.client, "api", "east")
    assert IPv4Address(east_global) in IPv4Network(east_record.block)
    north_real = await imported_address(east.client, "nweb", "north")
    assert north_real == overlap_set.cluster("north").nodes[1].pod.ip  # north keeps its own address

    east_ns, west_ns, north_ns = (overlap_set.cluster(c) for c in ("east", "west", "north"))
    async with peer_reporting_server(west_ns.nodes[1].pod.netns):
        # From east's plain Node: through east's Gateway (SNAT to its egress) and west's (DNAT).
        seen = await eventually_seen_source(east_ns.nodes[1].pod.netns, west_global, PORT, deadline=WAIT)
        assert seen == east_record.egress_ip
        seen = await eventually_seen_source(north_ns.nodes[1].pod.netns, west_global, PORT, deadline=WAIT)
        assert seen == north_ns.nodes[0].underlay_ip  # north is not globally addressed
    async with peer_reporting_server(east_ns.nodes[1].pod.netns):
        seen = await eventually_seen_source(west_ns.nodes[1].pod.netns, east_global, PORT, deadline=WAIT)
        assert seen == west_record.egress_ip
    async with peer_reporting_server(north_ns.nodes[1].pod.netns):
        seen = await eventually_seen_source(east_ns.nodes[1].pod.netns, north_real, PORT, deadline=WAIT)
        assert seen == east_record.egress_ip

    # The overlap is resolved, and each ClusterInfoImport says so.
    west_in_east = await cluster_info_import(east.client, "west")
    conflict = find_condition((west_in_east.get("status") or {}).get("conditions"), "CIDRConflict")
    assert conflict is not None and conflict["status"] == "False" and conflict["reason"] == "GloballyAddressed"


async def _stamped(client: KubeClient, cluster_id: str) -> dict[str, Any] | None:
    try:
        found = await cluster_info_import(client, cluster_id)
    except NotFound:
        return None
    return found if (found.get("spec") or {}).get("globallyAddressed") is True else None

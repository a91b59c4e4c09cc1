"""Label identities on the wire: the source Gateway writes the source Pod's identity into
the VNI between Gateways, the receiving Gateway recovers it for each packet (policy suite)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.linux.policy_nft import classid
from agent.policy.state import tagged_priority
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.policy_world import PolicyWorld
from tests.datapath.topology import Topology, sh
from tests.datapath.traffic import peer_reporting_server, seen_source


@pytest.fixture
async def world_clusterset(topology: Topology) -> AsyncIterator[tuple[PolicyWorld, ClusterSetDriver]]:
    world = PolicyWorld(topology, labels={"west-a": {"role": "tenant"}, "west-b": {"role": "client"}})
    driver = ClusterSetDriver(topology, policy=world.compiled)
    try:
        yield world, driver
    finally:
        await driver.stop_all(cleanup=True)


async def counter(netns: str, family: str, table: str) -> int:
    listed = await sh("ip", "netns", "exec", netns, "nft", "list", "table", family, table)
    return sum(int(part.split()[1]) for part in listed.split("counter ")[1:])


async def test_policy_identity_of_the_source_pod_rides_in_the_vni_and_is_recovered_by_the_receiving_gateway(
    world_clusterset: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    world, clusterset = world_clusterset
    await clusterset.sync()
    east, west = topology.clusters["east"], topology.clusters["west"]
    tenant, client = world.identity_of("west-a"), world.identity_of("west-b")
    assert tenant > 0xFFFF and client != tenant
    # On the underlay bridge: VXLAN packets from west's Gateway carrying each identity.
    wire = f"""
    table bridge mctest_wire {{
      chain seen {{ type filter hook forward priority 0; policy accept;
        ip saddr {west.nodes[0].underlay_ip} udp dport 4798 @th,96,24 {tenant} counter
      }}
    }}"""
    await sh("ip", "netns", "exec", topology.underlay_netns, "nft", "-f", "-", stdin=wire.encode())
    # On east's Gateway, after decapsulation: the tenant's identity in the packet's priority.
    recovered = f"""
    table ip mctest_recovered {{
      chain pre {{ type filter hook prerouting priority -40; policy accept;
        iifname "mc-tun0" meta priority {classid(tagged_priority(tenant))} counter
      }}
    }}"""
    await sh("ip", "netns", "exec", east.nodes[0].netns, "nft", "-f", "-", stdin=recovered.encode())
    target = east.nodes[1].pod  # behind east's Gateway, on its other Node
    async with peer_reporting_server(target.netns):
        assert await seen_source(west.nodes[0].pod.netns, target.ip) == west.nodes[0].underlay_ip
        assert await counter(topology.underlay_netns, "bridge", "mctest_wire") > 0
        assert await counter(east.nodes[0].netns, "ip", "mctest_recovered") > 0
        # The client Pod (west's other Node, through its Gateway) is told apart.
        before = await counter(east.nodes[0].netns, "ip", "mctest_recovered")
        assert await seen_source(west.nodes[1].pod.netns, target.ip) == west.nodes[0].underlay_ip
        assert await counter(east.nodes[0].netns, "ip", "mctest_recovered") == before

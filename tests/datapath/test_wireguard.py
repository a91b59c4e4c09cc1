"""Cross-cluster traffic through WireGuard between Gateways (userspace wireguard-go)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.errors import WireGuardError
from agent.linux.wireguard import WG_RUN_DIR, WireGuardDaemons, socket_owner_pid
from agent.state import Role
from tests.datapath.conftest import requires_wireguard
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.inspect_kernel import footprint
from tests.datapath.topology import Topology, sh
from tests.datapath.traffic import eventually_seen_source, peer_reporting_server, seen_source

pytestmark = requires_wireguard
RETIRE_SECONDS = 2.0


async def test_a_pod_in_east_reaches_a_pod_in_west_over_wireguard(
    wireguard_clusterset: ClusterSetDriver, topology: Topology
) -> None:
    await wireguard_clusterset.sync()
    east, west = topology.clusters["east"], topology.clusters["west"]
    east_gateway, west_gateway = east.nodes[0], west.nodes[0]
    wg_east = topology.wireguard_name(east_gateway)
    peers = await sh("ip", "netns", "exec", east_gateway.netns, "wg", "show", wg_east, "peers")
    assert wireguard_clusterset.keys[west_gateway.name].public_key in peers
    for source in east.nodes:  # from the Gateway's own Pod and through the VXLAN hop
        async with peer_reporting_server(west.nodes[1].pod.netns):
            seen = await eventually_seen_source(source.pod.netns, west.nodes[1].pod.ip)
        assert seen == east_gateway.underlay_ip
    transfer = await sh("ip", "netns", "exec", east_gateway.netns, "wg", "show", wg_east, "transfer")
    assert any(int(line.split("\t")[1]) > 0 for line in transfer.strip().splitlines()), transfer


async def test_wireguard_reconcile_is_idempotent_and_cleanup_stops_wireguard_go(
    wireguard_clusterset: ClusterSetDriver, topology: Topology
) -> None:
    await wireguard_clusterset.sync()
    second = await wireguard_clusterset.sync()
    assert {n: o.changes for n, o in second.items()} == {n: () for n in second}
    gateway = topology.clusters["east"].nodes[0]
    name = topology.wireguard_name(gateway)
    pid = socket_owner_pid(name)
    assert pid is not None
    await wireguard_clusterset.stop_all(cleanup=True)
    assert socket_owner_pid(name) is None
    assert not Path(WG_RUN_DIR, f"{name}.sock").exists()
    assert not Path(f"/proc/{pid}/cmdline").exists() or b"wireguard-go" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert (await footprint(gateway.netns)).empty


@pytest.fixture
async def retiring_quickly(topology: Topology) -> AsyncIterator[ClusterSetDriver]:
    """The WireGuard ClusterSet with Gateways that retire in RETIRE_SECONDS."""
    driver = ClusterSetDriver(topology, wireguard=True, retire_seconds=RETIRE_SECONDS)
    try:
        yield driver
    finally:
        await driver.stop_all(cleanup=True)


async def test_when_the_gateway_moves_the_wireguard_device_moves_with_it(
    retiring_quickly: ClusterSetDriver, topology: Topology
) -> None:
    """The old Gateway keeps its device while it retires, then stops it."""
    east, west = topology.clusters["east"], topology.clusters["west"]
    await retiring_quickly.sync()
    retiring_quickly.move_gateway("east", east.nodes[1].name)
    outcomes = await retiring_quickly.sync()
    assert outcomes[east.nodes[0].name].desired is not None
    assert outcomes[east.nodes[0].name].desired.role is Role.RETIRING
    assert socket_owner_pid(topology.wireguard_name(east.nodes[0])) is not None
    assert socket_owner_pid(topology.wireguard_name(east.nodes[1])) is not None
    async with peer_reporting_server(west.nodes[0].pod.netns):
        seen = await eventually_seen_source(east.nodes[0].pod.netns, west.nodes[0].pod.ip)
    assert seen == east.nodes[1].underlay_ip
    agent = retiring_quickly.agents[east.nodes[0].name]
    async with asyncio.timeout(RETIRE_SECONDS + 5):
        await agent.wait_for(lambda: agent.desired is not None and agent.desired.role is Role.MEMBER)
    assert socket_owner_pid(topology.wireguard_name(east.nodes[0])) is None


async def test_a_wireguard_gateway_moved_away_answers_what_the_remote_still_sends_it(
    retiring_quickly: ClusterSetDriver, topology: Topology
) -> None:
    """West's Gateway moves (a drain); west's Nodes know, east does not yet and still sends to the
    old Gateway's WireGuard peer. The old Gateway retires: it still decrypts what arrives,
    masquerades it to its own address on its way to the backend and encrypts the replies back."""
    east, west = topology.clusters["east"], topology.clusters["west"]
    leaving, staying = west.nodes
    await retiring_quickly.sync()
    client = east.nodes[1].pod.netns  # through east's VXLAN hop to its Gateway
    async with peer_reporting_server(staying.pod.netns):
        assert await eventually_seen_source(client, staying.pod.ip) == east.nodes[0].underlay_ip
        retiring_quickly.move_gateway("west", staying.name)
        await retiring_quickly.sync("west")
        seen = {await seen_source(client, staying.pod.ip) for _ in range(8)}
        assert seen == {leaving.underlay_ip}
        await retiring_quickly.sync("east")
        assert await eventually_seen_source(client, staying.pod.ip) == east.nodes[0].underlay_ip


async def test_a_wireguard_name_already_served_in_another_namespace_is_refused(topology: Topology) -> None:
    east_gateway, west_gateway = topology.clusters["east"].nodes[0], topology.clusters["west"].nodes[0]
    name = topology.wireguard_name(east_gateway)
    first, second = WireGuardDaemons(), WireGuardDaemons()
    await first.start(east_gateway.netns, name)
    try:
        with pytest.raises(WireGuardError, match="unique"):
            await second.start(west_gateway.netns, name)
        assert name in await sh("ip", "-n", east_gateway.netns, "link", "show")
    finally:
        await first.stop(name)
    assert socket_owner_pid(name) is None

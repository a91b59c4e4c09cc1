"""A Gateway drained or moved away retires, in network namespaces: its own cluster's Nodes learn of
the change first (the Gateway CR), the other members a moment later (through the hub). Meanwhile
east still sends to the west Gateway that left; what it sends must still be answered.

Each test tells west's agents of the change and not yet east's (ClusterSetDriver.sync with
``only``), then sends requests from east's plain Node to west's Service (kube-proxy's DNAT stood
in for on every west Node) whose one backend is on the west Node that stays the Gateway, so every
reply has to find the way back to the Node that translated its request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from ipaddress import IPv4Address

import pytest

from agent.pairing import pair
from agent.state import Role, RouteTable
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.inspect_kernel import footprint
from tests.datapath.test_gateway_vxlan import fake_kube_proxy, service_ip
from tests.datapath.test_overlapping_cidrs import EGRESS, SERVICE_GLOBAL, global_driver, shadow_service
from tests.datapath.topology import NodeNs, Topology, built_topology
from tests.datapath.traffic import echoes, open_reported, peer_reporting_server, seen_source

FLOWS = 24
RETIRE_SECONDS = 3.0


@pytest.fixture
async def topology() -> AsyncIterator[Topology]:
    async with built_topology(("east", "west"), nodes={"east": 3}) as topo:
        yield topo


def _underlay(topology: Topology, *names: str) -> set[str]:
    return {topology.clusters[name.rsplit("-", 1)[0]].node(name).underlay_ip for name in names}


def _paired_with_east_a(topology: Topology) -> tuple[NodeNs, NodeNs]:
    """(the west Node east-a sends to, the other one)."""
    west = topology.clusters["west"]
    east_a = IPv4Address(topology.clusters["east"].node("east-a").underlay_ip)
    chosen = pair(east_a, sorted(IPv4Address(n.underlay_ip) for n in west.nodes))
    leaving = next(n for n in west.nodes if n.underlay_ip == str(chosen))
    return leaving, next(n for n in west.nodes if n is not leaving)


def _paired_with(topology: Topology, west_node: NodeNs) -> set[str]:
    """The east Gateways that send to ``west_node`` while both west Nodes are Gateways."""
    west_ips = sorted(IPv4Address(n.underlay_ip) for n in topology.clusters["west"].nodes)
    east = _underlay(topology, "east-a", "east-b")
    return {ip for ip in east if str(pair(IPv4Address(ip), west_ips)) == west_node.underlay_ip}


def _all_active_active(topology: Topology) -> ClusterSetDriver:
    west = tuple(n.name for n in topology.clusters["west"].nodes)
    return ClusterSetDriver(
        topology, active_active={"east": ("east-a", "east-b"), "west": west}, retire_seconds=RETIRE_SECONDS
    )


async def _sources(topology: Topology, backend: NodeNs) -> set[str]:
    """The source addresses the backend saw, over FLOWS requests from east-c (each must complete)."""
    client = topology.clusters["east"].node("east-c").pod.netns
    service = service_ip(topology.clusters["west"])
    return {await seen_source(client, service, port=80) for _ in range(FLOWS)}


@contextlib.asynccontextmanager
async def _serving(driver: ClusterSetDriver, backend: NodeNs) -> AsyncIterator[set[str]]:
    """West's Service answered by ``backend``'s Pod, every agent synced, each request from east
    reaching it through either east Gateway (yielded: their addresses); the agents stopped after."""
    topology = driver.topo
    try:
        await fake_kube_proxy(topology.clusters["west"], backend.pod.ip)
        await driver.sync()
        east_gateways = _underlay(topology, "east-a", "east-b")
        async with peer_reporting_server(backend.pod.netns):
            assert await _sources(topology, backend) == east_gateways
            yield east_gateways
    finally:
        await driver.stop_all(cleanup=True)


async def test_an_active_active_gateway_that_leaves_answers_what_east_still_sends_it_until_it_retires(
    topology: Topology,
) -> None:
    leaving, staying = _paired_with_east_a(topology)
    driver = _all_active_active(topology)
    async with _serving(driver, staying) as east_gateways:
        # West drops the Gateway (a drain): west knows, east does not yet.
        driver.active_active["west"] = (staying.name,)
        outcomes = await driver.sync("west")
        assert outcomes[leaving.name].desired is not None
        assert outcomes[leaving.name].desired.role is Role.RETIRING
        # east-a still sends to it: those requests arrive there, are masqueraded to its own
        # address on their way to the backend, and their replies leave it straight back.
        direct = _paired_with(topology, staying)
        assert await _sources(topology, staying) == {*direct, leaving.underlay_ip}
        # east learns: everything goes to the Gateway that stayed.
        await driver.sync("east")
        assert await _sources(topology, staying) == east_gateways
        agent = driver.agents[leaving.name]
        async with asyncio.timeout(RETIRE_SECONDS + 5):
            await agent.wait_for(lambda: agent.desired is not None and agent.desired.role is Role.MEMBER)
        kernel = await footprint(leaving.netns)
        assert not [r for r in kernel.routes if r.endswith(f" table {int(RouteTable.RETURN)}")]
        assert await _sources(topology, staying) == east_gateways


async def test_a_single_active_gateway_moved_away_answers_what_east_still_sends_it(topology: Topology) -> None:
    """The default mode: west's one Gateway moves to its other Node (the member's election after a
    cordon); until east has the new ClusterInfo, it keeps sending to the old one."""
    west = topology.clusters["west"]
    leaving, staying = west.nodes
    driver = ClusterSetDriver(topology, active_active={"east": ("east-a", "east-b")}, retire_seconds=RETIRE_SECONDS)
    async with _serving(driver, staying) as east_gateways:
        driver.move_gateway("west", staying.name)
        await driver.sync("west")
        # Every request still goes to the old Gateway, and every one is answered.
        assert await _sources(topology, staying) == {leaving.underlay_ip}
        await driver.sync("east")
        assert await _sources(topology, staying) == east_gateways


async def test_an_active_gateway_masquerades_what_arrives_for_another_while_the_ends_disagree(
    topology: Topology,
) -> None:
    """The other way round: east stops sending to a west Gateway before west's Nodes stop pairing
    with it (a verdict only east reached, or a Gateway east learned of first). Requests reach the
    Gateway west pairs with no one of them; it masquerades them, so the backend's replies come
    back to it and not through the Gateway west's pairing names, which never saw the request."""
    quiet, receiving = _paired_with_east_a(topology)
    driver = _all_active_active(topology)
    async with _serving(driver, quiet):
        driver.active_active["west"] = (receiving.name,)
        await driver.sync("east")
        direct = _paired_with(topology, receiving)
        assert await _sources(topology, quiet) == {*direct, receiving.underlay_ip}


@pytest.mark.xfail(
    strict=True,
    reason="not yet: a connection open across a Gateway move breaks (docs/operations.md, Keeping traffic up)",
)
async def test_a_connection_open_across_a_single_active_move_still_carries_data_while_the_old_gateway_retires(
    topology: Topology,
) -> None:
    """A drain as it moves a long-lived connection: west's Gateway hands over and moves to the
    backend's Node (a drain evicts the Pods of the Node it drains, so the backend is elsewhere);
    west's Nodes learn first, east a moment later. The connection was translated by the old
    Gateway; it should still carry a line there and back at each step while that one retires.

    It does not (each step was looked at alone): once west has moved, the backend's Node, now the
    Gateway, sends the replies straight back to east untranslated, since the translation is the
    old Gateway's; and once east has moved too, the new Gateway cannot translate the connection
    afresh, because it already tracks it as handed over by the old one (the same reply
    direction). New connections are answered all along (the tests above)."""
    west = topology.clusters["west"]
    leaving, staying = west.nodes
    driver = ClusterSetDriver(topology, active_active={"east": ("east-a", "east-b")}, retire_seconds=RETIRE_SECONDS)
    try:
        await fake_kube_proxy(west, staying.pod.ip)
        await driver.sync()
        client = topology.clusters["east"].node("east-c").pod.netns
        async with peer_reporting_server(staying.pod.netns, echo=True):
            flows = [await open_reported(client, service_ip(west), port=80) for _ in range(4)]

            async def carried() -> list[bool]:
                return [await echoes(reader, writer) for _, reader, writer in flows]

            try:
                assert await carried() == [True] * 4
                driver.handing_over.add(leaving.name)
                await driver.sync("west")
                assert await carried() == [True] * 4, "handing over"
                driver.handing_over.discard(leaving.name)
                driver.move_gateway("west", staying.name)
                await driver.sync("west")
                assert await carried() == [True] * 4, "west moved"
                await driver.sync("east")
                assert await carried() == [True] * 4, "east moved"
            finally:
                for _, _, writer in flows:
                    writer.close()
    finally:
        await driver.stop_all(cleanup=True)


@pytest.fixture
async def overlapping() -> AsyncIterator[Topology]:
    async with built_topology(same_ranges={"west": "east"}) as topo:
        yield topo


async def test_a_globally_addressed_gateway_moved_away_answers_what_east_still_sends_it(overlapping: Topology) -> None:
    """Overlapping ranges: east and west are globally addressed, so what east's Gateway sends
    comes from east's egress address, not its Gateway IP, and goes to west's global block."""
    east, west = overlapping.clusters["east"], overlapping.clusters["west"]
    leaving, staying = west.nodes
    driver = global_driver(overlapping, retire_seconds=RETIRE_SECONDS)
    try:
        await shadow_service(west, SERVICE_GLOBAL["west"], staying.pod.ip)
        await driver.sync()
        client = east.nodes[1].pod.netns
        async with peer_reporting_server(staying.pod.netns):
            assert await seen_source(client, SERVICE_GLOBAL["west"], port=80) == EGRESS["east"]
            driver.move_gateway("west", staying.name)
            await driver.sync("west")
            seen = {await seen_source(client, SERVICE_GLOBAL["west"], port=80) for _ in range(FLOWS)}
            assert seen == {leaving.underlay_ip}
            await driver.sync("east", "north")
            assert await seen_source(client, SERVICE_GLOBAL["west"], port=80) == EGRESS["east"]
    finally:
        await driver.stop_all(cleanup=True)


async def test_a_gateway_handing_over_keeps_the_replies_of_what_it_took_when_its_successor_switches_first(
    topology: Topology,
) -> None:
    """A drain, step by step: the member says west's Gateway hands over, then moves it. The Node
    that becomes the Gateway may apply that before the old one and before east: requests the old
    one still takes are translated there, and their backend's replies must not leave through the
    new Gateway, which never saw them. Handing over, the old one masquerades what arrives, so the
    replies come back to it whichever Node answers."""
    west = topology.clusters["west"]
    leaving, staying = west.nodes
    driver = ClusterSetDriver(topology, active_active={"east": ("east-a", "east-b")}, retire_seconds=RETIRE_SECONDS)
    async with _serving(driver, staying):
        driver.handing_over.add(leaving.name)
        await driver.sync("west")
        assert await _sources(topology, staying) == {leaving.underlay_ip}
        driver.handing_over.discard(leaving.name)
        driver.move_gateway("west", staying.name)
        successor = await driver.sync_node(staying.name)
        assert successor.desired is not None and successor.desired.role is Role.GATEWAY
        # The old Gateway has not heard yet, nor has east: every request still reaches the old one.
        assert await _sources(topology, staying) == {leaving.underlay_ip}

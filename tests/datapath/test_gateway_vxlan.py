"""Cross-cluster traffic through VXLAN Gateways, driven through DatapathAgent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from agent.inputs import AgentInputs
from agent.runner import DatapathAgent, run_datapath_agent
from agent.state import DesiredDatapath, Role
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.inspect_kernel import footprint
from tests.datapath.topology import ClusterNs, Topology, sh
from tests.datapath.traffic import peer_reporting_server, seen_source, unreachable

SERVICE_IP_OFFSET = "0.10"  # west's Service 10.102.0.10 -> its Pod on west-b


def service_ip(cluster: ClusterNs) -> str:
    return cluster.service_cidr.replace("0.0/16", SERVICE_IP_OFFSET)


async def fake_kube_proxy(cluster: ClusterNs, target_pod_ip: str) -> None:
    """Stand in for kube-proxy: DNAT the cluster's Service IP to one Pod on every Node."""
    rules = f"""
    table ip mctest_kube_proxy {{
      chain prerouting {{ type nat hook prerouting priority dstnat; policy accept;
        ip daddr {service_ip(cluster)} tcp dport 80 dnat to {target_pod_ip}:7070
      }}
    }}
    """
    for node in cluster.nodes:
        await sh("ip", "netns", "exec", node.netns, "nft", "-f", "-", stdin=rules.encode())


async def test_a_pod_in_east_reaches_a_pod_in_west_which_sees_easts_gateway_ip(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    await clusterset.sync()
    east, west = topology.clusters["east"], topology.clusters["west"]
    east_gateway = east.nodes[0]
    for target in west.nodes:
        async with peer_reporting_server(target.pod.netns):
            assert await seen_source(east_gateway.pod.netns, target.pod.ip) == east_gateway.underlay_ip


async def test_every_cluster_pair_is_connected_both_ways(clusterset: ClusterSetDriver, topology: Topology) -> None:
    await clusterset.sync()
    clusters = list(topology.clusters.values())
    for source in clusters:
        for target in clusters:
            if source is target:
                continue
            pod = target.nodes[1].pod
            async with peer_reporting_server(pod.netns):
                seen = await seen_source(source.nodes[1].pod.netns, pod.ip)
            assert seen == source.nodes[0].underlay_ip, f"{source.cluster_id} -> {target.cluster_id}"


async def test_a_pod_in_east_reaches_a_west_service_ip_through_both_gateways(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    east, west = topology.clusters["east"], topology.clusters["west"]
    backend = west.nodes[1].pod
    await fake_kube_proxy(west, backend.ip)
    await clusterset.sync()
    async with peer_reporting_server(backend.netns):
        assert await seen_source(east.nodes[0].pod.netns, service_ip(west), port=80) == east.nodes[0].underlay_ip


async def test_a_pod_on_easts_plain_node_goes_through_the_tunnel_to_easts_gateway(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    east, west = topology.clusters["east"], topology.clusters["west"]
    plain = east.nodes[1]
    backend = west.nodes[1].pod
    await fake_kube_proxy(west, backend.ip)
    outcomes = await clusterset.sync()
    desired = outcomes[plain.name].desired
    assert desired is not None
    assert desired.role is Role.MEMBER
    async with peer_reporting_server(backend.netns):
        assert await seen_source(plain.pod.netns, backend.ip) == east.nodes[0].underlay_ip
        assert await seen_source(plain.pod.netns, service_ip(west), port=80) == east.nodes[0].underlay_ip


async def test_a_second_reconcile_with_the_same_inputs_changes_nothing(clusterset: ClusterSetDriver) -> None:
    first = await clusterset.sync()
    assert all(outcome.changes for outcome in first.values())
    second = await clusterset.sync()
    assert {name: outcome.changes for name, outcome in second.items()} == {name: () for name in second}


async def test_traffic_recovers_when_wests_gateway_moves_to_another_node(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    east, west = topology.clusters["east"], topology.clusters["west"]
    target = west.nodes[0].pod  # lives on the Node that stops being the Gateway
    await clusterset.sync()
    async with peer_reporting_server(target.netns):
        assert await seen_source(east.nodes[1].pod.netns, target.ip) == east.nodes[0].underlay_ip
        clusterset.move_gateway("west", west.nodes[1].name)
        clusterset.move_gateway("east", east.nodes[1].name)
        await clusterset.sync()
        assert await seen_source(east.nodes[0].pod.netns, target.ip) == east.nodes[1].underlay_ip
    async with peer_reporting_server(west.nodes[1].pod.netns):
        assert await seen_source(east.nodes[0].pod.netns, west.nodes[1].pod.ip) == east.nodes[1].underlay_ip


async def test_when_cluster_info_imports_go_traffic_stops_and_the_agents_state_is_gone(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    east, west = topology.clusters["east"], topology.clusters["west"]
    target = west.nodes[1].pod
    await clusterset.sync()
    async with peer_reporting_server(target.netns):
        assert await seen_source(east.nodes[1].pod.netns, target.ip)
        clusterset.withdraw("east", "west")
        await clusterset.sync()
        assert await unreachable(east.nodes[1].pod.netns, target.ip)
        assert await unreachable(east.nodes[0].pod.netns, target.ip)
    for node in east.nodes:
        routes = await sh("ip", "-n", node.netns, "route", "show", "table", "all")
        assert "10.2.0.0/16" not in routes and "10.102.0.0/16" not in routes
        assert west.nodes[0].underlay_ip + " via" not in routes
    gateway_nft = await sh("ip", "netns", "exec", east.nodes[0].netns, "nft", "list", "table", "ip", "mchub")
    assert "10.102.0.0" not in gateway_nft and "10.2.0.0" not in gateway_nft
    clusterset.withdraw("east", "north")
    await clusterset.sync()
    for node in east.nodes:
        assert (await footprint(node.netns)).empty, node.name


async def test_cleanup_leaves_nothing_of_the_agent(clusterset: ClusterSetDriver, topology: Topology) -> None:
    await clusterset.sync()
    east_gateway = topology.clusters["east"].nodes[0]
    before = await footprint(east_gateway.netns)
    assert before.links and before.routes and before.rules and before.nft_tables
    await clusterset.stop_all(cleanup=True)
    leftovers = {
        node.name: await footprint(node.netns) for cluster in topology.clusters.values() for node in cluster.nodes
    }
    assert {name: fp for name, fp in leftovers.items() if not fp.empty} == {}


async def test_cleanup_spares_other_tables_links_and_rules(clusterset: ClusterSetDriver, topology: Topology) -> None:
    east = topology.clusters["east"]
    node = east.nodes[0]
    await sh("ip", "netns", "exec", node.netns, "nft", "add", "table", "ip", "someone_else")
    await sh("ip", "-n", node.netns, "rule", "add", "pref", "28010", "lookup", "100")
    await clusterset.sync()
    await clusterset.stop_all(cleanup=True)
    assert "someone_else" in await sh("ip", "netns", "exec", node.netns, "nft", "list", "tables")
    assert "28010" in await sh("ip", "-n", node.netns, "rule", "show")
    assert "ul0" in await sh("ip", "-n", node.netns, "link", "show")


async def test_an_agent_restarted_without_cleanup_adopts_its_state_without_changes(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    await clusterset.sync()
    await clusterset.stop_all(cleanup=False)
    fresh = ClusterSetDriver(topology)
    try:
        outcomes = await fresh.sync()
        assert {n: o.changes for n, o in outcomes.items()} == {n: () for n in outcomes}
    finally:
        await fresh.stop_all(cleanup=True)


async def test_the_tunnel_mtu_leaves_room_for_the_vxlan_headers(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    await clusterset.sync()
    for node in topology.clusters["east"].nodes:
        (link,) = json.loads(await sh("ip", "-n", node.netns, "-j", "link", "show", "mc-tun0"))
        assert link["mtu"] == 1500 - 50


async def test_run_datapath_agent_applies_each_new_input_and_cleans_up_when_they_end(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    east = topology.clusters["east"]
    node = east.nodes[0]
    agent = DatapathAgent(clusterset.config_for(node), netns=node.netns)
    with_west = clusterset.inputs_for(east, node)
    clusterset.withdraw("east", "west")
    without_west = clusterset.inputs_for(east, node)
    applied: list[DesiredDatapath | None] = []

    async def inputs() -> AsyncIterator[AgentInputs]:
        for current in (with_west, without_west):
            yield current
            applied.append(agent.desired)

    await run_datapath_agent(agent, inputs(), cleanup_on_stop=True)
    assert [d.remote_clusters for d in applied if d is not None] == [("north", "west"), ("north",)]
    assert (await footprint(node.netns)).empty


async def test_when_the_remote_gateway_moves_its_old_tunnel_entries_go_only_after_the_routes_left_it(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    """A packet routed to west's old Gateway while east's Gateway reconciles must still find that
    Gateway's neighbour and FDB entries, or the tunnel drops it (on real nodes: the SYN of one
    request per drain, counted as the tunnel's tx_dropped)."""
    east, west = topology.clusters["east"], topology.clusters["west"]
    await clusterset.sync()
    old = west.nodes[0].underlay_ip
    clusterset.move_gateway("west", west.nodes[1].name)
    changes = list((await clusterset.sync_node(east.nodes[0].name)).changes)
    routing = [i for i, change in enumerate(changes) if change.startswith(("set route", "del route"))]
    removals = [i for i, change in enumerate(changes) if change.startswith(("del neigh", "del fdb")) and old in change]
    assert routing and len(removals) == 2, changes
    assert max(routing) < min(removals), changes

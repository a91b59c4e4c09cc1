"""Which way packets addressed to a remote Gateway IP go.

Table REPLY routes every remote Gateway IP into the tunnel (or WireGuard). That is right
for the replies of cross-cluster connections, which arrived SNATed to the remote
Gateway IP and must go back the way they came; it is wrong for connections that local
Pods start towards that address, which is an ordinary underlay address of another
cluster's Node (a hub, a NodePort there): those must take the underlay like any other
traffic leaving the cluster.

The underlay of the topology is one flat network, so a reply that skipped the tunnel
would still arrive (conntrack undoes the SNAT whatever the device) and a connection
hijacked into the tunnel would still work (the remote Gateway routes our Pod CIDRs back
through it). Only counters at the receiving end tell the paths apart.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from tests.datapath.conftest import requires_wireguard
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.topology import ClusterNs, NodeNs, Topology, sh
from tests.datapath.traffic import ECHO_PORT, eventually_seen_source, peer_reporting_server

_ARRIVALS = "mctest_arrivals"


async def count_arrivals(node: NodeNs, tunnel_device: str, match: str) -> None:
    """Count, before anything else sees them, the packets matching ``match`` that enter
    ``node`` through ``tunnel_device`` (counter "tunnel") or the underlay (counter "underlay")."""
    rules = f"""
    table ip {_ARRIVALS} {{
      counter tunnel {{ }}
      counter underlay {{ }}
      chain prerouting {{ type filter hook prerouting priority raw - 10; policy accept;
        iifname "{tunnel_device}" {match} counter name "tunnel"
        iifname "ul0" {match} counter name "underlay"
      }}
    }}
    """
    await sh("ip", "netns", "exec", node.netns, "nft", "-f", "-", stdin=rules.encode())


async def arrivals(node: NodeNs) -> dict[str, int]:
    listed = json.loads(
        await sh("ip", "netns", "exec", node.netns, "nft", "-j", "list", "counters", "table", "ip", _ARRIVALS)
    )
    return {o["counter"]["name"]: o["counter"]["packets"] for o in listed["nftables"] if "counter" in o}


async def primary_cni_masquerade(cluster: ClusterNs) -> None:
    """What primary CNIs do (Calico natOutgoing, flannel ipMasq, Antrea's Node SNAT):
    Pod traffic leaving the cluster over the underlay takes the Node's address."""
    rules = f"""
    table ip mctest_primary_cni {{
      chain postrouting {{ type nat hook postrouting priority srcnat; policy accept;
        oifname "ul0" ip saddr {cluster.pod_cidr} ip daddr != {cluster.pod_cidr} masquerade
      }}
    }}
    """
    for node in cluster.nodes:
        await sh("ip", "netns", "exec", node.netns, "nft", "-f", "-", stdin=rules.encode())


@pytest.fixture
async def node_server(topology: Topology) -> AsyncIterator[NodeNs]:
    """An echo server on west's Gateway Node itself (all addresses, so its underlay one)."""
    west_gateway = topology.clusters["west"].nodes[0]
    async with peer_reporting_server(west_gateway.netns):
        yield west_gateway


def tunnel_device(driver: ClusterSetDriver, node: NodeNs) -> str:
    return driver.topo.wireguard_name(node) if driver.wireguard else "mc-tun0"


async def assert_pod_reaches_a_remote_gateway_over_the_underlay(
    driver: ClusterSetDriver, source: NodeNs, server: NodeNs
) -> None:
    east = driver.topo.clusters["east"]
    await driver.sync()
    await primary_cni_masquerade(east)
    await count_arrivals(server, tunnel_device(driver, server), f"ip daddr {server.underlay_ip} tcp dport {ECHO_PORT}")
    seen = await eventually_seen_source(source.pod.netns, server.underlay_ip)
    counted = await arrivals(server)
    assert counted["tunnel"] == 0, f"{source.name}'s Pod was routed into the tunnel: {counted}"
    assert counted["underlay"] > 0, counted
    assert seen == source.underlay_ip  # masqueraded by the "primary CNI", never SNATed by the agent


@pytest.mark.parametrize("source_index", [0, 1], ids=["pod-on-gateway-node", "pod-on-plain-node"])
async def test_a_connection_a_pod_starts_to_a_remote_gateway_ip_takes_the_underlay(
    clusterset: ClusterSetDriver, topology: Topology, node_server: NodeNs, source_index: int
) -> None:
    source = topology.clusters["east"].nodes[source_index]
    await assert_pod_reaches_a_remote_gateway_over_the_underlay(clusterset, source, node_server)


@requires_wireguard
async def test_with_wireguard_a_connection_a_pod_starts_to_a_remote_gateway_ip_takes_the_underlay(
    wireguard_clusterset: ClusterSetDriver, topology: Topology, node_server: NodeNs
) -> None:
    source = topology.clusters["east"].nodes[0]
    await assert_pod_reaches_a_remote_gateway_over_the_underlay(wireguard_clusterset, source, node_server)


async def assert_replies_come_back_through_the_tunnel(driver: ClusterSetDriver, target: NodeNs) -> None:
    east_gateway = driver.topo.clusters["east"].nodes[0]
    await driver.sync()
    await count_arrivals(east_gateway, tunnel_device(driver, east_gateway), f"ip saddr {target.pod.ip}")
    async with peer_reporting_server(target.pod.netns):
        seen = await eventually_seen_source(east_gateway.pod.netns, target.pod.ip)
    assert seen == east_gateway.underlay_ip
    counted = await arrivals(east_gateway)
    assert counted["underlay"] == 0, f"replies of {target.name}'s Pod skipped the tunnel: {counted}"
    assert counted["tunnel"] > 0, counted


@pytest.mark.parametrize("target_index", [0, 1], ids=["pod-on-gateway-node", "pod-on-plain-node"])
async def test_replies_of_cross_cluster_connections_come_back_through_the_tunnel(
    clusterset: ClusterSetDriver, topology: Topology, target_index: int
) -> None:
    await assert_replies_come_back_through_the_tunnel(clusterset, topology.clusters["west"].nodes[target_index])


@requires_wireguard
@pytest.mark.parametrize("target_index", [0, 1], ids=["pod-on-gateway-node", "pod-on-plain-node"])
async def test_with_wireguard_replies_of_cross_cluster_connections_come_back_through_wireguard(
    wireguard_clusterset: ClusterSetDriver, topology: Topology, target_index: int
) -> None:
    target = topology.clusters["west"].nodes[target_index]
    await assert_replies_come_back_through_the_tunnel(wireguard_clusterset, target)


async def test_the_not_iif_lo_rule_of_an_older_agent_is_replaced_by_the_fwmark_rule(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    gateway = topology.clusters["east"].nodes[0]
    await clusterset.sync()
    await sh("ip", "-n", gateway.netns, "rule", "del", "pref", "28002")
    old = ("pref", "28002", "not", "iif", "lo", "lookup", "28004", "protocol", "109")
    await sh("ip", "-n", gateway.netns, "rule", "add", *old)
    outcomes = await clusterset.sync()
    assert outcomes[gateway.name].changes == (
        "del rule pref 28002 table 28004",
        "add rule pref 28002 fwmark 0x2000/0x2000 table 28004",
    )
    rules = [line for line in (await sh("ip", "-n", gateway.netns, "rule", "show")).splitlines() if "28004" in line]
    assert rules == ["28002:\tfrom all fwmark 0x2000/0x2000 lookup 28004 proto 109"]
    again = await clusterset.sync()
    assert {n: o.changes for n, o in again.items()} == {n: () for n in again}

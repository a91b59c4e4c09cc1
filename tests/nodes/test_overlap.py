"""Overlapping CIDRs on real nodes (issue 26): the node ClusterSet's east and west share one Pod
CIDR and one Service CIDR, north has its own, and the hub has a global CIDR (hack/nodeset).

What this module shows: the hub makes east and west globally addressed and leaves north direct,
and the leader's ClusterSet, the ClusterInfoImports and ``mcctl get clusterinfo`` say so; with
``endpointIPType: ClusterIP`` an east Pod reaches west's exported Service through west's global
address (the shadow Service's externalIP, translated by kube-proxy on west's Gateway) and
north's at its own ClusterIP. The other node tests run on this ClusterSet too, so they prove
their paths through NAT (east and west) and direct (north): test_services.py (ClusterSet IP,
clusterset.local names, hub down, Gateway failover), test_pod_ip.py (Pods at their global
addresses, north's at their own, the addresses servers see), test_policy.py (the client's
identity through the SNAT), test_wireguard.py and the upstream conformance suite.
"""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from pathlib import Path

import pytest

from hack.nodeset.clusters import Cluster
from hack.nodeset.clusterset import GLOBAL_CIDR, Mode, NodeClusterSet
from hack.nodeset.install import CLUSTERSET, LEADER_NS, MEMBER_NS, cluster_id
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import client_pod, ensure_namespace, fetch_until, peer_seen, peer_server, web_server
from tests.nodes.conftest import Members, endpoint_ips, global_addresses, in_mode, overlapping

NS = "overlap"


class World(Members):
    def block(self, cluster: Cluster) -> ipaddress.IPv4Network:
        network = global_addresses(cluster).network
        assert network is not None, f"{cluster.name} has no global block"
        return network


def _addressed(cluster: Cluster) -> bool:
    addresses = global_addresses(cluster)
    return addresses.globally_addressed and addresses.network is not None


@pytest.fixture(scope="module")
def world(node_clusterset: NodeClusterSet) -> World:
    clusterset = in_mode(overlapping(node_clusterset), Mode())
    east, west, north = (clusterset.cluster(name) for name in ("east", "west", "north"))
    for cluster in (east, west, north):
        ensure_namespace(cluster, NS)
    for cluster in (east, west):
        until(f"{cluster.name} globally addressed", lambda cluster=cluster: _addressed(cluster))
    web_server(west, NS, "web", replicas=2)
    web_server(north, NS, "nweb")
    peer_server(west, NS, "peer", node=west.nodes[-1].name)
    client_pod(east, NS, "client", node=east.nodes[-1].name)
    client_pod(east, NS, "client-on-gateway", node=east.nodes[0].name)
    return World.of(clusterset)


def _endpoints(cluster: Cluster, name: str) -> set[str]:
    return endpoint_ips(cluster, NS, name)


def _west_pods(world: World) -> set[str]:
    pods = world.west.kubectl.json("get", "pods", "-n", NS, "-l", "app=web")["items"]
    return {pod["metadata"]["name"] for pod in pods}


def _global_ip(cluster: Cluster, name: str) -> str:
    """The one externalIP of the shadow Service the member keeps for its exported Service."""
    return until(
        f"the shadow Service of {name} in {cluster.name}",
        lambda: cluster.kubectl(
            "get",
            "service",
            f"mchub-global-{name}",
            "-n",
            NS,
            "--ignore-not-found",
            "-o",
            "jsonpath={.spec.externalIPs[0]}",
        ),
    )


def _clusterset_ip(cluster: Cluster, name: str) -> str:
    return until(
        f"ServiceImport {name} in {cluster.name}",
        lambda: cluster.kubectl("get", "serviceimport", name, "-n", NS, "-o", "jsonpath={.spec.ips[0]}"),
    )


def test_the_hub_makes_east_and_west_globally_addressed_and_leaves_north_direct(world: World) -> None:
    status = world.clusterset.leader.kubectl.json("get", "clusterset", CLUSTERSET, "-n", LEADER_NS)["status"]
    (condition,) = [c for c in status["conditions"] if c["type"] == "GlobalAddressing"]
    assert condition["status"] == "True", condition
    assert cluster_id("east") in condition["message"] and cluster_id("west") in condition["message"]
    assert cluster_id("north") not in condition["message"]
    east_block, west_block = world.block(world.east), world.block(world.west)
    assert east_block.subnet_of(ipaddress.IPv4Network(GLOBAL_CIDR)) and not east_block.overlaps(west_block)
    assert not _addressed(world.north)
    imports = world.north.kubectl.json("get", "clusterinfoimport", "-n", MEMBER_NS)["items"]
    stamped = {
        i["spec"]["clusterID"]: (i["spec"].get("globalCIDR"), i["spec"].get("globallyAddressed")) for i in imports
    }
    assert stamped == {cluster_id("east"): (str(east_block), True), cluster_id("west"): (str(west_block), True)}
    west_in_east = world.east.kubectl.json(
        "get", "clusterinfoimport", f"{cluster_id('west')}-clusterinfo", "-n", MEMBER_NS
    )
    conflict = [c for c in west_in_east["status"]["conditions"] if c["type"] == "CIDRConflict"]
    assert conflict and conflict[0]["status"] == "False" and conflict[0]["reason"] == "GloballyAddressed"


def test_mcctl_get_clusterinfo_shows_the_blocks_and_where_nat_applies(world: World) -> None:
    mcctl = Path(sys.executable).with_name("mcctl")  # the console script beside this Python
    shown = subprocess.run(
        [str(mcctl), "get", "clusterinfo", "--kubeconfig", str(world.east.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line for line in shown.stdout.splitlines()[1:] if line.strip()}
    assert f"{world.block(world.west)} " in rows[cluster_id("west")] and "(NAT)" in rows[cluster_id("west")]
    assert "own ranges" in rows[cluster_id("north")]
    assert "(NAT)" in rows[cluster_id("east")]  # the row of the cluster asked, from its own record


@pytest.mark.parametrize("pod", ["client", "client-on-gateway"])
def test_an_east_pod_reaches_wests_service_by_its_clusterset_ip_and_replies_come_back(world: World, pod: str) -> None:
    global_ip = _global_ip(world.west, "web")
    assert ipaddress.IPv4Address(global_ip) in world.block(world.west)
    until(
        "antrea-mc-web in east leads to west's global address",
        lambda: _endpoints(world.east, "antrea-mc-web") == {global_ip},
    )
    clusterset_ip = _clusterset_ip(world.east, "web")
    answers = {fetch_until(world.east, NS, pod, f"http://{clusterset_ip}/") for _ in range(4)}
    assert answers <= _west_pods(world)


def test_wests_service_is_at_its_global_address_for_north_too(world: World) -> None:
    """Everyone reaches a globally addressed member through its block, north included."""
    global_ip = _global_ip(world.west, "web")
    until(
        "antrea-mc-web in north leads to west's global address",
        lambda: _endpoints(world.north, "antrea-mc-web") == {global_ip},
    )


def test_an_east_pod_reaches_norths_service_at_its_own_cluster_ip(world: World) -> None:
    """North's ranges are its own: its export keeps its ClusterIP, routed as it is."""
    north_ip = world.north.kubectl("get", "service", "nweb", "-n", NS, "-o", "jsonpath={.spec.clusterIP}")
    assert ipaddress.IPv4Address(north_ip) not in ipaddress.IPv4Network(GLOBAL_CIDR)
    until(
        "antrea-mc-nweb in east leads to north's ClusterIP",
        lambda: _endpoints(world.east, "antrea-mc-nweb") == {north_ip},
    )
    north_pods = {
        p["metadata"]["name"] for p in world.north.kubectl.json("get", "pods", "-n", NS, "-l", "app=nweb")["items"]
    }
    assert fetch_until(world.east, NS, "client", f"http://{_clusterset_ip(world.east, 'nweb')}/") in north_pods


def test_in_cluster_ip_mode_wests_server_sees_its_gateway_as_kube_proxy_masquerades_external_ips(
    world: World,
) -> None:
    """kube-proxy masquerades what it translates for an external IP (as it masquerades traffic
    to a ClusterIP from outside the Pod CIDR), so west's Pod sees its own Gateway node, and its
    answer goes back through it and the tunnel to east's egress address."""
    seen = until(
        "west's peer answers east", lambda: peer_seen(world.east, NS, "client", _clusterset_ip(world.east, "peer"))
    )
    gateway = world.west.kubectl.json("get", "gateway", "-n", MEMBER_NS)["items"][0]
    assert seen == gateway["internalIP"]

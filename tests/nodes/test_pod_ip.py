"""Pod IPs across clusters (issue 24, item 3; issue 26): with ``endpointIPType: PodIP`` the
imported Service's endpoints are the exporter's Pods, and with ``enablePodToPodConnectivity`` an
east Pod on a node that is not the Gateway reaches each of them.

West's ranges overlap east's (tests/nodes/conftest.py): a west Pod's own IP is an address of
east's own Pod CIDR, so west's Pods are listed and reached at their global addresses, which
west's agent translates to the Pods. North has ranges of its own: its Pods are listed and
reached at their own IPs, the direct Pod-to-Pod path. On clusters whose ranges do not overlap
(``--plain``, MCHUB_E2E_CLUSTERS) west's Pods are reached at their own IPs too.
"""

from __future__ import annotations

import ipaddress

import pytest

from hack.nodeset.clusters import Cluster
from hack.nodeset.clusterset import Mode, NodeClusterSet
from hack.nodeset.install import MEMBER_NS
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import client_pod, ensure_namespace, fetch_until, peer_seen, peer_server, web_server
from tests.nodes.conftest import Members, endpoint_ips, global_addresses, in_mode, overlapping, record

NS = "pod-ip"
MODE = Mode(endpoint_ip_type="PodIP", pod_to_pod=True)


@pytest.fixture(scope="module")
def world(node_clusterset: NodeClusterSet) -> Members:
    clusterset = in_mode(node_clusterset, MODE)
    east, west, north = (clusterset.cluster(name) for name in ("east", "west", "north"))
    for cluster in (east, west, north):
        ensure_namespace(cluster, NS)
    web_server(west, NS, "web", replicas=2)
    web_server(north, NS, "nweb")
    client_pod(east, NS, "client", node=east.nodes[-1].name)
    return Members.of(clusterset)


def _pods(cluster: Cluster, app: str) -> dict[str, str]:
    """Pod IP -> Pod name of the Pods labelled ``app``."""
    pods = cluster.kubectl.json("get", "pods", "-n", NS, "-l", f"app={app}")["items"]
    return {pod["status"]["podIP"]: pod["metadata"]["name"] for pod in pods if pod["status"].get("podIP")}


def _reached_at(exporter: Cluster, app: str, importer: Cluster) -> dict[str, str]:
    """Address -> Pod name of the exporter's Pods, once the importer's antrea-mc-<app> lists
    exactly those addresses: each Pod's global address if the exporter is globally addressed,
    its own IP otherwise."""

    def listed() -> dict[str, str] | None:
        pods, addresses = _pods(exporter, app), global_addresses(exporter)
        if addresses.globally_addressed:
            pods = {addresses.pods[ip]: name for ip, name in pods.items() if ip in addresses.pods}
        return pods if pods and endpoint_ips(importer, NS, f"antrea-mc-{app}") == set(pods) else None

    return until(f"antrea-mc-{app} in {importer.name} lists {exporter.name}'s Pods", listed)


def test_the_imported_service_lists_west_pods_and_answers_from_east(world: Members) -> None:
    reached = _reached_at(world.west, "web", world.east)
    assert len(reached) == 2
    west = global_addresses(world.west)
    if world.clusterset.overlapping:  # not the Pods' own IPs: those are east's own range
        assert west.globally_addressed and west.network is not None
        assert all(ipaddress.IPv4Address(ip) in west.network for ip in reached)
    clusterset_ip = until(
        "ServiceImport web",
        lambda: world.east.kubectl("get", "serviceimport", "web", "-n", NS, "-o", "jsonpath={.spec.ips[0]}"),
    )
    answers = {fetch_until(world.east, NS, "client", f"http://{clusterset_ip}/") for _ in range(6)}
    assert answers <= set(reached.values())


def test_an_east_pod_off_the_gateway_reaches_each_west_pod_at_its_address(world: Members) -> None:
    assert world.east.nodes[-1].name != world.east.nodes[0].name, "east needs a node besides its Gateway"
    for ip, name in _reached_at(world.west, "web", world.east).items():
        assert fetch_until(world.east, NS, "client", f"http://{ip}/") == name


def test_an_east_pod_off_the_gateway_reaches_each_north_pod_by_its_own_ip(world: Members) -> None:
    """North's ranges are its own: no global address, its Pods' IPs are routed as they are."""
    reached = _reached_at(world.north, "nweb", world.east)
    assert reached == _pods(world.north, "nweb")
    for ip, name in reached.items():
        assert fetch_until(world.east, NS, "client", f"http://{ip}/") == name


def test_servers_see_a_globally_addressed_client_at_its_egress_address_and_a_direct_one_at_its_gateway(
    world: Members,
) -> None:
    """East's Gateway SNATs east's Pods to east's egress address, for west (through NAT) and
    north (direct) alike, so replies come back whatever the ranges; north is not globally
    addressed: its Gateway SNATs to its own IP."""
    overlapping(world.clusterset)
    peer_server(world.west, NS, "peer", node=world.west.nodes[-1].name)
    peer_server(world.north, NS, "npeer")
    client_pod(world.north, NS, "client", node=world.north.nodes[0].name)
    egress = global_addresses(world.east).egress_ip
    assert egress
    (west_peer,) = _reached_at(world.west, "peer", world.east)
    (north_peer,) = _reached_at(world.north, "npeer", world.east)
    assert until("west's peer answers east", lambda: peer_seen(world.east, NS, "client", west_peer)) == egress
    assert until("north's peer answers east", lambda: peer_seen(world.east, NS, "client", north_peer)) == egress
    (west_peer_from_north,) = _reached_at(world.west, "peer", world.north)
    north_gateway = world.north.kubectl.json("get", "gateway", "-n", MEMBER_NS)["items"][0]["gatewayIP"]
    seen = until("west's peer answers north", lambda: peer_seen(world.north, NS, "client", west_peer_from_north))
    assert seen == north_gateway
    record(overlap_west_saw_east_as=egress, overlap_west_saw_north_as=seen)

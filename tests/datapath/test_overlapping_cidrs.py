"""East and west with the same Pod and Service CIDRs, north with its own (issue 26): the hub made
east and west globally addressed, so each is reached through its global block and its Gateway
SNATs to its egress address; north stays direct. Driven through DatapathAgent in namespaces.

Blocks: east 242.0.0.0/20 (egress 242.0.0.1), west 242.0.16.0/20 (egress 242.0.16.1). Each
exports the Pod on its second Node (both 10.1.2.10) as the second host address of its block
(PodIP mode: the agent translates it) and, ClusterIP mode, a Service whose global address is an
externalIP kube-proxy translates (here a stand-in rule on every Node, as kube-proxy writes one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.datapath.conftest import requires_wireguard
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.policy_world import PolicyWorld, ingress_from_cluster_set
from tests.datapath.test_policy_enforcement import reaches
from tests.datapath.topology import ClusterNs, Topology, built_topology, sh
from tests.datapath.traffic import peer_reporting_server, seen_source

BLOCKS = {"east": "242.0.0.0/20", "west": "242.0.16.0/20"}
EGRESS = {"east": "242.0.0.1", "west": "242.0.16.1"}
POD_GLOBAL = {"east": "242.0.0.2", "west": "242.0.16.2"}
SERVICE_GLOBAL = {"east": "242.0.0.3", "west": "242.0.16.3"}


@pytest.fixture
async def overlapping() -> AsyncIterator[Topology]:
    async with built_topology(same_ranges={"west": "east"}) as topo:
        yield topo


def global_driver(topo: Topology, **options: object) -> ClusterSetDriver:
    driver = ClusterSetDriver(topo, **options)  # type: ignore[arg-type]
    driver.global_blocks.update(BLOCKS)
    for cluster_id in BLOCKS:
        exported = topo.clusters[cluster_id].nodes[1].pod
        driver.global_pods[cluster_id] = ((POD_GLOBAL[cluster_id], exported.ip),)
    return driver


@pytest.fixture
async def clusterset(overlapping: Topology) -> AsyncIterator[ClusterSetDriver]:
    driver = global_driver(overlapping)
    try:
        yield driver
    finally:
        await driver.stop_all(cleanup=True)


async def shadow_service(cluster: ClusterNs, global_ip: str, backend_ip: str) -> None:
    """kube-proxy's rule for an externalIP on every Node (the shadow Service of an export)."""
    rules = f"""
    table ip mctest_kube_proxy {{
      chain prerouting {{ type nat hook prerouting priority dstnat; policy accept;
        ip daddr {global_ip} tcp dport 80 dnat to {backend_ip}:7070
      }}
    }}
    """
    for node in cluster.nodes:
        await sh("ip", "netns", "exec", node.netns, "nft", "-f", "-", stdin=rules.encode())


async def test_the_two_clusters_share_their_ranges(overlapping: Topology) -> None:
    east, west = overlapping.clusters["east"], overlapping.clusters["west"]
    assert (east.pod_cidr, east.service_cidr) == (west.pod_cidr, west.service_cidr)
    assert east.nodes[1].pod.ip == west.nodes[1].pod.ip


async def test_an_east_pod_reaches_wests_pod_by_its_global_address_and_west_sees_easts_egress(
    clusterset: ClusterSetDriver, overlapping: Topology
) -> None:
    await clusterset.sync()
    east, west = overlapping.clusters["east"], overlapping.clusters["west"]
    async with peer_reporting_server(west.nodes[1].pod.netns):
        for client in east.nodes:  # from the Gateway Node and from the other Node
            assert await seen_source(client.pod.netns, POD_GLOBAL["west"]) == EGRESS["east"]
    async with peer_reporting_server(east.nodes[1].pod.netns):
        assert await seen_source(west.nodes[1].pod.netns, POD_GLOBAL["east"]) == EGRESS["west"]


async def test_a_service_exported_in_cluster_ip_mode_is_reached_by_its_global_address(
    clusterset: ClusterSetDriver, overlapping: Topology
) -> None:
    east, west = overlapping.clusters["east"], overlapping.clusters["west"]
    await shadow_service(west, SERVICE_GLOBAL["west"], west.nodes[1].pod.ip)
    await clusterset.sync()
    async with peer_reporting_server(west.nodes[1].pod.netns):
        assert await seen_source(east.nodes[1].pod.netns, SERVICE_GLOBAL["west"], port=80) == EGRESS["east"]


async def test_north_with_its_own_ranges_is_reached_directly_and_reaches_both_through_their_blocks(
    clusterset: ClusterSetDriver, overlapping: Topology
) -> None:
    await clusterset.sync()
    east, west, north = (overlapping.clusters[c] for c in ("east", "west", "north"))
    north_pod = north.nodes[1].pod
    async with peer_reporting_server(north_pod.netns):
        # North's Pod at its own address: no translation of the destination.
        assert await seen_source(east.nodes[1].pod.netns, north_pod.ip) == EGRESS["east"]
        assert await seen_source(west.nodes[1].pod.netns, north_pod.ip) == EGRESS["west"]
    for cluster in (east, west):
        async with peer_reporting_server(cluster.nodes[1].pod.netns):
            seen = await seen_source(north.nodes[1].pod.netns, POD_GLOBAL[cluster.cluster_id])
        assert seen == north.nodes[0].underlay_ip  # north is not globally addressed: its Gateway IP


async def test_the_shared_pod_address_stays_local_on_both_sides(
    clusterset: ClusterSetDriver, overlapping: Topology
) -> None:
    """No route to the other cluster's copy of the ranges: 10.1.2.10 is east's own Pod in east."""
    await clusterset.sync()
    east = overlapping.clusters["east"]
    own = east.nodes[1].pod
    async with peer_reporting_server(own.netns):
        assert await seen_source(east.nodes[0].pod.netns, own.ip) == east.nodes[0].pod.ip


async def test_routes_and_snat_follow_the_verdict_when_an_overlap_ends(
    clusterset: ClusterSetDriver, overlapping: Topology
) -> None:
    """The hub's verdict changes (say west left and came back with other ranges; here only the
    verdict): north then routes east's real ranges, and east SNATs to its Gateway IP again."""
    await clusterset.sync()
    east, north = overlapping.clusters["east"], overlapping.clusters["north"]
    clusterset.global_blocks.pop("east")
    clusterset.global_pods.pop("east")
    clusterset.withdraw("east", "west")
    clusterset.withdraw("north", "west")
    await clusterset.sync()
    async with peer_reporting_server(east.nodes[1].pod.netns):
        assert await seen_source(north.nodes[1].pod.netns, east.nodes[1].pod.ip) == north.nodes[0].underlay_ip
    async with peer_reporting_server(north.nodes[1].pod.netns):
        assert await seen_source(east.nodes[1].pod.netns, north.nodes[1].pod.ip) == east.nodes[0].underlay_ip


@requires_wireguard
async def test_wireguard_carries_the_global_addresses_too(overlapping: Topology) -> None:
    driver = global_driver(overlapping, wireguard=True)
    try:
        await driver.sync()
        east, west = overlapping.clusters["east"], overlapping.clusters["west"]
        async with peer_reporting_server(west.nodes[1].pod.netns):
            assert await seen_source(east.nodes[1].pod.netns, POD_GLOBAL["west"], deadline=10) == EGRESS["east"]
    finally:
        await driver.stop_all(cleanup=True)


async def test_policy_a_west_ingress_rule_still_sees_easts_identities_through_the_nat(overlapping: Topology) -> None:
    """The identity is taken from the Pod's address before the SNAT to the egress address and
    rides in the VNI; west matches its own Pod after translating its global address."""
    labels = {"east-a": {"role": "tenant"}, "east-b": {"role": "client"}}
    world = PolicyWorld(overlapping, labels=labels)
    driver = global_driver(overlapping, policy=world.compiled)
    east, west = overlapping.clusters["east"], overlapping.clusters["west"]
    try:
        await driver.sync()
        async with peer_reporting_server(west.nodes[1].pod.netns):
            assert await reaches(east.nodes[0].pod.netns, POD_GLOBAL["west"])
            assert await reaches(east.nodes[1].pod.netns, POD_GLOBAL["west"])
            world.policies["west"] = [ingress_from_cluster_set("no-tenants", "Drop", {"role": "tenant"})]
            await driver.sync()
            assert not await reaches(east.nodes[0].pod.netns, POD_GLOBAL["west"])
            assert await reaches(east.nodes[1].pod.netns, POD_GLOBAL["west"])
    finally:
        await driver.stop_all(cleanup=True)

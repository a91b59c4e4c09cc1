"""compute_desired with overlapping ranges: globally addressed remotes are routed by their global
block, a globally addressed cluster's Gateway SNATs to its egress address and translates its
exported Pods' global addresses (pure, no kernel)."""

from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Address, IPv4Network

import pytest

from agent.config import AgentConfig, TrafficEncryptionMode
from agent.desired import compute_desired
from agent.errors import InvalidInputsError
from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from agent.kube_inputs import build_inputs, remote_cluster
from agent.linux.nft import render_table
from agent.state import ExclusionReason, GlobalDnat, Route, RouteTable
from mcapi.global_addresses import GlobalAddresses

VXLAN = AgentConfig(enable_gateway=True, enable_pod_to_pod_connectivity=True)
WIREGUARD = replace(VXLAN, traffic_encryption_mode=TrafficEncryptionMode.WIREGUARD)
EAST_GW = ActiveGateway("east-a", gateway_ip="198.18.1.1", internal_ip="198.18.1.1")
# east and west share their ranges; north's are its own.
EAST_BLOCK, WEST_BLOCK, NORTH_BLOCK = "242.0.0.0/20", "242.0.16.0/20", "242.0.32.0/20"
WEST = RemoteCluster("west", "10.96.0.0/16", ("198.18.2.1",), ("10.1.0.0/16",), "d2VzdA==", global_cidr=WEST_BLOCK)
NORTH = RemoteCluster("north", "10.97.0.0/16", ("198.18.3.1",), ("10.3.0.0/16",), "bm9ydGg=")


def inputs_for(
    node: str = "east-a",
    *,
    addressed: bool = True,
    pods: tuple[tuple[str, str], ...] = (),
    remotes: tuple[RemoteCluster, ...] = (WEST, NORTH),
) -> AgentInputs:
    node_ip = {"east-a": "198.18.1.1", "east-b": "198.18.1.2"}[node]
    return AgentInputs(
        node=LocalNode(node, node_ip, ("10.1.0.0/24",)),
        cluster=LocalCluster(
            "east",
            "10.96.0.0/16",
            ("10.1.0.0/16",),
            global_cidr=EAST_BLOCK if addressed else None,
            global_pods=pods,
        ),
        gateway=EAST_GW,
        remotes=remotes,
        wireguard_public_key="ZWFzdA==",
    )


def remote_routes(routes: tuple[Route, ...]) -> dict[str, str]:
    return {str(r.destination): str(r.via) for r in routes if r.table is RouteTable.REMOTE}


def test_a_globally_addressed_remote_is_routed_by_its_global_block_and_a_distinct_one_directly() -> None:
    desired = compute_desired(inputs_for(), VXLAN)
    assert remote_routes(desired.routes) == {
        WEST_BLOCK: "198.18.2.1",
        "10.97.0.0/16": "198.18.3.1",
        "10.3.0.0/16": "198.18.3.1",
    }
    assert not desired.exclusions
    assert desired.snat is not None
    assert {str(n) for n in desired.snat.destinations} == {WEST_BLOCK, "10.97.0.0/16", "10.3.0.0/16"}


def test_the_gateway_of_a_globally_addressed_cluster_snats_to_its_egress_address() -> None:
    desired = compute_desired(inputs_for(), VXLAN)
    assert desired.snat is not None and desired.snat.to_address == IPv4Address("242.0.0.1")
    direct = compute_desired(inputs_for(addressed=False, remotes=(NORTH,)), VXLAN)
    assert direct.snat is not None and direct.snat.to_address == IPv4Address("198.18.1.1")


def test_other_nodes_route_global_blocks_to_their_gateway_and_keep_the_pod_source() -> None:
    desired = compute_desired(inputs_for("east-b", pods=(("242.0.0.2", "10.1.0.5"),)), VXLAN)
    assert remote_routes(desired.routes)[WEST_BLOCK] == "198.18.1.1"
    assert desired.snat is not None and desired.snat.to_address is None
    assert desired.global_dnat is None  # only the Gateway translates


def test_the_gateway_translates_the_exported_pods_global_addresses() -> None:
    pods = (("242.0.0.3", "10.1.0.6"), ("242.0.0.2", "10.1.0.5"))
    desired = compute_desired(inputs_for(pods=pods), VXLAN)
    assert desired.global_dnat == GlobalDnat(
        (
            (IPv4Address("242.0.0.2"), IPv4Address("10.1.0.5")),
            (IPv4Address("242.0.0.3"), IPv4Address("10.1.0.6")),
        )
    )
    commands = render_table(desired)
    assert commands is not None
    maps = [c["add"]["map"] for c in commands if "map" in c["add"]]
    assert maps == [
        {
            "family": "ip",
            "table": "mchub",
            "name": "global_pods",
            "type": "ipv4_addr",
            "map": "ipv4_addr",
            "elem": [["242.0.0.2", "10.1.0.5"], ["242.0.0.3", "10.1.0.6"]],
        }
    ]
    chains = {c["add"]["chain"]["name"]: c["add"]["chain"] for c in commands if "chain" in c["add"]}
    assert chains["global_dnat"]["hook"] == "prerouting" and chains["global_dnat"]["prio"] == -101


def test_a_cluster_that_is_not_globally_addressed_translates_nothing() -> None:
    desired = compute_desired(inputs_for(addressed=False, pods=(("242.0.0.2", "10.1.0.5"),), remotes=(NORTH,)), VXLAN)
    assert desired.global_dnat is None


def test_a_global_pod_address_outside_the_local_block_is_an_input_error() -> None:
    with pytest.raises(InvalidInputsError, match="outside the local global CIDR"):
        compute_desired(inputs_for(pods=(("242.0.16.2", "10.1.0.5"),)), VXLAN)


def test_without_global_addressing_the_overlapping_remote_is_excluded_as_before() -> None:
    west = replace(WEST, global_cidr=None)
    desired = compute_desired(inputs_for(addressed=False, remotes=(west, NORTH)), VXLAN)
    assert WEST_BLOCK not in remote_routes(desired.routes)
    reasons = {(e.cluster_id, e.reason) for e in desired.exclusions}
    assert ("west", ExclusionReason.OVERLAPS_LOCAL_CIDR) in reasons
    assert ("west", ExclusionReason.NO_ROUTABLE_CIDR) in reasons
    assert set(remote_routes(desired.routes)) == {"10.97.0.0/16", "10.3.0.0/16"}


def test_a_remote_block_overlapping_the_local_block_is_excluded() -> None:
    clash = replace(WEST, global_cidr="242.0.0.0/19")
    desired = compute_desired(inputs_for(remotes=(clash,)), VXLAN)
    assert desired.routes == ()
    assert any(e.reason is ExclusionReason.OVERLAPS_LOCAL_CIDR for e in desired.exclusions)


def test_wireguard_peers_of_a_globally_addressed_remote_allow_its_block_and_gateway_only() -> None:
    desired = compute_desired(inputs_for(), WIREGUARD)
    assert desired.wireguard is not None
    allowed = {p.endpoint: {str(n) for n in p.allowed_ips} for p in desired.wireguard.peers}
    assert allowed[IPv4Address("198.18.2.1")] == {WEST_BLOCK, "198.18.2.1/32"}
    assert desired.snat is not None and desired.snat.to_address == IPv4Address("242.0.0.1")


def test_the_kube_inputs_take_the_block_only_while_globally_addressed() -> None:
    spec = {
        "clusterID": "west",
        "serviceCIDR": "10.96.0.0/16",
        "gatewayInfos": [{"gatewayIP": "198.18.2.1"}],
        "globalCIDR": WEST_BLOCK,
    }
    assert remote_cluster({"spec": spec}).global_cidr is None
    assert remote_cluster({"spec": {**spec, "globallyAddressed": True}}).global_cidr == WEST_BLOCK
    node = {
        "metadata": {"name": "east-a"},
        "status": {"addresses": [{"type": "InternalIP", "address": "198.18.1.1"}]},
    }
    record = GlobalAddresses(EAST_BLOCK, True, {"web/web": "242.0.0.2"}, {"10.1.0.5": "242.0.0.3"})
    built = build_inputs(node, [], [], global_addresses={"data": record.to_data()})
    assert built is not None
    assert built.cluster.global_cidr == EAST_BLOCK
    assert built.cluster.global_pods == (("242.0.0.3", "10.1.0.5"),)
    off = GlobalAddresses(EAST_BLOCK, False, {}, {"10.1.0.5": "242.0.0.3"})
    built = build_inputs(node, [], [], global_addresses={"data": off.to_data()})
    assert built is not None and built.cluster.global_cidr is None and built.cluster.global_pods == ()


def test_the_global_addresses_record_reads_back_what_it_wrote_and_skips_garbage() -> None:
    record = GlobalAddresses(EAST_BLOCK, True, {"web/web": "242.0.0.2"}, {"10.1.0.5": "242.0.0.3"})
    data = record.to_data()
    assert data["egressIP"] == "242.0.0.1"
    assert GlobalAddresses.from_data(data) == record
    garbage = {**data, "pods": "10.1.0.5=242.0.0.3\nnot-an-ip=242.0.0.4\n10.1.0.7=nope\n", "globalCIDR": "x"}
    parsed = GlobalAddresses.from_data(garbage)
    assert parsed.pods == {"10.1.0.5": "242.0.0.3"} and parsed.block == ""
    assert IPv4Network(EAST_BLOCK).network_address + 1 == IPv4Address(record.egress_ip)

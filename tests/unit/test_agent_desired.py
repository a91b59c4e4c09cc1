"""compute_desired: every mode, removals, Gateway moves and excluded CIDRs (pure, no kernel)."""

from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Address, IPv4Network

import pytest

from agent.config import AgentConfig, TrafficEncryptionMode, TunnelConfig, WireGuardConfig
from agent.desired import compute_desired
from agent.errors import InvalidInputsError
from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from agent.linux.ownership import REPLY_MARK, RETURN_MARK
from agent.state import (
    RULE_PRIORITY,
    ExclusionReason,
    PolicyRule,
    ProbeTarget,
    ReplyMarking,
    Role,
    Route,
    RouteTable,
    TunnelPeer,
)
from agent.tunnel_mac import gateway_tunnel_mac, node_tunnel_mac

VXLAN = AgentConfig(enable_gateway=True)
VXLAN_P2P = AgentConfig(enable_gateway=True, enable_pod_to_pod_connectivity=True)
WIREGUARD = AgentConfig(
    enable_gateway=True,
    enable_pod_to_pod_connectivity=True,
    traffic_encryption_mode=TrafficEncryptionMode.WIREGUARD,
)
EAST_GW = ActiveGateway("east-a", gateway_ip="203.0.113.1", internal_ip="198.18.1.1")
WEST = RemoteCluster("west", "10.102.0.0/16", ("198.19.2.1",), ("10.2.0.0/16",), "d2VzdC1rZXk=")
NORTH = RemoteCluster("north", "10.103.0.0/16", ("198.19.3.1",), ("10.3.0.0/16",), "bm9ydGgta2V5")


def inputs_for(
    node: str = "east-a",
    *,
    gateway: ActiveGateway | None = EAST_GW,
    remotes: tuple[RemoteCluster, ...] = (WEST, NORTH),
    key: str | None = "ZWFzdC1rZXk=",
) -> AgentInputs:
    node_ip = {"east-a": "198.18.1.1", "east-b": "198.18.1.2"}[node]
    pod_cidr = {"east-a": "10.1.1.0/24", "east-b": "10.1.2.0/24"}[node]
    return AgentInputs(
        node=LocalNode(node, node_ip, (pod_cidr,)),
        cluster=LocalCluster("east", "10.101.0.0/16", ("10.1.0.0/16",)),
        gateway=gateway,
        remotes=remotes,
        wireguard_public_key=key,
    )


def net(text: str) -> IPv4Network:
    return IPv4Network(text)


def ip(text: str) -> IPv4Address:
    return IPv4Address(text)


def routes_by_table(routes: tuple[Route, ...], table: RouteTable) -> set[tuple[str, str | None, str]]:
    return {(str(r.destination), None if r.via is None else str(r.via), r.device) for r in routes if r.table == table}


def test_nothing_is_wanted_when_the_gateway_feature_is_disabled() -> None:
    desired = compute_desired(inputs_for(), AgentConfig(enable_gateway=False))
    assert desired.role is Role.DISABLED
    assert desired.is_empty


def test_nothing_is_wanted_while_the_cluster_has_no_active_gateway() -> None:
    desired = compute_desired(inputs_for(gateway=None), VXLAN)
    assert desired.role is Role.NO_GATEWAY
    assert desired.is_empty


def test_the_gateway_tunnels_remote_service_cidrs_to_each_remote_gateway() -> None:
    desired = compute_desired(inputs_for(), VXLAN)
    assert desired.role is Role.GATEWAY
    assert desired.tunnel is not None
    assert desired.tunnel.mac == gateway_tunnel_mac(ip("203.0.113.1"))
    assert routes_by_table(desired.routes, RouteTable.REMOTE) == {
        ("10.102.0.0/16", "198.19.2.1", "mc-tun0"),
        ("10.103.0.0/16", "198.19.3.1", "mc-tun0"),
    }
    assert set(desired.tunnel_peers) == {
        TunnelPeer(ip("198.19.2.1"), gateway_tunnel_mac(ip("198.19.2.1"))),
        TunnelPeer(ip("198.19.3.1"), gateway_tunnel_mac(ip("198.19.3.1"))),
    }
    assert desired.remote_clusters == ("north", "west")


def test_the_gateway_routes_replies_to_remote_gateway_ips_through_the_tunnel_for_marked_replies_only() -> None:
    desired = compute_desired(inputs_for(), VXLAN)
    assert routes_by_table(desired.routes, RouteTable.REPLY) == {
        ("198.19.2.1/32", "198.19.2.1", "mc-tun0"),
        ("198.19.3.1/32", "198.19.3.1", "mc-tun0"),
    }
    assert set(desired.rules) == {
        PolicyRule(RULE_PRIORITY[RouteTable.RETURN], RouteTable.RETURN, fwmark=RETURN_MARK),
        PolicyRule(RULE_PRIORITY[RouteTable.REPLY], RouteTable.REPLY, fwmark=REPLY_MARK),
        PolicyRule(RULE_PRIORITY[RouteTable.REMOTE], RouteTable.REMOTE),
    }
    # Marked: connections that arrive through the tunnel from a remote Gateway IP.
    assert desired.reply_marking == ReplyMarking(REPLY_MARK, (ip("198.19.2.1"), ip("198.19.3.1")), ("mc-tun0",))


def test_the_reply_mark_is_0x2000_unless_configured() -> None:
    assert REPLY_MARK == 0x2000
    config = AgentConfig(enable_gateway=True, tunnel=TunnelConfig(reply_mark=0x10))
    for node in ("east-a", "east-b"):
        desired = compute_desired(inputs_for(node), config)
        assert desired.reply_marking is not None
        assert desired.reply_marking.mark == 0x10
        assert PolicyRule(RULE_PRIORITY[RouteTable.REPLY], RouteTable.REPLY, fwmark=0x10) in desired.rules


def test_the_gateway_snats_cross_cluster_traffic_to_its_gateway_ip() -> None:
    desired = compute_desired(inputs_for(), VXLAN)
    assert desired.snat is not None
    assert desired.snat.to_address == ip("203.0.113.1")
    assert desired.snat.out_interface == "mc-tun0"
    # Adjacent CIDRs are merged (see the collapsing test below): 10.102/16 + 10.103/16.
    assert desired.snat.destinations == (net("10.102.0.0/15"),)


def test_pod_cidrs_are_routed_only_with_pod_to_pod_connectivity() -> None:
    without = routes_by_table(compute_desired(inputs_for(), VXLAN).routes, RouteTable.REMOTE)
    with_p2p = routes_by_table(compute_desired(inputs_for(), VXLAN_P2P).routes, RouteTable.REMOTE)
    assert ("10.2.0.0/16", "198.19.2.1", "mc-tun0") not in without
    assert ("10.2.0.0/16", "198.19.2.1", "mc-tun0") in with_p2p
    assert ("10.3.0.0/16", "198.19.3.1", "mc-tun0") in with_p2p


def test_another_node_routes_everything_remote_to_the_local_gateway_internal_ip() -> None:
    desired = compute_desired(inputs_for("east-b"), VXLAN_P2P)
    assert desired.role is Role.MEMBER
    assert desired.tunnel is not None
    assert desired.tunnel.mac == node_tunnel_mac(ip("198.18.1.2"))
    assert desired.tunnel_peers == (TunnelPeer(ip("198.18.1.1"), gateway_tunnel_mac(ip("203.0.113.1"))),)
    assert {via for _, via, _ in routes_by_table(desired.routes, RouteTable.REMOTE)} == {"198.18.1.1"}
    assert routes_by_table(desired.routes, RouteTable.REPLY) == {
        ("198.19.2.1/32", "198.18.1.1", "mc-tun0"),
        ("198.19.3.1/32", "198.18.1.1", "mc-tun0"),
    }
    # The Gateway hands cross-cluster connections over through the primary CNI: from any device.
    assert desired.reply_marking == ReplyMarking(REPLY_MARK, (ip("198.19.2.1"), ip("198.19.3.1")), ())
    assert PolicyRule(RULE_PRIORITY[RouteTable.REPLY], RouteTable.REPLY, fwmark=REPLY_MARK) in desired.rules
    # Its Pods' traffic keeps their addresses into the tunnel (no masquerade of the Node's
    # or the CNI's rewrites them), so the Gateway sees the Pod and its label identity.
    assert desired.snat is not None
    assert desired.snat.to_address is None
    assert desired.snat.out_interface == "mc-tun0"
    assert desired.probe_targets == ()


def test_only_the_gateway_probes_remote_gateways() -> None:
    desired = compute_desired(inputs_for(), VXLAN)
    assert {(t.cluster_id, str(t.gateway_ip)) for t in desired.probe_targets} == {
        ("west", "198.19.2.1"),
        ("north", "198.19.3.1"),
    }


def test_a_candidate_that_is_not_the_gateway_probes_the_gateway_by_its_kernel() -> None:
    plain = inputs_for("east-b")
    candidate = replace(plain, node=replace(plain.node, gateway_candidate=True))
    desired = compute_desired(candidate, VXLAN)
    # Its internalIP, keyed by our own cluster; by its kernel, which an agent restart leaves running.
    assert desired.probe_targets == (ProbeTarget("east", ip("198.18.1.1"), by_kernel=True),)
    assert compute_desired(plain, VXLAN).probe_targets == ()  # not a candidate: probes nothing
    assert not any(t.by_kernel for t in compute_desired(inputs_for(), VXLAN).probe_targets)


def test_with_wireguard_the_gateway_routes_remote_traffic_into_the_wireguard_device() -> None:
    desired = compute_desired(inputs_for(), WIREGUARD)
    assert desired.wireguard is not None
    assert desired.wireguard.listen_port == 51821
    assert {d for _, _, d in routes_by_table(desired.routes, RouteTable.REMOTE)} == {"mc-wg0"}
    assert {via for _, via, _ in routes_by_table(desired.routes, RouteTable.REMOTE)} == {None}
    assert desired.tunnel_peers == ()  # VXLAN is only for the local Nodes now
    assert desired.tunnel is not None
    assert desired.snat is not None
    assert desired.snat.out_interface == "mc-wg0"
    assert set(desired.mss_clamp_interfaces) == {"mc-tun0", "mc-wg0"}
    assert desired.reply_marking is not None
    assert desired.reply_marking.arrival_interfaces == ("mc-wg0",)


def test_wireguard_peers_allow_their_cidrs_and_their_gateway_ip_as_source() -> None:
    desired = compute_desired(inputs_for(), WIREGUARD)
    assert desired.wireguard is not None
    peers = {p.public_key: p for p in desired.wireguard.peers}
    west = peers["d2VzdC1rZXk="]
    assert (west.endpoint, west.port) == (ip("198.19.2.1"), 51821)
    assert set(west.allowed_ips) == {net("10.102.0.0/16"), net("10.2.0.0/16"), net("198.19.2.1/32")}


def test_with_wireguard_other_nodes_still_tunnel_to_their_gateway_with_vxlan() -> None:
    desired = compute_desired(inputs_for("east-b"), WIREGUARD)
    assert desired.wireguard is None
    assert desired.tunnel is not None
    assert len(desired.tunnel_peers) == 1


def test_a_remote_without_wireguard_key_is_excluded_in_wireguard_mode() -> None:
    keyless = RemoteCluster("south", "10.104.0.0/16", ("198.19.4.1",))
    desired = compute_desired(inputs_for(remotes=(WEST, keyless)), WIREGUARD)
    assert desired.remote_clusters == ("west",)
    assert [(e.cluster_id, e.reason) for e in desired.exclusions] == [("south", ExclusionReason.NO_WIREGUARD_KEY)]


def test_a_wireguard_gateway_without_its_own_key_is_an_input_error() -> None:
    with pytest.raises(InvalidInputsError):
        compute_desired(inputs_for(key=None), WIREGUARD)


def test_everything_goes_when_the_last_cluster_info_import_goes() -> None:
    desired = compute_desired(inputs_for(remotes=()), VXLAN)
    assert desired.is_empty
    assert desired.role is Role.GATEWAY
    assert desired.rules == ()
    assert desired.mss_clamp_interfaces == ()
    assert desired.reply_marking is None


def test_a_removed_import_takes_its_routes_peers_and_snat_destinations_with_it() -> None:
    desired = compute_desired(inputs_for(remotes=(NORTH,)), VXLAN)
    assert "198.19.2.1" not in {str(p.underlay_ip) for p in desired.tunnel_peers}
    assert all("10.102." not in str(r.destination) and r.via != ip("198.19.2.1") for r in desired.routes)
    assert desired.snat is not None
    assert net("10.102.0.0/16") not in desired.snat.destinations
    assert desired.reply_marking is not None
    assert desired.reply_marking.remote_gateways == (ip("198.19.3.1"),)


def test_when_the_local_gateway_moves_the_old_gateway_becomes_a_member_and_the_new_one_a_gateway() -> None:
    moved = ActiveGateway("east-b", gateway_ip="198.18.1.2", internal_ip="198.18.1.2")
    old = compute_desired(inputs_for("east-a", gateway=moved), VXLAN)
    new = compute_desired(inputs_for("east-b", gateway=moved), VXLAN)
    assert old.role is Role.MEMBER
    assert old.tunnel is not None
    assert old.tunnel.mac == node_tunnel_mac(ip("198.18.1.1"))
    assert old.tunnel_peers == (TunnelPeer(ip("198.18.1.2"), gateway_tunnel_mac(ip("198.18.1.2"))),)
    assert new.role is Role.GATEWAY
    assert new.tunnel is not None
    assert new.tunnel.mac == gateway_tunnel_mac(ip("198.18.1.2"))
    assert new.snat is not None
    assert new.snat.to_address == ip("198.18.1.2")


def test_when_a_remote_gateway_moves_routes_and_peers_follow_its_new_ip() -> None:
    moved_west = RemoteCluster("west", "10.102.0.0/16", ("198.19.2.2",), ("10.2.0.0/16",))
    desired = compute_desired(inputs_for(remotes=(moved_west,)), VXLAN)
    assert desired.tunnel_peers == (TunnelPeer(ip("198.19.2.2"), gateway_tunnel_mac(ip("198.19.2.2"))),)
    assert {via for _, via, _ in routes_by_table(desired.routes, RouteTable.REMOTE)} == {"198.19.2.2"}
    assert desired.reply_marking is not None
    assert desired.reply_marking.remote_gateways == (ip("198.19.2.2"),)


def test_a_remote_cidr_overlapping_a_local_cidr_is_excluded_with_a_reason() -> None:
    clash = RemoteCluster("west", "10.101.128.0/17", ("198.19.2.1",), ("10.2.0.0/16",))
    desired = compute_desired(inputs_for(remotes=(clash,)), VXLAN_P2P)
    assert routes_by_table(desired.routes, RouteTable.REMOTE) == {("10.2.0.0/16", "198.19.2.1", "mc-tun0")}
    (exclusion,) = desired.exclusions
    assert exclusion.reason is ExclusionReason.OVERLAPS_LOCAL_CIDR
    assert exclusion.cidr == "10.101.128.0/17"
    assert "local Service CIDR" in exclusion.message


def test_of_two_overlapping_remote_cidrs_the_smaller_cluster_id_keeps_its_cidr() -> None:
    alpha = RemoteCluster("alpha", "10.120.0.0/16", ("198.19.8.1",))
    zulu = RemoteCluster("zulu", "10.120.5.0/24", ("198.19.9.1",), ("10.9.0.0/16",))
    desired = compute_desired(inputs_for(remotes=(zulu, alpha)), VXLAN_P2P)
    assert ("10.120.0.0/16", "198.19.8.1", "mc-tun0") in routes_by_table(desired.routes, RouteTable.REMOTE)
    assert [(e.cluster_id, e.reason, e.cidr) for e in desired.exclusions] == [
        ("zulu", ExclusionReason.OVERLAPS_REMOTE_CIDR, "10.120.5.0/24")
    ]
    assert desired.remote_clusters == ("alpha", "zulu")


def test_a_remote_whose_every_cidr_is_excluded_is_not_routed_at_all() -> None:
    clash = RemoteCluster("west", "10.1.0.0/16", ("198.19.2.1",))
    desired = compute_desired(inputs_for(remotes=(clash,)), VXLAN)
    assert desired.is_empty
    assert {e.reason for e in desired.exclusions} == {
        ExclusionReason.OVERLAPS_LOCAL_CIDR,
        ExclusionReason.NO_ROUTABLE_CIDR,
    }


def test_a_remote_cidr_containing_a_tunnel_endpoint_is_excluded() -> None:
    swallowing = RemoteCluster("west", "198.18.0.0/16", ("198.19.2.1",), ("10.2.0.0/16",))
    desired = compute_desired(inputs_for(remotes=(swallowing,)), VXLAN_P2P)
    assert [(e.reason, e.cidr) for e in desired.exclusions] == [
        (ExclusionReason.CONTAINS_TUNNEL_ENDPOINT, "198.18.0.0/16")
    ]


@pytest.mark.parametrize(
    ("remote", "reason"),
    [
        (RemoteCluster("east", "10.110.0.0/16", ("198.19.2.1",)), ExclusionReason.SELF_IMPORT),
        (RemoteCluster("west", "10.110.0.0/16", ()), ExclusionReason.NO_GATEWAY_IP),
        (RemoteCluster("west", "10.110.0.0/16", ("not-an-ip",)), ExclusionReason.INVALID_GATEWAY_IP),
        (RemoteCluster("west", "10.110.0.0/16", ("2001:db8::1",)), ExclusionReason.UNSUPPORTED_IP_FAMILY),
        (RemoteCluster("west", "10.110.0.0/16", ("203.0.113.1",)), ExclusionReason.GATEWAY_IP_CONFLICT),
        (RemoteCluster("west", "10.110.0.0/16", ("10.1.2.3",)), ExclusionReason.GATEWAY_IP_CONFLICT),
        (RemoteCluster("west", None, ("198.19.2.1",)), ExclusionReason.NO_ROUTABLE_CIDR),
    ],
)
def test_an_unusable_remote_cluster_is_excluded_with_its_reason(remote: RemoteCluster, reason: ExclusionReason) -> None:
    desired = compute_desired(inputs_for(remotes=(remote,)), VXLAN)
    assert desired.is_empty
    assert reason in {e.reason for e in desired.exclusions}


def test_invalid_and_ipv6_cidrs_are_excluded_one_by_one() -> None:
    remote = RemoteCluster("west", "bogus", ("198.19.2.1",), ("fd00::/64", "10.2.0.0/16"))
    desired = compute_desired(inputs_for(remotes=(remote,)), VXLAN_P2P)
    assert routes_by_table(desired.routes, RouteTable.REMOTE) == {("10.2.0.0/16", "198.19.2.1", "mc-tun0")}
    assert {(e.reason, e.cidr) for e in desired.exclusions} == {
        (ExclusionReason.INVALID_CIDR, "bogus"),
        (ExclusionReason.UNSUPPORTED_IP_FAMILY, "fd00::/64"),
    }


def test_a_cidr_written_with_host_bits_is_normalised_as_antrea_docs_allow() -> None:
    remote = RemoteCluster("west", "10.102.7.7/16", ("198.19.2.1",))
    desired = compute_desired(inputs_for(remotes=(remote,)), VXLAN)
    assert routes_by_table(desired.routes, RouteTable.REMOTE) == {("10.102.0.0/16", "198.19.2.1", "mc-tun0")}


def test_a_cluster_imported_twice_is_routed_once() -> None:
    desired = compute_desired(inputs_for(remotes=(WEST, WEST)), VXLAN)
    assert desired.remote_clusters == ("west",)
    assert [e.reason for e in desired.exclusions] == [ExclusionReason.DUPLICATE_CLUSTER]


def test_two_remotes_claiming_one_gateway_ip_keep_only_the_first() -> None:
    twin = RemoteCluster("zulu", "10.130.0.0/16", ("198.19.2.1",))
    desired = compute_desired(inputs_for(remotes=(WEST, twin)), VXLAN)
    assert desired.remote_clusters == ("west",)
    assert [(e.cluster_id, e.reason) for e in desired.exclusions] == [("zulu", ExclusionReason.GATEWAY_IP_CONFLICT)]


def test_snat_destinations_are_collapsed_so_nftables_accepts_the_interval_set() -> None:
    nested = RemoteCluster("west", "10.2.128.0/24", ("198.19.2.1",), ("10.2.0.0/16",))
    desired = compute_desired(inputs_for(remotes=(nested,)), VXLAN_P2P)
    assert desired.snat is not None
    assert desired.snat.destinations == (net("10.2.0.0/16"),)


def test_an_invalid_local_node_ip_is_an_input_error() -> None:
    bad = AgentInputs(LocalNode("east-a", "nope"), LocalCluster("east"), EAST_GW, (WEST,))
    with pytest.raises(InvalidInputsError):
        compute_desired(bad, VXLAN)


def test_device_names_and_tunnel_parameters_come_from_the_config() -> None:
    config = AgentConfig(
        enable_gateway=True,
        traffic_encryption_mode=TrafficEncryptionMode.WIREGUARD,
        tunnel=TunnelConfig(vni=77, port=4800, interface="mcx-tun"),
        wireguard=WireGuardConfig(port=51999, interface="mcx-wg"),
    )
    desired = compute_desired(inputs_for(), config)
    assert desired.tunnel is not None
    assert (desired.tunnel.name, desired.tunnel.vni, desired.tunnel.port) == ("mcx-tun", 77, 4800)
    assert desired.wireguard is not None
    assert (desired.wireguard.name, desired.wireguard.listen_port) == ("mcx-wg", 51999)


def test_computing_twice_gives_equal_results() -> None:
    assert compute_desired(inputs_for(), WIREGUARD) == compute_desired(inputs_for(), WIREGUARD)

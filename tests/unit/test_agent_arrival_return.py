"""Replies of what arrives through a Node's tunnel go straight back, and a Gateway that stops
being one (a drain, a move) retires: it still takes what remote Gateways send it for
``tunnel.retireSeconds``. compute_desired is pure; the last tests drive DatapathAgent with a
fake programmer."""

from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Address

import pytest

from agent.config import AgentConfig, ConfigError, TrafficEncryptionMode, TunnelConfig, parse_agent_config
from agent.desired import compute_desired
from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from agent.kube_inputs import live_gateways
from agent.linux.ownership import RETURN_MARK
from agent.pairing import pair
from agent.runner import DatapathAgent
from agent.state import RULE_PRIORITY, ArrivalReturn, DesiredDatapath, PolicyRule, Role, RouteTable
from agent.tunnel_mac import gateway_tunnel_mac, node_tunnel_mac
from mcapi.gateway_nodes import ANNOTATION_HANDING_OVER
from tests.unit.test_agent_runner import FakeDatapath

VXLAN = AgentConfig(enable_gateway=True)
EAST = tuple(ActiveGateway(f"east-{n}", f"198.18.1.{i}", f"198.18.1.{i}") for i, n in ((1, "a"), (2, "b")))
NODES = {"east-a": "198.18.1.1", "east-b": "198.18.1.2", "east-c": "198.18.1.3"}
WEST_GATEWAYS = tuple(IPv4Address(f"198.18.2.{n}") for n in (1, 2, 3, 4))
WEST = RemoteCluster("west", "10.102.0.0/16", tuple(map(str, WEST_GATEWAYS)), ("10.2.0.0/16",))


def inputs_for(node: str, gateways: tuple[ActiveGateway, ...] = EAST, *, active_active: bool = True) -> AgentInputs:
    return AgentInputs(
        node=LocalNode(node, NODES[node], gateway_candidate=True),
        cluster=LocalCluster("east", "10.101.0.0/16", ("10.1.0.0/16",)),
        gateway=gateways[0] if gateways else None,
        remotes=(WEST,),
        gateways=gateways,
        active_active=active_active,
    )


def return_routes(desired: DesiredDatapath) -> set[tuple[str, str]]:
    return {(str(r.destination), str(r.via)) for r in desired.routes if r.table is RouteTable.RETURN}


async def role_after(agent: DatapathAgent, inputs: AgentInputs) -> Role | None:
    outcome = await agent.update(inputs)
    return None if outcome.desired is None else outcome.desired.role


STRAIGHT_BACK = {(f"{ip}/32", str(ip)) for ip in WEST_GATEWAYS}
RETURN_RULE = PolicyRule(RULE_PRIORITY[RouteTable.RETURN], RouteTable.RETURN, fwmark=RETURN_MARK)


def test_a_single_gateway_returns_what_arrives_straight_back_and_masquerades_nothing() -> None:
    desired = compute_desired(inputs_for("east-a", active_active=False), VXLAN)
    assert desired.arrival_return == ArrivalReturn(
        RETURN_MARK, "mc-tun0", WEST_GATEWAYS, (), IPv4Address(NODES["east-a"])
    )
    assert return_routes(desired) == STRAIGHT_BACK
    assert RETURN_RULE in desired.rules
    # Ahead of the reply rule: an arrival's reply must not follow the pairing.
    assert RULE_PRIORITY[RouteTable.RETURN] < RULE_PRIORITY[RouteTable.REPLY]


def test_an_active_active_gateway_masquerades_the_arrivals_its_nodes_would_answer_through_the_other() -> None:
    me = IPv4Address(NODES["east-a"])
    desired = compute_desired(inputs_for("east-a"), VXLAN)
    locals_ = [IPv4Address(g.gateway_ip) for g in EAST]
    elsewhere = tuple(ip for ip in WEST_GATEWAYS if pair(ip, locals_) != me)
    assert desired.arrival_return is not None
    assert desired.arrival_return.masquerade_from == elsewhere
    assert 0 < len(elsewhere) < len(WEST_GATEWAYS)  # the four west Gateways split between the two
    assert return_routes(desired) == STRAIGHT_BACK


def test_a_plain_node_takes_no_arrivals() -> None:
    desired = compute_desired(inputs_for("east-c"), VXLAN)
    assert desired.role is Role.MEMBER
    assert desired.arrival_return is None and return_routes(desired) == set() and RETURN_RULE not in desired.rules


def test_a_retiring_node_sends_as_a_member_and_takes_every_arrival_masqueraded() -> None:
    gone = IPv4Address(NODES["east-a"])
    member = compute_desired(inputs_for("east-a", EAST[1:]), VXLAN)
    retiring = compute_desired(inputs_for("east-a", EAST[1:]), VXLAN, retiring=gone)
    assert retiring.role is Role.RETIRING
    # The tunnel endpoint the remote Gateways know, and peers to send their replies back to.
    assert retiring.tunnel is not None and member.tunnel is not None
    assert retiring.tunnel.mac == gateway_tunnel_mac(gone) != member.tunnel.mac == node_tunnel_mac(gone)
    assert {p.underlay_ip for p in retiring.tunnel_peers} >= set(WEST_GATEWAYS)
    assert retiring.arrival_return == ArrivalReturn(RETURN_MARK, "mc-tun0", WEST_GATEWAYS, WEST_GATEWAYS, gone)
    assert return_routes(retiring) == STRAIGHT_BACK
    # What it sends goes as before: spread over the Gateways that remain, with no SNAT of its own.
    assert retiring.spread == member.spread and retiring.snat == member.snat
    assert set(member.routes) <= set(retiring.routes)


WIREGUARD = replace(VXLAN, traffic_encryption_mode=TrafficEncryptionMode.WIREGUARD)
WG = WIREGUARD.wireguard.interface
WEST_KEYED = replace(WEST, gateway_ips=WEST.gateway_ips[:1], wireguard_public_key="d2VzdA==")


def wireguard_inputs(node: str, gateways: tuple[ActiveGateway, ...]) -> AgentInputs:
    return replace(
        inputs_for(node, gateways, active_active=False), remotes=(WEST_KEYED,), wireguard_public_key="ZWFzdA=="
    )


def test_a_retiring_wireguard_gateway_keeps_its_peers_and_takes_every_arrival_masqueraded() -> None:
    gone = IPv4Address(NODES["east-a"])
    west_gateway = WEST_GATEWAYS[0]
    gateway = compute_desired(wireguard_inputs("east-a", EAST), WIREGUARD)
    member = compute_desired(wireguard_inputs("east-a", EAST[1:]), WIREGUARD)
    retiring = compute_desired(wireguard_inputs("east-a", EAST[1:]), WIREGUARD, retiring=gone)
    assert member.role is Role.MEMBER and member.wireguard is None
    assert retiring.role is Role.RETIRING
    # The peer the remote Gateways reach it by, until their ClusterInfo names the new Gateway.
    assert retiring.wireguard == gateway.wireguard is not None
    assert retiring.arrival_return == ArrivalReturn(RETURN_MARK, WG, (west_gateway,), (west_gateway,), gone)
    assert return_routes(retiring) == {(f"{west_gateway}/32", "None")}
    assert RETURN_RULE in retiring.rules
    # What it sends goes through the new Gateway, as the member's.
    assert set(member.routes) <= set(retiring.routes) and retiring.snat == member.snat


def test_a_wireguard_gateway_returns_arrivals_and_masquerades_them_only_while_handing_over() -> None:
    west_gateway = WEST_GATEWAYS[0]
    me = IPv4Address(NODES["east-a"])
    steady = compute_desired(wireguard_inputs("east-a", EAST[:1]), WIREGUARD)
    assert steady.arrival_return == ArrivalReturn(RETURN_MARK, WG, (west_gateway,), (), me)
    handing_over = (replace(EAST[0], handing_over=True),)
    draining = compute_desired(wireguard_inputs("east-a", handing_over), WIREGUARD)
    assert draining.arrival_return == ArrivalReturn(RETURN_MARK, WG, (west_gateway,), (west_gateway,), me)


def test_retiring_is_not_taken_when_its_address_is_a_gateways_again() -> None:
    gone = IPv4Address(NODES["east-a"])
    # The Gateway CR of another Node that now holds the same gatewayIP: it is that Node's.
    taken = (ActiveGateway("east-b", str(gone), NODES["east-b"]),)
    assert compute_desired(inputs_for("east-a", taken), VXLAN, retiring=gone).role is Role.MEMBER
    # A Node that is a Gateway again is simply one.
    assert compute_desired(inputs_for("east-a"), VXLAN, retiring=gone).role is Role.GATEWAY


def test_the_return_mark_and_retire_time_are_configured_and_checked() -> None:
    assert RETURN_MARK == 0x1000
    config = parse_agent_config("tunnel: {returnMark: 0x400, retireSeconds: 5}")
    assert config.tunnel == TunnelConfig(return_mark=0x400, retire_seconds=5.0)
    with pytest.raises(ConfigError, match="returnMark: must be another bit than replyMark"):
        parse_agent_config("tunnel: {replyMark: 0x400, returnMark: 0x400}")
    with pytest.raises(ConfigError, match="retireSeconds: must be a number"):
        parse_agent_config("tunnel: {retireSeconds: 0}")


async def test_an_agent_whose_node_stops_being_a_gateway_retires_then_becomes_a_member() -> None:
    fake = FakeDatapath()
    config = replace(VXLAN, tunnel=TunnelConfig(retire_seconds=0.2))
    agent = DatapathAgent(config, datapath=fake, resync_interval=None)
    try:
        assert await role_after(agent, inputs_for("east-a")) is Role.GATEWAY
        assert await role_after(agent, inputs_for("east-a", EAST[1:])) is Role.RETIRING
        # Inputs that change meanwhile keep it retiring, until the time is up.
        fewer = replace(WEST, gateway_ips=WEST.gateway_ips[:2])
        assert await role_after(agent, replace(inputs_for("east-a", EAST[1:]), remotes=(fewer,))) is Role.RETIRING
        await fake.until(lambda: fake.applied[-1].role is Role.MEMBER)
        assert fake.applied[-1].arrival_return is None
    finally:
        await agent.stop(cleanup=False)


async def test_a_node_that_was_never_a_gateway_does_not_retire_and_one_back_as_a_gateway_stops_retiring() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(VXLAN, datapath=fake, resync_interval=None)
    try:
        assert await role_after(agent, inputs_for("east-a", EAST[1:])) is Role.MEMBER
        assert await role_after(agent, inputs_for("east-a")) is Role.GATEWAY
        assert await role_after(agent, inputs_for("east-a", EAST[1:])) is Role.RETIRING
        assert await role_after(agent, inputs_for("east-a")) is Role.GATEWAY
        # Its retiring ended with it: leaving again starts a new one, not the old timer's end.
        assert await role_after(agent, inputs_for("east-a", EAST[1:])) is Role.RETIRING
    finally:
        await agent.stop(cleanup=False)


def test_a_node_is_a_gateway_as_any_of_the_set_in_active_active_mode_and_as_the_first_otherwise() -> None:
    # Whether its agent compiles the ClusterSet policy (agent.main): every Node that takes what
    # remote Gateways send must turn their identity VNIs into its own, or drop their packets.
    def is_gateway(node: str, *, active_active: bool = True, wireguard: bool = False) -> bool:
        inputs = inputs_for(node, active_active=active_active)
        return any(g.node_name == node for g in inputs.carrying_gateways(wireguard=wireguard))

    assert is_gateway("east-b") and is_gateway("east-a")
    assert not is_gateway("east-b", active_active=False)
    assert is_gateway("east-a", active_active=False)
    assert not is_gateway("east-c")
    assert not is_gateway("east-b", wireguard=True)  # WireGuard keeps one Gateway


def test_a_globally_addressed_remotes_egress_address_is_a_sender_returned_through_its_gateway() -> None:
    # One west Gateway, globally addressed: what it sends comes from its block's egress address.
    block = "242.1.0.0/20"
    west = RemoteCluster("west", "10.102.0.0/16", (str(WEST_GATEWAYS[0]),), ("10.2.0.0/16",), global_cidr=block)
    inputs = replace(inputs_for("east-a", EAST[1:]), remotes=(west,))
    egress = IPv4Address("242.1.0.1")
    retiring = compute_desired(inputs, VXLAN, retiring=IPv4Address(NODES["east-a"]))
    assert retiring.arrival_return is not None
    assert retiring.arrival_return.senders == retiring.arrival_return.masquerade_from == (WEST_GATEWAYS[0], egress)
    assert return_routes(retiring) == {(f"{ip}/32", str(WEST_GATEWAYS[0])) for ip in (WEST_GATEWAYS[0], egress)}


def test_a_gateway_handing_over_masquerades_every_arrival_in_either_mode() -> None:
    handing = (replace(EAST[0], handing_over=True), EAST[1])
    for active_active in (False, True):
        desired = compute_desired(inputs_for("east-a", handing, active_active=active_active), VXLAN)
        assert desired.role is Role.GATEWAY and desired.arrival_return is not None
        assert desired.arrival_return.masquerade_from == WEST_GATEWAYS
    # Another Gateway's handover changes nothing here.
    other = (EAST[0], replace(EAST[1], handing_over=True))
    assert compute_desired(inputs_for("east-a", other, active_active=False), VXLAN).arrival_return == (
        compute_desired(inputs_for("east-a", active_active=False), VXLAN).arrival_return
    )


def test_the_member_s_handing_over_annotation_reaches_the_agent_s_inputs() -> None:
    def gateway_cr(name: str, annotations: dict[str, str]) -> dict[str, object]:
        metadata = {"name": name, "namespace": "kube-system", "annotations": annotations}
        return {"metadata": metadata, "gatewayIP": NODES[name], "internalIP": NODES[name]}

    parsed = live_gateways([gateway_cr("east-a", {ANNOTATION_HANDING_OVER: "true"}), gateway_cr("east-b", {})])
    assert [(g.node_name, g.handing_over) for g in parsed] == [("east-a", True), ("east-b", False)]

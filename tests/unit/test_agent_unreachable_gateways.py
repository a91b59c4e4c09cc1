"""compute_desired with this Node's own unreachable verdicts: active-active Gateways re-pair and
spread around a Gateway that stopped answering, before any ClusterInfo says so (pure)."""

from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Address

from agent.config import AgentConfig
from agent.desired import compute_desired
from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from agent.pairing import pair
from agent.state import DesiredDatapath, ProbeTarget, RouteTable

VXLAN = AgentConfig(enable_gateway=True)
EAST = (
    ActiveGateway("east-a", gateway_ip="198.18.1.1", internal_ip="198.18.1.1"),
    ActiveGateway("east-b", gateway_ip="198.18.1.2", internal_ip="198.18.1.2"),
)
WEST_GATEWAYS = tuple(IPv4Address(f"198.18.2.{n}") for n in (1, 2, 3))
WEST = RemoteCluster("west", "10.102.0.0/16", tuple(map(str, WEST_GATEWAYS)), ("10.2.0.0/16",))
NODES = {"east-a": "198.18.1.1", "east-b": "198.18.1.2", "east-c": "198.18.1.3"}


def inputs_for(node: str, *, active_active: bool = True, remotes: tuple[RemoteCluster, ...] = (WEST,)) -> AgentInputs:
    return AgentInputs(
        node=LocalNode(node, NODES[node], (f"10.1.{NODES[node].rsplit('.', 1)[1]}.0/24",), gateway_candidate=True),
        cluster=LocalCluster("east", "10.101.0.0/16", ("10.1.0.0/16",)),
        gateway=EAST[0],
        remotes=remotes,
        gateways=EAST if active_active else EAST[:1],
        active_active=active_active,
    )


def west_probes(desired: DesiredDatapath) -> list[ProbeTarget]:
    return [t for t in desired.probe_targets if t.cluster_id == "west"]


def test_a_gateway_pairs_with_another_remote_gateway_when_its_own_stops_answering() -> None:
    me = IPv4Address("198.18.1.1")
    first = pair(me, WEST_GATEWAYS)
    assert west_probes(compute_desired(inputs_for("east-a"), VXLAN)) == [ProbeTarget("west", first)]

    moved = compute_desired(inputs_for("east-a"), VXLAN, {("west", first)})
    second = pair(me, [g for g in WEST_GATEWAYS if g != first])
    # It sends to and probes the next one; the silent one is probed on standby, to take it back.
    assert west_probes(moved) == [ProbeTarget("west", second), ProbeTarget("west", first, standby=True)]
    remote = {(str(r.destination), str(r.via)) for r in moved.routes if r.table is RouteTable.REMOTE}
    assert remote == {("10.102.0.0/16", str(second))}
    # Every remote Gateway stays a tunnel peer: replies of connections through them still arrive.
    assert {p.underlay_ip for p in moved.tunnel_peers} >= set(WEST_GATEWAYS)


def test_a_remote_with_no_gateway_answering_keeps_its_pairing() -> None:
    every = {("west", g) for g in WEST_GATEWAYS}
    alone = RemoteCluster("west", "10.102.0.0/16", (str(WEST_GATEWAYS[0]),), ("10.2.0.0/16",))
    assert compute_desired(inputs_for("east-a", remotes=(alone,)), VXLAN, {("west", WEST_GATEWAYS[0])}) == (
        compute_desired(inputs_for("east-a", remotes=(alone,)), VXLAN)
    )
    plain = compute_desired(inputs_for("east-a"), VXLAN)
    none_answer = compute_desired(inputs_for("east-a"), VXLAN, every)
    assert replace(none_answer, probe_targets=plain.probe_targets) == plain
    # The paired one is probed as before, the others on standby: the first to answer is taken.
    paired = pair(IPv4Address("198.18.1.1"), WEST_GATEWAYS)
    standby = [ProbeTarget("west", g, standby=True) for g in WEST_GATEWAYS if g != paired]
    assert west_probes(none_answer) == [ProbeTarget("west", paired), *standby]


def test_a_node_spreads_over_and_replies_through_the_local_gateways_still_answering() -> None:
    both = compute_desired(inputs_for("east-c"), VXLAN)
    assert both.spread is not None and both.spread.hops == (IPv4Address("198.18.1.1"), IPv4Address("198.18.1.2"))

    silent = IPv4Address("198.18.1.1")
    without = compute_desired(inputs_for("east-c"), VXLAN, {("east", silent)})
    assert without.spread is not None and without.spread.hops == (IPv4Address("198.18.1.2"),)
    replies = {str(r.via) for r in without.routes if r.table is RouteTable.REPLY}
    assert replies == {"198.18.1.2"}
    # Still probed (by its kernel) and still a tunnel peer: it comes back as soon as it answers.
    assert ProbeTarget("east", silent, by_kernel=True) in without.probe_targets
    assert silent in {p.underlay_ip for p in without.tunnel_peers}


def test_a_gateway_sends_replies_itself_when_the_local_gateway_they_pair_with_is_silent() -> None:
    me, other = IPv4Address("198.18.1.1"), IPv4Address("198.18.1.2")
    to_other = [g for g in WEST_GATEWAYS if pair(g, (me, other)) == other]
    assert to_other  # some remote Gateway sends to east-b
    without = compute_desired(inputs_for("east-a"), VXLAN, {("east", other)})
    replies = {(str(r.destination), str(r.via)) for r in without.routes if r.table is RouteTable.REPLY}
    assert replies == {(f"{g}/32", str(g)) for g in WEST_GATEWAYS}


def test_single_active_mode_ignores_verdicts_on_its_one_gateway() -> None:
    plain = compute_desired(inputs_for("east-c", active_active=False), VXLAN)
    unreachable = {("east", IPv4Address("198.18.1.1"))}
    assert compute_desired(inputs_for("east-c", active_active=False), VXLAN, unreachable) == plain

"""The agent's kube side, pure: objects -> AgentInputs, the Node key patch, GatewayReachable."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent.health import PeerHealth, Reachability
from agent.inputs import ActiveGateway, RemoteCluster
from agent.kube_inputs import build_inputs
from agent.kubewatch.node_annotations import ANNOTATION_WIREGUARD_PUBLIC_KEY, annotations_patch, wanted_annotations
from agent.kubewatch.reachability import ReachabilityPublisher, exclusion_condition, reachability_condition
from agent.state import DesiredDatapath, Exclusion, ExclusionReason, Role
from mcapi.gateway_nodes import ANNOTATION_UNREACHABLE_GATEWAY, unreachable_annotation, unreachable_gateways
from member.gateway.election import ANNOTATION_WIREGUARD_PUBLIC_KEY as MEMBER_ANNOTATION

NODE: dict[str, Any] = {
    "metadata": {"name": "east-b"},
    "spec": {"podCIDR": "10.1.2.0/24"},
    "status": {
        "addresses": [{"type": "InternalIP", "address": "fd00::2"}, {"type": "InternalIP", "address": "198.18.1.2"}]
    },
}


def gateway(name: str, ip: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "kube-system"}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta, "gatewayIP": ip, "internalIP": ip, "serviceCIDR": "10.101.0.0/16"}


IMPORT: dict[str, Any] = {
    "metadata": {"name": "west-clusterinfo", "namespace": "kube-system", "resourceVersion": "7"},
    "spec": {
        "clusterID": "west",
        "serviceCIDR": "10.102.0.0/16",
        "gatewayInfos": [{"gatewayIP": "198.18.2.1"}],
        "podCIDRs": ["10.2.0.0/16"],
        "wireGuard": {"publicKey": "wk="},
    },
}
CONFIGMAP = {"data": {"controller_manager_config.yaml": "podCIDRs: ['10.1.0.0/16']\n"}}
CLUSTER_SET = {"metadata": {"name": "set"}, "spec": {"clusterID": "east"}}


def test_objects_become_agent_inputs() -> None:
    inputs = build_inputs(
        NODE,
        [gateway("east-a", "198.18.1.1")],
        [IMPORT],
        configmap=CONFIGMAP,
        cluster_sets=[CLUSTER_SET],
        wireguard_public_key="mine=",
    )
    assert inputs is not None
    assert (inputs.node.internal_ip, inputs.node.pod_cidrs) == ("198.18.1.2", ("10.1.2.0/24",))
    assert inputs.gateway == ActiveGateway("east-a", "198.18.1.1", "198.18.1.1")
    assert (inputs.cluster.cluster_id, inputs.cluster.service_cidr, inputs.cluster.pod_cidrs) == (
        "east",
        "10.101.0.0/16",
        ("10.1.0.0/16",),
    )
    assert inputs.remotes == (RemoteCluster("west", "10.102.0.0/16", ("198.18.2.1",), ("10.2.0.0/16",), "wk="),)
    assert inputs.wireguard_public_key == "mine="


def test_without_its_node_the_agent_has_no_inputs_and_a_deleting_gateway_is_ignored() -> None:
    assert build_inputs(None, [], []) is None
    inputs = build_inputs(NODE, [gateway("a", "1.1.1.1", deleting=True), gateway("b", "2.2.2.2")], [])
    assert inputs is not None and inputs.gateway is not None and inputs.gateway.node_name == "b"


def test_in_active_active_mode_every_live_gateway_is_an_input() -> None:
    configmap = {"data": {"controller_manager_config.yaml": "gatewayMode: active-active\n"}}
    listed = [gateway("east-c", "198.18.1.3"), gateway("east-a", "198.18.1.1"), gateway("x", "9.9.9.9", True)]
    inputs = build_inputs(NODE, listed, [], configmap=configmap)
    assert inputs is not None and inputs.active_active
    assert [g.node_name for g in inputs.all_gateways] == ["east-a", "east-c"]
    single = build_inputs(NODE, listed, [], configmap=CONFIGMAP)
    assert single is not None and not single.active_active


def test_an_unreachable_report_names_every_gateway_sorted_and_goes_when_empty() -> None:
    assert unreachable_annotation(("node-c", "node-a")) == "node-a,node-c"
    assert unreachable_annotation(()) is None
    node = {"metadata": {"annotations": {ANNOTATION_UNREACHABLE_GATEWAY: " node-c, node-a ,"}}}
    assert unreachable_gateways(node) == ("node-a", "node-c")


def test_the_node_annotations_are_patched_only_when_they_differ_and_agree_with_the_member() -> None:
    assert ANNOTATION_WIREGUARD_PUBLIC_KEY == MEMBER_ANNOTATION

    def patch(node: dict[str, Any], key: str | None, unreachable: str | None = None) -> Any:
        return annotations_patch(node, wanted_annotations(key, unreachable))

    assert patch(NODE, None) is None
    assert patch(NODE, "k=") == {"metadata": {"annotations": {ANNOTATION_WIREGUARD_PUBLIC_KEY: "k="}}}
    annotated = {"metadata": {"annotations": {ANNOTATION_WIREGUARD_PUBLIC_KEY: "k="}}}
    assert patch(annotated, "k=") is None
    assert patch(annotated, None) == {"metadata": {"annotations": {ANNOTATION_WIREGUARD_PUBLIC_KEY: None}}}
    # A candidate's verdict on its own Gateway: only the annotation that changes is written.
    assert patch(annotated, "k=", "node-1") == {"metadata": {"annotations": {ANNOTATION_UNREACHABLE_GATEWAY: "node-1"}}}
    reported = {
        "metadata": {"annotations": {ANNOTATION_WIREGUARD_PUBLIC_KEY: "k=", ANNOTATION_UNREACHABLE_GATEWAY: "n"}}
    }
    assert patch(reported, "k=") == {"metadata": {"annotations": {ANNOTATION_UNREACHABLE_GATEWAY: None}}}


def peer(reachability: Reachability, rtt: float | None = 0.0004, at: datetime | None = None) -> PeerHealth:
    return PeerHealth("west", "198.18.2.1", reachability, rtt, 5, at or datetime(2024, 1, 1, tzinfo=UTC))


def test_reachability_conditions_read_well() -> None:
    up = reachability_condition("east-a", peer(Reachability.REACHABLE))
    assert (up.status, up.reason) == ("True", "Reachable") and "RTT 0.400 ms" in up.message
    down = reachability_condition("east-a", peer(Reachability.UNREACHABLE))
    assert (down.status, down.reason) == ("False", "Unreachable") and "5 probes" in down.message
    assert reachability_condition("east-a", peer(Reachability.UNKNOWN)).status == "Unknown"
    excluded = exclusion_condition([Exclusion("west", ExclusionReason.NO_ROUTABLE_CIDR, "no CIDR left")])
    assert (excluded.status, excluded.reason) == ("Unknown", "NoRoutableCIDR")


def test_a_steady_link_keeps_its_message_whatever_the_rtt_does() -> None:
    health = {"west": peer(Reachability.REACHABLE, rtt=0.0004)}
    desired = DesiredDatapath(role=Role.GATEWAY, remote_clusters=("west",), reports_reachability=True)
    publisher = ReachabilityPublisher(None, "east-a", lambda: [IMPORT], lambda: desired, lambda: health)  # type: ignore[arg-type]
    first = publisher.wanted()["west"]
    health["west"] = peer(Reachability.REACHABLE, rtt=0.0009)
    assert publisher.wanted()["west"] == first
    health["west"] = peer(Reachability.REACHABLE, rtt=0.0009, at=datetime(2024, 1, 2, tzinfo=UTC))
    assert "0.900 ms" in publisher.wanted()["west"].message


def _live(status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": "GatewayReachable", "status": status, "reason": reason, "message": message}


def test_a_restarted_agent_keeps_the_standing_verdict_until_it_has_its_own() -> None:
    """A rolling update restarts the Gateway's agent: its first probes have no verdict yet, and
    its first Reachable has another RTT. Neither rewrites what the previous agent wrote."""
    reachable = reachability_condition("east-a", peer(Reachability.REACHABLE, rtt=0.0004))
    live_up = _live("True", "Reachable", "Gateway 198.18.2.1 of cluster west answers east-a; RTT 0.900 ms")
    live_down = _live("False", "Unreachable", "Gateway 198.18.2.1 of cluster west missed 3 probes in a row from east-a")
    assert reachable.already_said_by(live_up)
    probing = reachability_condition("east-a", peer(Reachability.UNKNOWN))
    assert probing.already_said_by(live_up) and probing.already_said_by(live_down)
    # Anything else is a change, written as before.
    assert not reachable.already_said_by(None) and not probing.already_said_by(None)
    assert not reachable.already_said_by(live_down)
    assert not reachability_condition("east-b", peer(Reachability.REACHABLE)).already_said_by(live_up)  # moved
    assert not reachability_condition("east-a", peer(Reachability.UNREACHABLE)).already_said_by(live_up)
    excluded = _live("Unknown", "OverlapsLocalCIDR", "Not routed: overlaps.")
    assert not probing.already_said_by(excluded)
    assert not exclusion_condition([Exclusion("west", ExclusionReason.NO_ROUTABLE_CIDR, "x")]).already_said_by(live_up)


def test_only_the_gateway_node_publishes() -> None:
    desired = DesiredDatapath(role=Role.MEMBER, remote_clusters=("west",))
    health = {"west": peer(Reachability.REACHABLE)}
    publisher = ReachabilityPublisher(None, "east-b", lambda: [IMPORT], lambda: desired, lambda: health)  # type: ignore[arg-type]
    assert publisher.wanted() == {}


def test_the_report_names_the_remote_gateways_set_aside() -> None:
    desired = DesiredDatapath(role=Role.GATEWAY, remote_clusters=("west",), reports_reachability=True)
    sent_to = PeerHealth("west", "198.18.2.2", Reachability.REACHABLE, 0.0004, 0, datetime(2024, 1, 1, tzinfo=UTC))
    standby = peer(Reachability.UNREACHABLE)
    local = PeerHealth("east", "198.18.1.2", Reachability.UNREACHABLE, None, 3, datetime(2024, 1, 1, tzinfo=UTC))
    health = {"west": sent_to, "west/198.18.2.1": standby, "east/198.18.1.2": local}
    publisher = ReachabilityPublisher(None, "east-a", lambda: [IMPORT], lambda: desired, lambda: health)  # type: ignore[arg-type]
    wanted = publisher.wanted()["west"]
    assert (wanted.status, wanted.reason) == ("True", "Reachable")
    assert "Gateway 198.18.2.2 of cluster west answers east-a; set aside, unanswered: 198.18.2.1" in wanted.message
    # Taken back: the message changes with it.
    del health["west/198.18.2.1"]
    assert "set aside" not in publisher.wanted()["west"].message

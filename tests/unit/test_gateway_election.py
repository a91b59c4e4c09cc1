"""Gateway election rules (member/gateway/election.py), pure."""

from __future__ import annotations

from typing import Any

import pytest

from mcapi.gateway_nodes import ANNOTATION_UNREACHABLE_GATEWAY
from mcapi.names import ANNOTATION_GATEWAY, ANNOTATION_GATEWAY_IP
from member.gateway.election import (
    ANNOTATION_WIREGUARD_PUBLIC_KEY,
    candidate_from_node,
    candidates_from_nodes,
    elect,
    reported_unreachable,
)


def node(
    name: str,
    *,
    ready: bool = True,
    internal: str | None = "10.0.0.1",
    external: str | None = None,
    annotations: dict[str, str] | None = None,
    candidate: bool = True,
) -> dict[str, Any]:
    addresses = [{"type": "Hostname", "address": name}]
    if internal:
        addresses.append({"type": "InternalIP", "address": internal})
    if external:
        addresses.append({"type": "ExternalIP", "address": external})
    notes = dict(annotations or {})
    if candidate:
        notes.setdefault(ANNOTATION_GATEWAY, "true")
    return {
        "metadata": {"name": name, "annotations": notes},
        "status": {
            "addresses": addresses,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_a_node_without_the_gateway_annotation_is_no_candidate() -> None:
    assert candidate_from_node(node("n1", candidate=False), "internal") is None


def test_an_explicit_false_gateway_annotation_is_no_candidate() -> None:
    assert candidate_from_node(node("n1", annotations={ANNOTATION_GATEWAY: "false"}), "internal") is None


def test_internal_precedence_uses_the_internal_ip_for_both_addresses() -> None:
    found = candidate_from_node(node("n1", internal="10.0.0.1", external="1.2.3.4"), "internal")
    assert found is not None and found.eligible
    assert (found.gateway_ip, found.internal_ip) == ("10.0.0.1", "10.0.0.1")


@pytest.mark.parametrize("precedence", ["external", "public"])
def test_external_precedence_uses_the_external_ip_as_gateway_ip(precedence: str) -> None:
    found = candidate_from_node(node("n1", internal="10.0.0.1", external="1.2.3.4"), precedence)  # type: ignore[arg-type]
    assert found is not None and (found.gateway_ip, found.internal_ip) == ("1.2.3.4", "10.0.0.1")


def test_private_precedence_uses_the_internal_ip() -> None:
    found = candidate_from_node(node("n1", internal="10.0.0.1", external="1.2.3.4"), "private")
    assert found is not None and found.gateway_ip == "10.0.0.1"


def test_external_precedence_without_an_external_ip_makes_the_node_ineligible() -> None:
    found = candidate_from_node(node("n1"), "external")
    assert found is not None and not found.eligible and "ExternalIP" in (found.problem or "")


def test_the_gateway_ip_annotation_overrides_every_precedence() -> None:
    for precedence in ("internal", "external"):
        found = candidate_from_node(
            node("n1", external="1.2.3.4", annotations={ANNOTATION_GATEWAY_IP: "5.6.7.8"}),
            precedence,
        )
        assert found is not None and found.gateway_ip == "5.6.7.8" and found.internal_ip == "10.0.0.1"


def test_an_ipv6_or_garbage_gateway_ip_annotation_makes_the_node_ineligible() -> None:
    for value in ("fd00::1", "not-an-ip"):
        found = candidate_from_node(node("n1", annotations={ANNOTATION_GATEWAY_IP: value}), "internal")
        assert found is not None and not found.eligible


def test_a_node_with_only_an_ipv6_internal_ip_is_ineligible() -> None:
    found = candidate_from_node(node("n1", internal="fd00::5"), "internal")
    assert found is not None and found.problem == "no IPv4 InternalIP"


def test_a_not_ready_node_is_ineligible() -> None:
    found = candidate_from_node(node("n1", ready=False), "internal")
    assert found is not None and found.problem == "not Ready"


def test_the_agents_wireguard_key_annotation_is_carried() -> None:
    found = candidate_from_node(node("n1", annotations={ANNOTATION_WIREGUARD_PUBLIC_KEY: "k="}), "internal")
    assert found is not None and found.wireguard_public_key == "k="


def test_without_a_current_gateway_the_lowest_eligible_name_wins() -> None:
    nodes = [node("c", internal="10.0.0.3"), node("a", ready=False), node("b", internal="10.0.0.2")]
    winner = elect(candidates_from_nodes(nodes, "internal"), None)
    assert winner is not None and winner.name == "b"


def test_the_current_gateway_stays_while_it_is_eligible() -> None:
    nodes = [node("a", internal="10.0.0.1"), node("b", internal="10.0.0.2")]
    winner = elect(candidates_from_nodes(nodes, "internal"), "b")
    assert winner is not None and winner.name == "b"


def test_an_ineligible_current_gateway_is_replaced() -> None:
    nodes = [node("a", internal="10.0.0.1"), node("b", ready=False)]
    winner = elect(candidates_from_nodes(nodes, "internal"), "b")
    assert winner is not None and winner.name == "a"


def test_no_eligible_candidate_means_no_gateway() -> None:
    assert elect(candidates_from_nodes([node("a", ready=False), node("b", internal=None)], "internal"), "a") is None


def _cordoned(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "spec": {"unschedulable": True}}


def test_a_cordoned_current_gateway_hands_over_to_an_uncordoned_candidate() -> None:
    nodes = [node("a", internal="10.0.0.1"), _cordoned(node("b", internal="10.0.0.2"))]
    winner = elect(candidates_from_nodes(nodes, "internal"), "b")
    assert winner is not None and winner.name == "a"


def test_a_cordoned_node_is_not_chosen_while_an_uncordoned_one_is_eligible() -> None:
    nodes = [_cordoned(node("a", internal="10.0.0.1")), node("b", internal="10.0.0.2")]
    winner = elect(candidates_from_nodes(nodes, "internal"), None)
    assert winner is not None and winner.name == "b"


def test_a_cordoned_gateway_stays_when_no_other_candidate_is_eligible() -> None:
    nodes = [_cordoned(node("a", internal="10.0.0.1")), node("b", ready=False)]
    winner = elect(candidates_from_nodes(nodes, "internal"), "a")
    assert winner is not None and winner.name == "a"
    alone = elect(candidates_from_nodes([_cordoned(node("a"))], "internal"), None)
    assert alone is not None and alone.name == "a"


def _reporting(obj: dict[str, Any], unreachable: str) -> dict[str, Any]:
    notes = {**obj["metadata"]["annotations"], ANNOTATION_UNREACHABLE_GATEWAY: unreachable}
    return {**obj, "metadata": {**obj["metadata"], "annotations": notes}}


def test_a_gateway_another_candidate_cannot_reach_is_replaced_at_once() -> None:
    nodes = [node("a", internal="10.0.0.1"), _reporting(node("b", internal="10.0.0.2"), "a")]
    candidates = candidates_from_nodes(nodes, "internal")
    assert reported_unreachable(candidates) == {"a": ["b"]}
    winner = elect(candidates, "a")
    assert winner is not None and winner.name == "b"
    # Reports not trusted (the damping after a report moved the Gateway): the current one stays.
    kept = elect(candidates, "a", trust_reports=False)
    assert kept is not None and kept.name == "a"


def test_a_report_from_a_candidate_that_cannot_serve_or_of_itself_counts_for_nothing() -> None:
    ineligible = [node("a", internal="10.0.0.1"), _reporting(node("b", ready=False), "a")]
    assert elect(candidates_from_nodes(ineligible, "internal"), "a").name == "a"  # type: ignore[union-attr]
    itself = [_reporting(node("a", internal="10.0.0.1"), "a"), node("b", internal="10.0.0.2")]
    assert reported_unreachable(candidates_from_nodes(itself, "internal")) == {}


def test_when_every_eligible_candidate_is_reported_the_current_gateway_stays() -> None:
    nodes = [_reporting(node("a", internal="10.0.0.1"), "b"), _reporting(node("b", internal="10.0.0.2"), "a")]
    winner = elect(candidates_from_nodes(nodes, "internal"), "a")
    assert winner is not None and winner.name == "a"

"""Antrea policy objects -> their ClusterSet-scoped rules, or a typed refusal (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.policy.labels import MATCH_ALL, Requirement, Selector
from agent.policy.model import (
    Action,
    Direction,
    NamedPort,
    PodSelection,
    PortMatch,
    ServiceRef,
    SkipReason,
    TranslationError,
)
from agent.policy.parse import parse_policy

ACNP, ANP = "ClusterNetworkPolicy", "NetworkPolicy"
TENANT = {"matchLabels": {"role": "tenant"}}


def policy(spec: dict[str, Any], *, name: str = "p", namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "generation": 3}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "spec": spec}


def ingress_spec(**rule: Any) -> dict[str, Any]:
    return {
        "priority": 5,
        "appliedTo": [{"podSelector": {"matchLabels": {"app": "db"}}}],
        "ingress": [{"action": "Drop", "from": [{"scope": "ClusterSet", "podSelector": TENANT}], **rule}],
    }


def test_a_policy_without_cluster_set_scope_is_not_the_agents() -> None:
    spec = {
        "priority": 1,
        "appliedTo": [{"podSelector": {}}],
        "ingress": [{"action": "Drop", "from": [{"ipBlock": {}}]}],
    }
    assert parse_policy(ACNP, policy(spec)) is None


def test_an_ingress_rule_with_a_cluster_set_peer_is_parsed_with_tier_priority_and_selectors() -> None:
    parsed = parse_policy(
        ACNP, policy({**ingress_spec(ports=[{"protocol": "TCP", "port": 80}]), "tier": "SecurityOps"})
    )
    assert parsed is not None
    assert (parsed.tier, parsed.priority, parsed.generation) == ("securityops", 5.0, 3)
    (rule,) = parsed.rules
    assert rule.direction is Direction.INGRESS and rule.action is Action.DROP
    assert rule.peers == (PodSelection(Selector((Requirement("role", "In", frozenset({"tenant"})),)), MATCH_ALL),)
    assert rule.ports == (PortMatch("tcp", 80),)
    assert rule.applied_to[0].namespace is None


def test_a_network_policys_pod_selector_peer_and_applied_to_stay_in_its_namespace() -> None:
    parsed = parse_policy(ANP, policy(ingress_spec(), namespace="shop"))
    assert parsed is not None and parsed.tier == "application"
    (rule,) = parsed.rules
    assert rule.peers[0].namespace == "shop" and rule.applied_to[0].namespace == "shop"


def test_in_cluster_peers_and_rules_beside_cluster_set_ones_are_ignored() -> None:
    spec = ingress_spec()
    spec["ingress"][0]["from"].append({"podSelector": {}})
    spec["ingress"].append({"action": "Allow", "from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]})
    parsed = parse_policy(ACNP, policy(spec))
    assert parsed is not None
    assert [len(r.peers) for r in parsed.rules] == [1]


def test_an_egress_to_services_cluster_set_entry_is_parsed_with_rule_applied_to() -> None:
    spec = {
        "priority": 2,
        "egress": [
            {
                "action": "Reject",
                "appliedTo": [{"namespaceSelector": {}, "podSelector": TENANT}],
                "toServices": [
                    {"name": "web", "namespace": "shop", "scope": "ClusterSet"},
                    {"name": "x", "namespace": "y"},
                ],
            }
        ],
    }
    parsed = parse_policy(ACNP, policy(spec))
    assert parsed is not None
    (rule,) = parsed.rules
    assert rule.direction is Direction.EGRESS and rule.action is Action.REJECT
    assert rule.services == (ServiceRef("shop", "web"),)


@pytest.mark.parametrize(
    ("mutate", "reason", "needle"),
    [
        (lambda s: s.update(surprise=1), SkipReason.UNKNOWN_FIELD, "spec: unknown field(s) surprise"),
        (lambda s: s["ingress"][0].update(colour="red"), SkipReason.UNKNOWN_FIELD, "colour"),
        (
            lambda s: s["ingress"][0]["from"][0].update(ipBlock={"cidr": "10.0.0.0/8"}),
            SkipReason.UNSUPPORTED_PEER,
            "ipBlock",
        ),
        (lambda s: s["ingress"][0]["from"][0].update(group="g"), SkipReason.UNSUPPORTED_PEER, "group"),
        (lambda s: s["ingress"][0].update(ports=[{"port": "http", "endPort": 90}]), SkipReason.INVALID, "endPort"),
        (lambda s: s["ingress"][0].update(action="Maybe"), SkipReason.INVALID, "action"),
        (lambda s: s.update(appliedTo=[{"group": "g"}]), SkipReason.UNSUPPORTED_FIELD, "group"),
        (lambda s: s.pop("appliedTo"), SkipReason.INVALID, "appliedTo"),
        (
            lambda s: s["ingress"][0]["from"][0].update(
                podSelector={"matchExpressions": [{"key": "a", "operator": "Is"}]}
            ),
            SkipReason.INVALID,
            "operator",
        ),
    ],
)
def test_a_policy_the_agent_cannot_translate_is_refused_whole(mutate: Any, reason: SkipReason, needle: str) -> None:
    spec = ingress_spec()
    mutate(spec)
    with pytest.raises(TranslationError) as caught:
        parse_policy(ACNP, policy(spec))
    assert caught.value.reason is reason
    assert needle in caught.value.message


def test_egress_peers_with_cluster_set_scope_are_unsupported() -> None:
    spec = {
        "priority": 1,
        "appliedTo": [{"podSelector": {}}],
        "egress": [{"action": "Drop", "to": [{"scope": "ClusterSet", "podSelector": {}}]}],
    }
    with pytest.raises(TranslationError) as caught:
        parse_policy(ACNP, policy(spec))
    assert caught.value.reason is SkipReason.UNSUPPORTED_PEER


def test_a_named_port_of_an_ingress_rule_is_kept_by_name_with_its_protocol_tcp_by_default() -> None:
    ports = [{"port": "http"}, {"protocol": "UDP", "port": "dns-1"}, {"port": 22}]
    parsed = parse_policy(ACNP, policy(ingress_spec(ports=ports)))
    assert parsed is not None
    (rule,) = parsed.rules
    assert rule.ports == (NamedPort("tcp", "http"), NamedPort("udp", "dns-1"), PortMatch("tcp", 22))


@pytest.mark.parametrize(
    "name",
    ["", "HTTP", "web_ui", "a-very-long-name", "-http", "http-", "ht--tp", "8080", "4-2", "ht tp", "ünicode"],
)
def test_a_port_name_that_is_not_an_iana_service_name_is_invalid(name: str) -> None:
    with pytest.raises(TranslationError) as caught:
        parse_policy(ACNP, policy(ingress_spec(ports=[{"port": name}])))
    assert caught.value.reason is SkipReason.INVALID
    assert "spec.ingress[0].ports[0].port" in caught.value.message and "IANA_SVC_NAME" in caught.value.message


@pytest.mark.parametrize("name", ["h", "http", "a-b-c", "x1", "1x", "fifteen-chars-x"])
def test_iana_service_names_up_to_fifteen_characters_are_valid_port_names(name: str) -> None:
    parsed = parse_policy(ACNP, policy(ingress_spec(ports=[{"port": name}])))
    assert parsed is not None and parsed.rules[0].ports == (NamedPort("tcp", name),)


TO_SERVICES_REFUSAL = "`toServices` cannot be used with `to`, `ports` or `protocols`"


def to_services_spec(scope: str | None = "ClusterSet", **rule: Any) -> dict[str, Any]:
    service: dict[str, Any] = {"name": "web", "namespace": "shop"}
    if scope is not None:
        service["scope"] = scope
    egress = [{"action": "Drop", "toServices": [service], **rule}]
    if scope is None:  # an in-cluster rule in a policy that concerns the agent through another one
        egress.append({"action": "Drop", "toServices": [{"name": "db", "namespace": "shop", "scope": "ClusterSet"}]})
    return {"priority": 1, "appliedTo": [{"podSelector": {}}], "egress": egress}


@pytest.mark.parametrize(
    ("scope", "rule"),
    [
        ("ClusterSet", {"ports": [{"port": 80}]}),
        ("ClusterSet", {"ports": [{"port": "http"}]}),
        ("ClusterSet", {"ports": []}),
        ("ClusterSet", {"protocols": [{"icmp": {}}]}),
        ("ClusterSet", {"to": [{"podSelector": {}}]}),
        (None, {"ports": [{"port": 80}]}),
    ],
)
def test_to_services_with_to_ports_or_protocols_is_refused_as_antreas_webhook_refuses_it(
    scope: str | None, rule: dict[str, Any]
) -> None:
    # Antrea matches toServices on the Service's own ports; its validator
    # (pkg/controller/networkpolicy/validate.go, validatePeers) refuses such a rule outright.
    with pytest.raises(TranslationError) as caught:
        parse_policy(ACNP, policy(to_services_spec(scope, **rule)))
    assert caught.value.reason is SkipReason.INVALID
    assert caught.value.message == f"spec.egress[0]: {TO_SERVICES_REFUSAL} (Antrea refuses such a rule)"


def test_to_services_with_an_empty_to_list_is_accepted_as_antrea_accepts_it() -> None:
    parsed = parse_policy(ACNP, policy(to_services_spec(to=[])))
    assert parsed is not None and parsed.rules[0].services == (ServiceRef("shop", "web"),)

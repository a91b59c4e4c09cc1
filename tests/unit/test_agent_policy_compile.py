"""Policies + Tiers + identities + Pods -> ordered rules and identity maps (pure)."""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import Any

from agent.policy.compile import LocalPod, MultiClusterService, PolicyObject, PolicySources, compile_policies
from agent.policy.labels import identity_from_label, normalized_label
from agent.policy.model import Action

ACNP, ANP = "ClusterNetworkPolicy", "NetworkPolicy"
DB_IP, WEB_IP, TENANT_IP = IPv4Address("10.1.1.10"), IPv4Address("10.1.2.10"), IPv4Address("10.1.2.11")


def identity(id_: int, ns: str, **pod_labels: str) -> Any:
    found = identity_from_label(id_, normalized_label(ns, {}, pod_labels))
    assert found is not None
    return found


IDENTITIES = (
    identity(7, "default", role="tenant"),
    identity(8, "default", role="client"),
    identity(9, "shop", app="db"),
)
PODS = (
    LocalPod("shop", "db", DB_IP, (("app", "db"),)),
    LocalPod("default", "web", WEB_IP, (("role", "client"),)),
    LocalPod("default", "tenant", TENANT_IP, (("role", "tenant"),)),
)


def acnp(
    name: str, rules: list[dict[str, Any]], *, priority: float = 5, tier: str | None = None, **extra: Any
) -> PolicyObject:
    spec: dict[str, Any] = {
        "priority": priority,
        "appliedTo": [{"podSelector": {"matchLabels": {"app": "db"}}}],
        "ingress": rules,
        **extra,
    }
    if tier is not None:
        spec["tier"] = tier
    return PolicyObject(ACNP, {"metadata": {"name": name, "generation": 2}, "spec": spec})


def from_cluster_set(action: str, **pod_labels: str) -> dict[str, Any]:
    return {"action": action, "from": [{"scope": "ClusterSet", "podSelector": {"matchLabels": pod_labels}}]}


def compile_(
    *policies: PolicyObject, tiers: dict[str, int] | None = None, services: tuple[MultiClusterService, ...] = ()
) -> Any:
    return compile_policies(
        PolicySources(tuple(policies), tiers or {}, IDENTITIES, PODS, {"shop": {}, "default": {}}, services)
    )


def test_local_pods_map_to_the_imported_identity_of_their_labels_and_others_to_none() -> None:
    compiled = compile_(acnp("p", [from_cluster_set("Drop", role="tenant")]))
    assert compiled.pod_identities == ((DB_IP, 9), (WEB_IP, 8), (TENANT_IP, 7))
    assert compiled.identity_ids == (7, 8, 9)


def test_an_ingress_rule_selects_identities_by_label_and_applied_to_pods_by_ip() -> None:
    compiled = compile_(acnp("p", [from_cluster_set("Drop", role="tenant")]))
    ((tier, rules),) = [(t.tier, t.rules) for t in compiled.ingress]
    assert tier == "application"
    (rule,) = rules
    assert (rule.action, rule.sources, rule.destinations) == (Action.DROP, (7,), (DB_IP,))
    assert compiled.reports[0].enforced and compiled.reports[0].reason == "Enforced"


def test_rules_follow_tier_then_policy_priority_then_rule_order() -> None:
    compiled = compile_(
        acnp("late", [from_cluster_set("Drop", role="tenant")], priority=1, tier="baseline"),
        acnp("second", [from_cluster_set("Allow", role="tenant"), from_cluster_set("Drop", role="client")], priority=9),
        acnp("first", [from_cluster_set("Pass", role="tenant")], priority=2),
        acnp("top", [from_cluster_set("Reject", role="client")], priority=100, tier="emergency"),
    )
    order = [(t.tier, [r.origin.split(" ")[1] + ":" + r.action.value for r in t.rules]) for t in compiled.ingress]
    assert order == [
        ("emergency", ["top:Reject"]),
        ("application", ["first:Pass", "second:Allow", "second:Drop"]),
        ("baseline", ["late:Drop"]),
    ]


def test_a_policy_in_a_tier_that_does_not_exist_is_not_enforced_and_says_why() -> None:
    compiled = compile_(acnp("p", [from_cluster_set("Drop", role="tenant")], tier="nowhere"))
    assert compiled.ingress == ()
    (report,) = compiled.reports
    assert (report.enforced, report.reason) == (False, "TierNotFound")
    assert "nowhere does not exist" in report.message


def test_a_tier_cr_gives_its_priority() -> None:
    compiled = compile_(
        acnp("custom", [from_cluster_set("Drop", role="tenant")], tier="mytier"),
        acnp("app", [from_cluster_set("Allow", role="tenant")]),
        tiers={"mytier": 10},
    )
    assert [(t.tier, t.priority) for t in compiled.ingress] == [("mytier", 10), ("application", 250)]


def test_an_untranslatable_policy_is_reported_and_contributes_no_rule() -> None:
    bad = acnp("bad", [{**from_cluster_set("Drop", role="tenant"), "from": [{"scope": "ClusterSet", "fqdn": "x"}]}])
    good = acnp("good", [from_cluster_set("Drop", role="client")])
    compiled = compile_(bad, good)
    assert [r.origin.split(" ")[1] for t in compiled.ingress for r in t.rules] == ["good"]
    assert [(r.name, r.enforced, r.reason) for r in compiled.reports] == [
        ("bad", False, "UnsupportedPeer"),
        ("good", True, "Enforced"),
    ]


def test_a_rule_that_selects_nothing_is_left_out() -> None:
    compiled = compile_(acnp("p", [from_cluster_set("Drop", role="nobody")]))
    assert [t.rules for t in compiled.ingress] == [()]


def test_egress_to_services_targets_the_multi_cluster_services_addresses_from_applied_to_pods() -> None:
    spec_rule = {
        "action": "Drop",
        "appliedTo": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "tenant"}}}],
        "toServices": [{"name": "db", "namespace": "shop", "scope": "ClusterSet"}],
    }
    policy = PolicyObject(ACNP, {"metadata": {"name": "e"}, "spec": {"priority": 1, "egress": [spec_rule]}})
    service = MultiClusterService("shop", "db", (IPv4Address("10.96.0.20"), IPv4Address("10.102.0.10")))
    compiled = compile_(policy, services=(service,))
    ((rule,),) = [t.rules for t in compiled.egress]
    assert rule.sources == (TENANT_IP,)
    assert rule.destinations == (IPv4Address("10.96.0.20"), IPv4Address("10.102.0.10"))


def test_namespace_labels_take_part_in_identity_and_selection() -> None:
    ident = identity_from_label(11, normalized_label("shop", {"env": "prod"}, {"app": "db"}))
    assert ident is not None
    rule = {"action": "Drop", "from": [{"scope": "ClusterSet", "namespaceSelector": {"matchLabels": {"env": "prod"}}}]}
    sources = PolicySources((acnp("p", [rule]),), {}, (ident,), PODS, {"shop": {"env": "prod"}, "default": {}}, ())
    compiled = compile_policies(sources)
    assert compiled.pod_identities == ((DB_IP, 11),)
    assert compiled.ingress[0].rules[0].sources == (11,)

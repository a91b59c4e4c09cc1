"""Policies + Tiers + identities + Pods -> ordered rules and identity maps (pure)."""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import Any

from agent.policy.compile import LocalPod, MultiClusterService, PolicyObject, PolicySources, compile_policies
from agent.policy.labels import identity_from_label
from agent.policy.model import Action, PortMatch
from agent.policy.named_ports import ContainerPort
from agent.policy.state import ServiceDestination
from mcapi.labels import normalized_label

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


def to_services(action: str, *names: str) -> dict[str, Any]:
    return {
        "action": action,
        "appliedTo": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "tenant"}}}],
        "toServices": [{"name": name, "namespace": "shop", "scope": "ClusterSet"} for name in names],
    }


def egress_policy(name: str, *rules: dict[str, Any], priority: float = 1) -> PolicyObject:
    return PolicyObject(ACNP, {"metadata": {"name": name}, "spec": {"priority": priority, "egress": list(rules)}})


def to(address: str, protocol: str, port: int) -> ServiceDestination:
    return ServiceDestination(IPv4Address(address), protocol, port)


def test_egress_to_services_targets_each_services_addresses_with_their_ports_from_applied_to_pods() -> None:
    db = MultiClusterService("shop", "db", (to("10.96.0.20", "tcp", 5432), to("10.1.9.9", "tcp", 15432)))
    dns = MultiClusterService("shop", "dns", (to("10.96.0.20", "tcp", 5432), to("10.96.0.21", "udp", 53)))
    other = MultiClusterService("shop", "other", (to("10.96.0.30", "tcp", 80),))
    compiled = compile_(egress_policy("e", to_services("Drop", "db", "dns", "missing")), services=(db, dns, other))
    ((rule,),) = [t.rules for t in compiled.egress]
    assert rule.sources == (TENANT_IP,)
    assert rule.destinations == (
        to("10.1.9.9", "tcp", 15432),
        to("10.96.0.20", "tcp", 5432),
        to("10.96.0.21", "udp", 53),
    ), "each address only with its own ports, in order, without repeats"
    assert rule.ports == ()


def test_an_egress_rule_to_services_without_any_destination_is_left_out() -> None:
    empty = MultiClusterService("shop", "empty", ())
    compiled = compile_(egress_policy("e", to_services("Drop", "empty", "missing")), services=(empty,))
    assert [t.rules for t in compiled.egress] == [()]


def test_namespace_labels_take_part_in_identity_and_selection() -> None:
    ident = identity_from_label(11, normalized_label("shop", {"env": "prod"}, {"app": "db"}))
    assert ident is not None
    rule = {"action": "Drop", "from": [{"scope": "ClusterSet", "namespaceSelector": {"matchLabels": {"env": "prod"}}}]}
    sources = PolicySources((acnp("p", [rule]),), {}, (ident,), PODS, {"shop": {"env": "prod"}, "default": {}}, ())
    compiled = compile_policies(sources)
    assert compiled.pod_identities == ((DB_IP, 11),)
    assert compiled.ingress[0].rules[0].sources == (11,)


def test_a_pod_gets_the_identity_its_member_exported_when_its_namespace_name_label_differs() -> None:
    # The member keeps a kubernetes.io/metadata.name the Namespace already has (as Antrea);
    # the agent must write the same label for the Pod, or the Pod would have no identity.
    ns_labels = {"kubernetes.io/metadata.name": "renamed"}
    exported = normalized_label("shop", ns_labels, {"app": "db"})
    ident = identity_from_label(12, exported)
    assert ident is not None
    sources = PolicySources((), {}, (ident,), PODS, {"shop": ns_labels, "default": {}}, ())
    assert compile_policies(sources).pod_identities == ((DB_IP, 12),)


# Named ports: db Pods whose container ports differ; the rule names "http".
DB_A, DB_B, DB_C, DB_D, DB_E = (IPv4Address(f"10.1.1.{n}") for n in (21, 22, 23, 24, 25))
DB_PODS = (
    LocalPod("shop", "db-a", DB_A, (("app", "db"),), (ContainerPort("http", "tcp", 8080),)),
    LocalPod(
        "shop",
        "db-b",
        DB_B,
        (("app", "db"),),
        (ContainerPort("metrics", "tcp", 9100), ContainerPort("http", "tcp", 9090)),
    ),
    LocalPod("shop", "db-c", DB_C, (("app", "db"),), (ContainerPort("metrics", "tcp", 9100),)),
    LocalPod("shop", "db-d", DB_D, (("app", "db"),), (ContainerPort("http", "udp", 8080),)),
    LocalPod("shop", "db-e", DB_E, (("app", "db"),), (ContainerPort("http", "tcp", 8080),)),
)


def compile_db(*policies: PolicyObject) -> Any:
    return compile_policies(PolicySources(tuple(policies), {}, IDENTITIES, DB_PODS, {"shop": {}, "default": {}}, ()))


def pieces(compiled: Any) -> list[tuple[str, tuple[PortMatch, ...], tuple[IPv4Address, ...]]]:
    return [(r.origin.split(" ", 2)[2], r.ports, r.destinations) for t in compiled.ingress for r in t.rules]


def tcp(*ports: int) -> tuple[PortMatch, ...]:
    return tuple(PortMatch("tcp", p) for p in ports)


def test_a_named_port_resolves_per_pod_and_the_rule_splits_by_the_numbers_pods_share() -> None:
    compiled = compile_db(acnp("p", [{**from_cluster_set("Drop", role="tenant"), "ports": [{"port": "http"}]}]))
    assert pieces(compiled) == [
        ("ingress[0] ingress-0", tcp(8080), (DB_A, DB_E)),
        ("ingress[0] ingress-0", tcp(9090), (DB_B,)),
    ]
    assert all(r.sources == (7,) and r.action is Action.DROP for t in compiled.ingress for r in t.rules)
    assert compiled.reports[0].enforced


def test_a_pod_without_the_named_port_or_with_it_on_another_protocol_is_not_matched() -> None:
    compiled = compile_db(acnp("p", [{**from_cluster_set("Drop", role="tenant"), "ports": [{"port": "http"}]}]))
    matched = {ip for _, _, ips in pieces(compiled) for ip in ips}
    assert matched == {DB_A, DB_B, DB_E}, "db-c has no http port, db-d has it on UDP only"


def test_a_named_port_matches_the_container_port_of_the_entrys_protocol() -> None:
    rule = {**from_cluster_set("Drop", role="tenant"), "ports": [{"protocol": "UDP", "port": "http"}]}
    compiled = compile_db(acnp("p", [rule]))
    assert pieces(compiled) == [("ingress[0] ingress-0", (PortMatch("udp", 8080),), (DB_D,))]


def test_numbered_ports_beside_a_named_one_apply_to_every_pod_and_the_name_only_where_it_resolves() -> None:
    rule = {**from_cluster_set("Allow", role="tenant"), "ports": [{"port": 22}, {"port": "http"}, {"port": 8080}]}
    compiled = compile_db(acnp("p", [rule]))
    assert sorted(pieces(compiled), key=lambda piece: piece[2]) == [
        ("ingress[0] ingress-0", tcp(22, 8080), (DB_A, DB_C, DB_D, DB_E)),
        ("ingress[0] ingress-0", tcp(22, 8080, 9090), (DB_B,)),
    ]


def test_a_split_rule_keeps_its_place_between_the_policys_other_rules_and_other_policies() -> None:
    named = {**from_cluster_set("Allow", role="tenant"), "ports": [{"port": "http"}]}
    compiled = compile_db(
        acnp("first", [from_cluster_set("Pass", role="client"), named, from_cluster_set("Drop", role="tenant")]),
        acnp("second", [named], priority=6),
    )
    assert [(r.origin.split(" ")[1], r.origin.split(" ")[2], r.action.value) for r in compiled.ingress[0].rules] == [
        ("first", "ingress[0]", "Pass"),
        ("first", "ingress[1]", "Allow"),
        ("first", "ingress[1]", "Allow"),
        ("first", "ingress[2]", "Drop"),
        ("second", "ingress[0]", "Allow"),
        ("second", "ingress[0]", "Allow"),
    ]


def test_a_named_port_no_applied_to_pod_has_gives_no_rule_at_all() -> None:
    rule = {**from_cluster_set("Drop", role="tenant"), "ports": [{"port": "grpc"}]}
    compiled = compile_db(acnp("p", [rule]))
    assert pieces(compiled) == []
    assert compiled.reports[0].enforced

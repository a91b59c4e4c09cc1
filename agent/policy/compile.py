"""Parsed policies + Tiers + label identities + local Pods + multi-cluster Services ->
CompiledPolicy (the rules in Antrea's order, the identity maps) and a report per policy. Pure.

Order, as Antrea evaluates: Tier priority (lower first), then policy priority (lower
first; ties: ClusterNetworkPolicies before NetworkPolicies, then by namespace/name, so
every Gateway agrees), then rule order within the policy. Pass ends the Tier (the next
Tier decides). A policy whose Tier is neither a default Tier nor a Tier CR is not enforced.
An ingress rule with named ports becomes consecutive rules, one per set of port numbers its
appliedTo Pods resolve the names to (agent.policy.named_ports), in the rule's own place.
An egress ``toServices`` rule matches each Service destination as address, protocol and port
together (``ServiceDestination``), as Antrea matches a Service: the rule has no ports of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address

from agent.policy.labels import LabelIdentity, Labels
from agent.policy.model import (
    KIND_CLUSTER_NETWORK_POLICY,
    Direction,
    ParsedPolicy,
    ParsedRule,
    PodSelection,
    ServiceRef,
    SkipReason,
    TranslationError,
)
from agent.policy.named_ports import ContainerPort, split_by_resolved_ports
from agent.policy.parse import parse_policy
from agent.policy.state import (
    MAX_IDENTITY,
    CompiledPolicy,
    EgressRule,
    IngressRule,
    PolicyReport,
    Rule,
    ServiceDestination,
    TierRules,
)
from mcapi.crds.antrea_policy import DEFAULT_TIERS
from mcapi.labels import namespace_label_set, normalized_label

# Antrea's static Tiers (name -> priority), there whether or not their Tier CRs are.
DEFAULT_TIER_PRIORITIES: Mapping[str, int] = {name: priority for name, priority, _ in DEFAULT_TIERS}
REASON_ENFORCED = "Enforced"


@dataclass(frozen=True)
class LocalPod:
    namespace: str
    name: str
    ip: IPv4Address
    labels: tuple[tuple[str, str], ...]
    ports: tuple[ContainerPort, ...] = ()
    """Its containers' named ports (what a rule's named port resolves against)."""


@dataclass(frozen=True)
class MultiClusterService:
    """An imported Service (``antrea-mc-<name>``), named by the ServiceImport's name."""

    namespace: str
    name: str
    destinations: tuple[ServiceDestination, ...]
    """Its ClusterIP with the Service's ports, and its Endpoints' addresses (the exporters'
    ClusterIPs, or Pod IPs with endpointIPType PodIP) with the Endpoints' ports: the
    destination before and after kube-proxy's DNAT."""


@dataclass(frozen=True)
class PolicyObject:
    """A raw policy as read from the API (``kind`` ClusterNetworkPolicy or NetworkPolicy)."""

    kind: str
    obj: Mapping[str, object]


@dataclass(frozen=True)
class PolicySources:
    """Every input of the compiler."""

    policies: tuple[PolicyObject, ...] = ()
    tiers: Mapping[str, int] = field(default_factory=dict)
    """Tier CRs: name -> priority (the default Tiers need not be here)."""
    identities: tuple[LabelIdentity, ...] = ()
    pods: tuple[LocalPod, ...] = ()
    namespaces: Mapping[str, Labels] = field(default_factory=dict)
    services: tuple[MultiClusterService, ...] = ()


def compile_policies(sources: PolicySources) -> CompiledPolicy:
    tiers = {**DEFAULT_TIER_PRIORITIES, **{name.lower(): prio for name, prio in sources.tiers.items()}}
    identities = tuple(i for i in sources.identities if 0 < i.id <= MAX_IDENTITY)
    pods = tuple(sources.pods)
    reports: list[PolicyReport] = []
    enforced: list[ParsedPolicy] = []
    for item in sources.policies:
        meta = item.obj.get("metadata") or {}
        assert isinstance(meta, Mapping)
        try:
            parsed = parse_policy(item.kind, item.obj)
        except TranslationError as err:
            reports.append(_report(item.kind, meta, False, err.reason.value, err.message))
            continue
        if parsed is None:
            continue
        if parsed.tier not in tiers:
            message = f"Tier {parsed.tier} does not exist; the policy's ClusterSet rules are not enforced"
            reports.append(_report(item.kind, meta, False, SkipReason.TIER_NOT_FOUND.value, message))
            continue
        enforced.append(parsed)
        message = f"{len(parsed.rules)} ClusterSet rule(s) enforced by the Gateway"
        reports.append(_report(item.kind, meta, True, REASON_ENFORCED, message))
    enforced.sort(key=lambda p: (tiers[p.tier], p.priority, p.kind != KIND_CLUSTER_NETWORK_POLICY, p.namespace, p.name))
    namespace_labels = {name: namespace_label_set(name, labels) for name, labels in sources.namespaces.items()}
    services = {(s.namespace, s.name): s for s in sources.services}
    ingress: dict[str, list[IngressRule]] = {}
    egress: dict[str, list[EgressRule]] = {}
    for policy in enforced:
        for rule in policy.rules:
            applied = _applied_pods(rule.applied_to, pods, namespace_labels)
            origin = _origin(policy, rule)
            if rule.direction is Direction.INGRESS:
                peer_ids = _identity_ids(rule.peers, identities)
                pieces = split_by_resolved_ports(rule.ports, ((pod.ip, pod.ports) for pod in applied))
                ingress.setdefault(policy.tier, []).extend(
                    IngressRule(rule.action, peer_ids, destinations, ports, origin) for ports, destinations in pieces
                )
            else:
                wanted = sorted({d for ref in rule.services for d in _service_destinations(services, ref)})
                applied_ips = tuple(sorted({pod.ip for pod in applied}))
                egress.setdefault(policy.tier, []).append(EgressRule(rule.action, applied_ips, tuple(wanted), origin))
    return CompiledPolicy(
        pod_identities=_pod_identities(pods, namespace_labels, identities),
        identity_ids=tuple(sorted({i.id for i in identities})),
        ingress=_tiers(ingress, tiers),
        egress=_tiers(egress, tiers),
        reports=tuple(reports),
    )


def _tiers(rules: Mapping[str, list[Rule]], tiers: Mapping[str, int]) -> tuple[TierRules[Rule], ...]:
    return tuple(
        TierRules(name, tiers[name], tuple(r for r in found if r.sources and r.destinations))
        for name, found in sorted(rules.items(), key=lambda item: (tiers[item[0]], item[0]))
    )


def _selected(selection: PodSelection, namespace: str, ns_labels: Labels, pod_labels: Labels) -> bool:
    if selection.namespace is not None and selection.namespace != namespace:
        return False
    return selection.namespace_selector.matches(ns_labels) and selection.pod_selector.matches(pod_labels)


def _identity_ids(peers: Iterable[PodSelection], identities: Iterable[LabelIdentity]) -> tuple[int, ...]:
    peers = tuple(peers)
    found = {
        identity.id
        for identity in identities
        if any(
            _selected(p, identity.namespace, dict(identity.namespace_labels), dict(identity.pod_labels)) for p in peers
        )
    }
    return tuple(sorted(found))


def _applied_pods(
    applied_to: Iterable[PodSelection], pods: Iterable[LocalPod], namespaces: Mapping[str, Labels]
) -> tuple[LocalPod, ...]:
    applied_to = tuple(applied_to)
    found = []
    for pod in pods:
        ns_labels = namespaces.get(pod.namespace) or namespace_label_set(pod.namespace, None)
        if any(_selected(s, pod.namespace, ns_labels, dict(pod.labels)) for s in applied_to):
            found.append(pod)
    return tuple(found)


def _pod_identities(
    pods: Iterable[LocalPod], namespaces: Mapping[str, Labels], identities: Iterable[LabelIdentity]
) -> tuple[tuple[IPv4Address, int], ...]:
    by_label = {normalized_label(i.namespace, dict(i.namespace_labels), dict(i.pod_labels)): i.id for i in identities}
    found: dict[IPv4Address, int] = {}
    for pod in pods:
        ns_labels = namespaces.get(pod.namespace, {})
        identity = by_label.get(normalized_label(pod.namespace, ns_labels, dict(pod.labels)))
        if identity is not None:
            found[pod.ip] = identity
    return tuple(sorted(found.items()))


def _service_destinations(
    services: Mapping[tuple[str, str], MultiClusterService], ref: ServiceRef
) -> tuple[ServiceDestination, ...]:
    service = services.get((ref.namespace, ref.name))
    return service.destinations if service is not None else ()


def _origin(policy: ParsedPolicy, rule: ParsedRule) -> str:
    return f"{policy.ref} {rule.direction.value}[{rule.index}] {rule.name}"


def _report(kind: str, meta: Mapping[str, object], enforced: bool, reason: str, message: str) -> PolicyReport:
    generation = meta.get("generation")
    return PolicyReport(
        kind=kind,
        namespace=str(meta.get("namespace") or "") if kind != KIND_CLUSTER_NETWORK_POLICY else "",
        name=str(meta.get("name") or ""),
        generation=generation if isinstance(generation, int) else 0,
        enforced=enforced,
        reason=reason,
        message=message,
    )

"""An Antrea ClusterNetworkPolicy / NetworkPolicy object -> its ClusterSet-scoped rules. Pure.

Only policies that name the ClusterSet scope somewhere (an ingress peer or an egress
``toServices`` entry with ``scope: ClusterSet``) concern the agent; any other policy gives
None and is left to whoever enforces in-cluster policy. A policy that does concern it is
translated whole or not at all: an unknown field anywhere in its spec, or a ClusterSet rule
using what the agent cannot enforce across clusters (ipBlock/group/fqdn/serviceAccount/
nodeSelector/namespaces peers, ``to`` peers with ClusterSet scope, source ports,
``protocols``, ``l7Protocols``, appliedTo groups/services/serviceAccounts/nodeSelectors)
raises TranslationError, which the kube wiring reports as an Event, a metric and the
policy's status.

Named ports (``port: http``): an ingress rule keeps the name (``NamedPort``), checked as
Kubernetes checks it (IANA_SVC_NAME; never with ``endPort``), and compile resolves it
against each appliedTo Pod's container ports.

An egress ``toServices`` rule has no ports of its own: Antrea matches a Service on its own
ports and its webhook refuses ``to``, ``ports`` or ``protocols`` beside ``toServices``
(validate.go), and so does the agent (compile takes each destination's ports from the Service).

Within a ClusterSet rule only the ClusterSet-scoped peers (ingress) or services (egress)
count: the rule's other peers select in-cluster sources, which cross-cluster traffic never is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.policy.labels import MATCH_ALL, SelectorError, parse_selector
from agent.policy.model import (
    KIND_CLUSTER_NETWORK_POLICY,
    KIND_NETWORK_POLICY,
    SCOPE_CLUSTER_SET,
    Action,
    Direction,
    NamedPort,
    ParsedPolicy,
    ParsedRule,
    PodSelection,
    PortMatch,
    ServiceRef,
    SkipReason,
    TranslationError,
    protocol_of,
    valid_port,
)
from agent.policy.named_ports import PORT_NAME_RULE, is_port_name
from mcapi.crds.antrea_policy import DEFAULT_TIER

TO_SERVICES_REFUSAL = "`toServices` cannot be used with `to`, `ports` or `protocols`"
_SPEC_FIELDS = {"tier", "priority", "appliedTo", "ingress", "egress"}
_RULE_FIELDS = {
    "action",
    "ports",
    "protocols",
    "l7Protocols",
    "from",
    "to",
    "toServices",
    "name",
    "enableLogging",
    "logLabel",
    "appliedTo",
}
_PEER_FIELDS = {
    "podSelector",
    "namespaceSelector",
    "namespaces",
    "ipBlock",
    "group",
    "fqdn",
    "serviceAccount",
    "nodeSelector",
    "scope",
}
_APPLIED_TO_FIELDS = {"podSelector", "namespaceSelector", "group", "serviceAccount", "service", "nodeSelector"}
_PORT_FIELDS = {"protocol", "port", "endPort", "sourcePort", "sourceEndPort"}
_SERVICE_FIELDS = {"name", "namespace", "scope"}
_ACTIONS = {a.value: a for a in Action}


def mentions_cluster_set(spec: Mapping[str, Any]) -> bool:
    """Whether any ingress peer, egress peer or egress toServices entry has ClusterSet scope."""
    for direction, keys in (("ingress", ("from",)), ("egress", ("to", "toServices"))):
        for rule in _list(spec.get(direction)):
            if not isinstance(rule, Mapping):
                continue
            for key in keys:
                if any(isinstance(p, Mapping) and p.get("scope") == SCOPE_CLUSTER_SET for p in _list(rule.get(key))):
                    return True
    return False


def parse_policy(kind: str, obj: Mapping[str, Any]) -> ParsedPolicy | None:
    """The ClusterSet rules of ``obj`` (a ``kind`` object); None when it has none.

    Raises TranslationError when it has some but cannot be enforced as a whole."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or not mentions_cluster_set(spec):
        return None
    namespace = str(meta.get("namespace") or "") if kind == KIND_NETWORK_POLICY else ""
    _known(spec, _SPEC_FIELDS, "spec")
    priority = spec.get("priority")
    if isinstance(priority, bool) or not isinstance(priority, int | float):
        raise TranslationError(SkipReason.INVALID, f"spec.priority must be a number; got {priority!r}")
    tier = spec.get("tier") or DEFAULT_TIER
    if not isinstance(tier, str):
        raise TranslationError(SkipReason.INVALID, "spec.tier must be a string")
    policy_applied = _applied_to(spec.get("appliedTo"), "spec.appliedTo", kind, namespace)
    rules: list[ParsedRule] = []
    for direction in Direction:
        for index, raw in enumerate(_list(spec.get(direction.value))):
            where = f"spec.{direction.value}[{index}]"
            rule = _rule(
                raw,
                where,
                direction=direction,
                index=index,
                kind=kind,
                namespace=namespace,
                policy_applied=policy_applied,
            )
            if rule is not None:
                rules.append(rule)
    return ParsedPolicy(
        kind=kind,
        namespace=namespace,
        name=str(meta.get("name") or ""),
        tier=tier.lower(),
        priority=float(priority),
        rules=tuple(rules),
        generation=int(meta.get("generation") or 0),
    )


def _rule(
    raw: Any,
    where: str,
    *,
    direction: Direction,
    index: int,
    kind: str,
    namespace: str,
    policy_applied: tuple[PodSelection, ...] | None,
) -> ParsedRule | None:
    if not isinstance(raw, Mapping):
        raise TranslationError(SkipReason.INVALID, f"{where}: a rule must be an object")
    _known(raw, _RULE_FIELDS, where)
    peers_key = "from" if direction is Direction.INGRESS else "to"
    for p_index, peer in enumerate(_list(raw.get(peers_key))):
        _peer_fields(peer, f"{where}.{peers_key}[{p_index}]")
    cluster_peers = [
        (i, p) for i, p in enumerate(_list(raw.get(peers_key))) if isinstance(p, Mapping) and p.get("scope")
    ]
    services = _services(raw.get("toServices"), f"{where}.toServices") if direction is Direction.EGRESS else ()
    if direction is Direction.INGRESS and "toServices" in raw:
        raise TranslationError(SkipReason.INVALID, f"{where}.toServices: only egress rules have toServices")
    if _set(raw, "toServices") and (_list(raw.get("to")) or _set(raw, "ports") or _set(raw, "protocols")):
        # Antrea's webhook refuses it too: a Service is matched on its own ports.
        raise TranslationError(SkipReason.INVALID, f"{where}: {TO_SERVICES_REFUSAL} (Antrea refuses such a rule)")
    if not cluster_peers and not services:
        _ports(raw.get("ports"), f"{where}.ports", check_only=True)
        return None  # an in-cluster rule: not the agent's to enforce
    if direction is Direction.EGRESS and cluster_peers:
        i, _ = cluster_peers[0]
        raise TranslationError(
            SkipReason.UNSUPPORTED_PEER, f"{where}.to[{i}]: egress peers with ClusterSet scope are not supported"
        )
    for key in ("protocols", "l7Protocols"):
        if raw.get(key):
            raise TranslationError(SkipReason.UNSUPPORTED_FIELD, f"{where}.{key}: not supported in a ClusterSet rule")
    action_text = raw.get("action")
    if action_text not in _ACTIONS:
        raise TranslationError(
            SkipReason.INVALID, f"{where}.action: must be one of {', '.join(_ACTIONS)}; got {action_text!r}"
        )
    peers = tuple(_cluster_peer(p, f"{where}.from[{i}]", kind, namespace) for i, p in cluster_peers)
    rule_applied = _applied_to(raw.get("appliedTo"), f"{where}.appliedTo", kind, namespace)
    applied = rule_applied if rule_applied is not None else policy_applied
    if applied is None:
        raise TranslationError(SkipReason.INVALID, f"{where}: neither the policy nor the rule has appliedTo")
    return ParsedRule(
        direction=direction,
        index=index,
        name=str(raw.get("name") or f"{direction.value}-{index}"),
        action=_ACTIONS[action_text],
        applied_to=applied,
        peers=peers,
        # Egress: none (toServices refuses ports above).
        ports=_ports(raw.get("ports"), f"{where}.ports"),
        services=services,
    )


def _peer_fields(peer: Any, where: str) -> None:
    if not isinstance(peer, Mapping):
        raise TranslationError(SkipReason.INVALID, f"{where}: a peer must be an object")
    _known(peer, _PEER_FIELDS, where)
    scope = peer.get("scope")
    if scope is not None and scope != SCOPE_CLUSTER_SET:
        raise TranslationError(SkipReason.INVALID, f"{where}.scope: must be ClusterSet; got {scope!r}")


def _cluster_peer(peer: Mapping[str, Any], where: str, kind: str, namespace: str) -> PodSelection:
    unsupported = sorted(set(peer) - {"podSelector", "namespaceSelector", "scope"})
    if unsupported:
        raise TranslationError(
            SkipReason.UNSUPPORTED_PEER,
            f"{where}: {', '.join(unsupported)} with ClusterSet scope is not supported"
            " (only podSelector and namespaceSelector)",
        )
    if "podSelector" not in peer and "namespaceSelector" not in peer:
        raise TranslationError(SkipReason.INVALID, f"{where}: a ClusterSet peer needs podSelector or namespaceSelector")
    return _selection(peer, where, kind, namespace)


def _selection(raw: Mapping[str, Any], where: str, kind: str, namespace: str) -> PodSelection:
    try:
        pods = parse_selector(raw.get("podSelector"), f"{where}.podSelector")
        if "namespaceSelector" in raw:
            return PodSelection(pods, parse_selector(raw.get("namespaceSelector"), f"{where}.namespaceSelector"))
    except SelectorError as err:
        raise TranslationError(SkipReason.INVALID, str(err)) from err
    # A podSelector alone: the policy's own Namespace (NetworkPolicy) or every Namespace.
    return PodSelection(pods, MATCH_ALL, namespace if kind == KIND_NETWORK_POLICY else None)


def _applied_to(raw: Any, where: str, kind: str, namespace: str) -> tuple[PodSelection, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise TranslationError(SkipReason.INVALID, f"{where}: must be a list")
    found: list[PodSelection] = []
    for index, entry in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            raise TranslationError(SkipReason.INVALID, f"{at}: must be an object")
        _known(entry, _APPLIED_TO_FIELDS, at)
        unsupported = sorted(set(entry) - {"podSelector", "namespaceSelector"})
        if unsupported:
            raise TranslationError(
                SkipReason.UNSUPPORTED_FIELD, f"{at}: {', '.join(unsupported)} is not supported by the agent"
            )
        if kind == KIND_NETWORK_POLICY and "namespaceSelector" in entry:
            raise TranslationError(SkipReason.INVALID, f"{at}.namespaceSelector: not allowed in a NetworkPolicy")
        if "podSelector" not in entry and "namespaceSelector" not in entry:
            raise TranslationError(SkipReason.INVALID, f"{at}: needs podSelector or namespaceSelector")
        found.append(_selection(entry, at, kind, namespace))
    return tuple(found)


def _services(raw: Any, where: str) -> tuple[ServiceRef, ...]:
    found: list[ServiceRef] = []
    for index, entry in enumerate(_list(raw)):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            raise TranslationError(SkipReason.INVALID, f"{at}: must be an object")
        _known(entry, _SERVICE_FIELDS, at)
        if entry.get("scope") != SCOPE_CLUSTER_SET:
            continue
        if not entry.get("name") or not entry.get("namespace"):
            raise TranslationError(SkipReason.INVALID, f"{at}: a ClusterSet Service needs name and namespace")
        found.append(ServiceRef(str(entry["namespace"]), str(entry["name"])))
    return tuple(found)


def _ports(raw: Any, where: str, *, check_only: bool = False) -> tuple[PortMatch | NamedPort, ...]:
    found: list[PortMatch | NamedPort] = []
    for index, entry in enumerate(_list(raw)):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            raise TranslationError(SkipReason.INVALID, f"{at}: must be an object")
        _known(entry, _PORT_FIELDS, at)
        if check_only:
            continue
        if "sourcePort" in entry or "sourceEndPort" in entry:
            raise TranslationError(SkipReason.UNSUPPORTED_FIELD, f"{at}: source ports are not supported")
        protocol = protocol_of(entry)
        if protocol is None:
            raise TranslationError(SkipReason.INVALID, f"{at}.protocol: must be TCP, UDP or SCTP")
        port, end = entry.get("port"), entry.get("endPort")
        if isinstance(port, str):
            found.append(_named_port(protocol, port, end, at))
            continue
        if port is not None and not valid_port(port):
            raise TranslationError(SkipReason.INVALID, f"{at}.port: must be 1..65535")
        if end is not None and (port is None or not valid_port(end) or end < port):
            raise TranslationError(SkipReason.INVALID, f"{at}.endPort: needs a port and must be port..65535")
        found.append(PortMatch(protocol, port, end))
    return tuple(found)


def _named_port(protocol: str, name: str, end: Any, at: str) -> NamedPort:
    if not is_port_name(name):
        raise TranslationError(SkipReason.INVALID, f"{at}.port: {name!r} is not a valid port name ({PORT_NAME_RULE})")
    if end is not None:
        raise TranslationError(SkipReason.INVALID, f"{at}.endPort: not allowed with a named port (only a number)")
    return NamedPort(protocol, name)


def _known(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise TranslationError(SkipReason.UNKNOWN_FIELD, f"{where}: unknown field(s) {', '.join(unknown)}")


def _set(raw: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` is given at all, even empty (Go's non-nil slice)."""
    return raw.get(key) is not None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


__all__ = ["KIND_CLUSTER_NETWORK_POLICY", "KIND_NETWORK_POLICY", "mentions_cluster_set", "parse_policy"]

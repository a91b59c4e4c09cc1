"""Gateway election, pure: Nodes in, the Node that should be the active Gateway out.

Rules (Antrea's NodeReconciler, made deterministic):

* A Node is a candidate while it carries the annotation ``multicluster.antrea.io/gateway``
  (mcapi.gateway_nodes says how it is read).
* A candidate is eligible when it is Ready and has a usable IPv4 ``internalIP`` (its first
  IPv4 InternalIP) and ``gatewayIP``: the ``multicluster.antrea.io/gateway-ip`` annotation
  when set, else by ``gatewayIPPrecedence``: ``internal``/``private`` take the InternalIP,
  ``external``/``public`` the ExternalIP (no fallback, as in Antrea: a Node without one is
  not eligible). Only IPv4 Gateways are supported.
* The current Gateway stays while it is eligible; otherwise the eligible candidate with
  the lowest name takes over (Antrea picks any; the lowest name makes every replay agree).
* A cordoned Node (``spec.unschedulable``, what ``kubectl cordon`` and ``kubectl drain`` set)
  is chosen only when no uncordoned candidate is eligible: a drain moves the Gateway away
  while the Node still forwards (its agent is a DaemonSet Pod, which a drain leaves running),
  so flows are handed over before the Node stops, not after it is gone (the controller first
  marks the Gateway as handing over for a second: member.gateway.controller). A cluster whose only
  candidate is cordoned keeps it (beyond Antrea, which does not look at cordons).
* A candidate that another eligible candidate's agent reports unreachable (its probes of the
  candidate's internalIP unanswered, mcapi.gateway_nodes) is passed over the same way, so a
  Gateway whose Node died or lost its link is replaced within about a second of probes instead
  of the 40 s a Node takes to turn NotReady. The caller can distrust reports for a while after
  one moved the Gateway (``trust_reports``), which damps a flapping link, and makes reports it
  could not confirm ``immune`` (the GatewayController knocks on a reported Node itself first:
  one agent's probes, on a busy Node, are not enough to move the Gateway).

``gatewayMode: active-active`` (``elect_all``): every candidate the rules above would prefer is a
Gateway at once (eligible, uncordoned, not reported); when none is left, the uncordoned eligible
ones, then the cordoned ones, so reports never empty the set. The caller makes reports it could
not confirm ``immune``, as in single-active mode.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address, ip_address
from typing import Any

from mcapi import names
from mcapi.config import GatewayIPPrecedence
from mcapi.gateway_nodes import is_candidate, unreachable_gateways
from mcapi.names import ANNOTATION_GATEWAY_IP

ANNOTATION_WIREGUARD_PUBLIC_KEY = names.ANNOTATION_WIREGUARD_PUBLIC_KEY
"""Written by the agent on its own Node when trafficEncryptionMode is wireGuard; the
elected Node's value becomes the Gateway's ``wireGuard.publicKey``. Kept in step with
agent/kubewatch/node_annotations.py (member and agent share no module but mcapi)."""


@dataclass(frozen=True)
class Candidate:
    """A Node annotated as a Gateway candidate, and whether it can serve."""

    name: str
    ready: bool
    internal_ip: str | None
    gateway_ip: str | None
    wireguard_public_key: str | None = None
    problem: str | None = None
    """Why the Node cannot be the Gateway (None: eligible)."""
    cordoned: bool = False
    """``spec.unschedulable``: eligible, but only when no uncordoned candidate is."""
    unreachable_gateways: tuple[str, ...] = ()
    """The Nodes this candidate's agent reports it cannot reach (its probes unanswered)."""

    @property
    def eligible(self) -> bool:
        return self.problem is None


def node_is_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _first_ipv4(node: Mapping[str, Any], address_type: str) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") != address_type:
            continue
        if _ipv4(str(address.get("address", ""))) is not None:
            return str(address["address"])
    return None


def _ipv4(text: str) -> IPv4Address | None:
    try:
        parsed = ip_address(text.strip())
    except ValueError:
        return None
    return parsed if isinstance(parsed, IPv4Address) else None


def candidate_from_node(node: Mapping[str, Any], precedence: GatewayIPPrecedence) -> Candidate | None:
    """The Node as a candidate; None when it is not annotated as one."""
    if not is_candidate(node):
        return None
    meta = node.get("metadata") or {}
    name = str(meta.get("name", ""))
    annotations = meta.get("annotations") or {}
    ready = node_is_ready(node)
    internal_ip = _first_ipv4(node, "InternalIP")
    key = str(annotations.get(ANNOTATION_WIREGUARD_PUBLIC_KEY) or "").strip() or None
    override = annotations.get(ANNOTATION_GATEWAY_IP)
    problem: str | None = None
    gateway_ip: str | None
    if override is not None:
        gateway_ip = str(override).strip()
        if _ipv4(gateway_ip) is None:
            problem = f"annotation {ANNOTATION_GATEWAY_IP}={override!r} is not an IPv4 address"
    elif precedence in ("external", "public"):
        gateway_ip = _first_ipv4(node, "ExternalIP")
        if gateway_ip is None:
            problem = f"no IPv4 ExternalIP (gatewayIPPrecedence {precedence})"
    else:
        gateway_ip = internal_ip
    if internal_ip is None:
        problem = "no IPv4 InternalIP"
    elif problem is None and not ready:
        problem = "not Ready"
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    return Candidate(name, ready, internal_ip, gateway_ip, key, problem, cordoned, unreachable_gateways(node))


def candidates_from_nodes(nodes: Iterable[Mapping[str, Any]], precedence: GatewayIPPrecedence) -> list[Candidate]:
    found = (candidate_from_node(node, precedence) for node in nodes)
    return sorted((c for c in found if c is not None), key=lambda c: c.name)


def reported_unreachable(candidates: Iterable[Candidate]) -> dict[str, list[str]]:
    """Node -> the eligible candidates whose agents report it unreachable."""
    reports: dict[str, list[str]] = {}
    for c in candidates:
        if not c.eligible:
            continue
        for name in c.unreachable_gateways:
            if name != c.name:
                reports.setdefault(name, []).append(c.name)
    return reports


def _preferred(
    candidates: Iterable[Candidate], trust_reports: bool, immune: Collection[str] = (), out: Collection[str] = ()
) -> list[Candidate]:
    """The eligible candidates neither cordoned nor reported unreachable (reports against ``immune``
    do not count; ``out`` counts as reported), by name; when there are none, the uncordoned eligible
    ones; then every eligible one."""
    everyone = list(candidates)
    eligible = sorted((c for c in everyone if c.eligible), key=lambda c: c.name)
    reported = {n for n in reported_unreachable(everyone) if n not in immune} if trust_reports else set()
    reported |= set(out)
    uncordoned = [c for c in eligible if not c.cordoned]
    return [c for c in uncordoned if c.name not in reported] or uncordoned or eligible


def elect(
    candidates: Iterable[Candidate], current: str | None, *, trust_reports: bool = True, immune: Collection[str] = ()
) -> Candidate | None:
    """The Gateway: ``current`` while eligible, else the eligible candidate with the lowest name;
    among those neither cordoned nor reported unreachable (reports against ``immune`` do not
    count) when there are any."""
    preferred = _preferred(candidates, trust_reports, immune)
    for candidate in preferred:
        if candidate.name == current:
            return candidate
    return preferred[0] if preferred else None


def elect_all(
    candidates: Iterable[Candidate], *, immune: Collection[str] = (), out: Collection[str] = ()
) -> list[Candidate]:
    """The Gateways of active-active mode, by name (empty: no eligible candidate). Reports against
    ``immune`` are not acted on (while reports are distrusted, the caller passes the Gateways in
    place, so a report takes out no other); ``out`` stay out as if reported (the caller's quarantine
    of those it took out, until they answer it again)."""
    return _preferred(candidates, True, immune, out)

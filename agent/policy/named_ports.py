"""Named ports: a ClusterSet ingress rule's ``ports[].port`` given as a name. Pure.

As in Kubernetes and Antrea, a name resolves per selected Pod: to the ``containerPort`` of
that Pod's container port with the same name and protocol (``spec.containers[].ports[]``),
and a Pod without such a port is not matched by that entry. nftables needs numbers, so a
rule is split the way Antrea's agent groups a rule's members by their resolved ports
(``groupMembersByServices``): one rule per distinct set of resolved ports, for the Pods
that resolve to it. The pieces take the rule's own place in the order, and their Pods are
disjoint, so each packet meets exactly the piece of its destination Pod: the verdicts are
those of the unsplit rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address

from agent.policy.model import NamedPort, PortMatch

PORT_NAME_RULE = (
    "IANA_SVC_NAME: 1-15 lowercase letters, digits and '-', at least one letter, no '-' first, last or twice in a row"
)
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
_LETTER = re.compile(r"[a-z]")

Ports = tuple[PortMatch, ...]


@dataclass(frozen=True)
class ContainerPort:
    """A named port of one of a Pod's containers; ``protocol`` tcp/udp/sctp."""

    name: str
    protocol: str
    number: int


def is_port_name(text: str) -> bool:
    """Kubernetes' validation.IsValidPortName (IANA_SVC_NAME, RFC 6335)."""
    return (
        len(text) <= 15
        and _PORT_NAME_CHARS.fullmatch(text) is not None
        and _LETTER.search(text) is not None
        and "--" not in text
        and not text.startswith("-")
        and not text.endswith("-")
    )


def resolved_for_pod(ports: Sequence[PortMatch | NamedPort], pod_ports: Iterable[ContainerPort]) -> Ports | None:
    """``ports`` as numbers for one Pod; None when ``ports`` has entries but none applies to
    this Pod (every one a name it lacks). ``()``: every port. Without names, ``ports`` as they
    are; with names, sorted without repeats (Pods whose names resolve alike share a piece)."""
    if not any(isinstance(p, NamedPort) for p in ports):
        return tuple(p for p in ports if isinstance(p, PortMatch))
    pod_ports = tuple(pod_ports)
    found: set[PortMatch] = set()
    for port in ports:
        if isinstance(port, PortMatch):
            found.add(port)
            continue
        numbers = (c.number for c in pod_ports if c.name == port.name and c.protocol == port.protocol)
        number = next(numbers, None)
        if number is not None:
            found.add(PortMatch(port.protocol, number))
    return tuple(sorted(found, key=_port_key)) or None


def split_by_resolved_ports(
    ports: Sequence[PortMatch | NamedPort], pods: Iterable[tuple[IPv4Address, Iterable[ContainerPort]]]
) -> tuple[tuple[Ports, tuple[IPv4Address, ...]], ...]:
    """(resolved ports, the Pod IPs that resolve to them), one entry per distinct resolution,
    in the order of the resolved ports (every Gateway computes the same pieces). Without
    names: one entry, ``ports`` for every Pod. Pods that resolve to nothing are left out."""
    groups: dict[Ports, set[IPv4Address]] = {}
    for ip, pod_ports in pods:
        resolved = resolved_for_pod(ports, pod_ports)
        if resolved is not None:
            groups.setdefault(resolved, set()).add(ip)
    ordered = sorted(groups.items(), key=lambda item: [_port_key(p) for p in item[0]])
    return tuple((resolved, tuple(sorted(ips))) for resolved, ips in ordered)


def _port_key(port: PortMatch) -> tuple[str, int, int]:
    return port.protocol, port.port or 0, port.end_port or 0

"""The parsed form of an Antrea policy's ClusterSet-scoped rules, and the typed refusal. Pure data."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from agent.policy.labels import Selector

KIND_CLUSTER_NETWORK_POLICY = "ClusterNetworkPolicy"
KIND_NETWORK_POLICY = "NetworkPolicy"
SCOPE_CLUSTER_SET = "ClusterSet"
PROTOCOLS = {"TCP": "tcp", "UDP": "udp", "SCTP": "sctp"}
"""Kubernetes' protocol names -> the names nftables matches."""


def protocol_of(entry: Mapping[str, Any]) -> str | None:
    """The nftables name of a ports entry's ``protocol`` (a policy's, a container's, a
    Service's or an Endpoints subset's; TCP when unset); None for one nftables cannot match by port."""
    return PROTOCOLS.get(str(entry.get("protocol") or "TCP"))


def valid_port(value: object) -> TypeGuard[int]:
    """A port number as Kubernetes accepts one: an integer 1..65535 (JSON's true is none)."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


class Action(enum.Enum):
    ALLOW = "Allow"
    DROP = "Drop"
    REJECT = "Reject"
    PASS = "Pass"


class Direction(enum.Enum):
    INGRESS = "ingress"
    EGRESS = "egress"


class SkipReason(enum.Enum):
    """Why a policy with ClusterSet-scoped rules is not enforced at all (never half-applied)."""

    UNKNOWN_FIELD = "UnknownField"
    UNSUPPORTED_PEER = "UnsupportedPeer"
    UNSUPPORTED_FIELD = "UnsupportedField"
    INVALID = "Invalid"
    TIER_NOT_FOUND = "TierNotFound"


class TranslationError(Exception):
    """The policy cannot be translated; ``reason`` is its typed cause."""

    def __init__(self, reason: SkipReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class PodSelection:
    """Pods chosen by selectors: in ``namespace`` only when it is set (a NetworkPolicy's own
    Namespace), else in every Namespace ``namespace_selector`` matches."""

    pod_selector: Selector
    namespace_selector: Selector
    namespace: str | None = None


@dataclass(frozen=True)
class PortMatch:
    """``protocol`` tcp/udp/sctp; ``port`` None: every port of it; ``end_port``: a range."""

    protocol: str
    port: int | None = None
    end_port: int | None = None


@dataclass(frozen=True)
class NamedPort:
    """A ``ports[]`` entry that names a container port; compile resolves it per appliedTo Pod."""

    protocol: str
    name: str


@dataclass(frozen=True)
class ServiceRef:
    namespace: str
    name: str


@dataclass(frozen=True)
class ParsedRule:
    """One ClusterSet-scoped rule: ingress from ``peers`` (label identities) or egress to
    ``services`` (multi-cluster Services), for the local Pods of ``applied_to``."""

    direction: Direction
    index: int
    name: str
    action: Action
    applied_to: tuple[PodSelection, ...]
    peers: tuple[PodSelection, ...] = ()
    ports: tuple[PortMatch | NamedPort, ...] = ()
    """Empty: every port and protocol. Always empty in egress rules (toServices refuses ports)."""
    services: tuple[ServiceRef, ...] = ()


@dataclass(frozen=True)
class ParsedPolicy:
    kind: str
    namespace: str
    """'' for a ClusterNetworkPolicy."""
    name: str
    tier: str
    priority: float
    rules: tuple[ParsedRule, ...]
    generation: int = 0

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

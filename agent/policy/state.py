"""What the policy compiler produces: the identity maps and the ordered rules, as plain data.

``CompiledPolicy`` is computed from Kubernetes objects by agent.policy.compile (pure) and
travels in AgentInputs; agent.desired turns it into a ``PolicyDatapath`` on the active
Gateway, which agent/linux/policy_nft.py renders as the nftables table ``ip mchub_policy``.

Identity in the packet: between the inner packet and the VXLAN packet that carries it,
the only per-packet field that survives, that nftables can read and write and that nothing
routes by is ``skb->priority`` (see agent/linux/policy_nft.py). A tagged packet's priority
is ``IDENTITY_TAG | id``: the tag tells an identity from the small priorities the kernel
derives from the IP TOS (0..15), and leaves 24 bits for the ID.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Generic, TypeAlias, TypeVar

from agent.policy.model import Action, PortMatch

IDENTITY_TAG = 0x6D000000
"""The high byte of a tagged priority ('m'); the low 24 bits are the label identity ID."""
MAX_IDENTITY = 0xFFFFFF
NO_IDENTITY_VNI = 0
"""The VNI between Gateways for a packet whose source has no known identity."""


def tagged_priority(identity: int) -> int:
    return IDENTITY_TAG | identity


@dataclass(frozen=True, order=True)
class ServiceDestination:
    """Where a multi-cluster Service's traffic is headed when the source Gateway sees it: as
    Antrea matches ``toServices``, an address together with a ``protocol`` (tcp/udp/sctp) and
    a ``port``, never the address alone (a backend Pod's other ports are not the Service)."""

    address: IPv4Address
    protocol: str
    port: int


@dataclass(frozen=True)
class IngressRule:
    """One nftables rule: traffic from the label identity IDs ``sources`` to the local Pod IPs
    ``destinations`` (appliedTo) on ``ports`` (empty: every port) gets ``action``."""

    action: Action
    sources: tuple[int, ...]
    destinations: tuple[IPv4Address, ...]
    ports: tuple[PortMatch, ...]
    origin: str
    """``<kind> <ns/name> <direction>[<index>] <rule name>``, for humans reading nft output."""


@dataclass(frozen=True)
class EgressRule:
    """One nftables rule: traffic from the local Pod IPs ``sources`` (appliedTo) to the
    multi-cluster Services' ``destinations`` (ClusterIPs and backends, each with its own
    protocol and port) gets ``action``."""

    action: Action
    sources: tuple[IPv4Address, ...]
    destinations: tuple[ServiceDestination, ...]
    origin: str
    """As IngressRule's."""

    @property
    def ports(self) -> tuple[()]:
        """None of its own: a destination carries its ports (toServices refuses ``ports``)."""
        return ()


CompiledRule: TypeAlias = IngressRule | EgressRule
"""One nftables rule of either direction."""

Rule = TypeVar("Rule", IngressRule, EgressRule)


@dataclass(frozen=True)
class TierRules(Generic[Rule]):
    """The rules of one Tier, in order; a Pass rule returns to the next Tier."""

    tier: str
    priority: int
    rules: tuple[Rule, ...]


@dataclass(frozen=True)
class PolicyReport:
    """The agent's verdict on one policy that has ClusterSet-scoped rules."""

    kind: str
    namespace: str
    name: str
    generation: int
    enforced: bool
    reason: str
    message: str


@dataclass(frozen=True)
class CompiledPolicy:
    """Everything the datapath needs to carry identities and enforce ClusterSet rules."""

    pod_identities: tuple[tuple[IPv4Address, int], ...] = ()
    """Local Pod IP -> its label identity ID (Pods whose identity was imported)."""
    identity_ids: tuple[int, ...] = ()
    """Every imported label identity ID (what the Gateway may carry and recover)."""
    ingress: tuple[TierRules[IngressRule], ...] = ()
    egress: tuple[TierRules[EgressRule], ...] = ()
    reports: tuple[PolicyReport, ...] = ()


@dataclass(frozen=True)
class PolicyDatapath:
    """The Gateway's policy table: identity tagging on the tunnel and the ClusterSet rules."""

    tunnel_interface: str
    tunnel_port: int
    tunnel_vni: int
    """The VNI the receiving device accepts; a remote Gateway's packets are rewritten to it."""
    remote_gateways: tuple[IPv4Address, ...]
    pod_identities: tuple[tuple[IPv4Address, int], ...]
    identity_ids: tuple[int, ...]
    ingress: tuple[TierRules[IngressRule], ...]
    egress: tuple[TierRules[EgressRule], ...]

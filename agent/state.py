"""The desired datapath of one Node, as plain frozen data.

agent.desired computes it (pure); agent.linux programs it. Numbers that identify
what the agent owns in the kernel (routing tables, rule priorities) are defined here
because they are part of the desired state, not an implementation detail: two agents
that disagree about them would fight.

Routing scheme (IPv4 only, as Antrea's Multi-cluster Gateway):

* table REMOTE (rule: every packet) holds the remote clusters' Service/Pod CIDRs:
  on the Gateway via the remote Gateway through the tunnel, on other Nodes via the
  local Gateway's internalIP through the tunnel.
* table SPREAD (rule: every packet; ``gatewayMode: active-active``, on Nodes that are not a
  Gateway) holds the remote CIDRs via a resilient nexthop group of every local Gateway's
  internalIP: the kernel hashes each flow (L4) onto a bucket, and a Gateway that leaves the
  group gives up only its own buckets (agent.linux.spread).
* table REPLY (rule: packets marked as replies, ``fwmark M/M`` with M the reply mark,
  see agent.linux.ownership.REPLY_MARK) holds /32 routes to the remote Gateway IPs.
  Cross-cluster traffic arrives SNATed to the remote Gateway IP, so replies of local
  Pods are addressed to it and must enter the tunnel; but connections that local Pods
  start towards that address (another cluster's Node, on the underlay), and the
  Node's own packets to it (the VXLAN/WireGuard outer packets, probes), must keep
  using the underlay. So only reply-direction packets of connections that came from a
  remote Gateway (ReplyMarking) carry the mark.
* table RETURN (rule: packets marked as returning, ``fwmark R/R``, before REPLY) holds /32
  routes to the remote Gateway IPs straight back through the tunnel, on a Node that takes
  what remote Gateways send it (a Gateway, or one retiring): replies of the connections that
  arrived through its own tunnel leave the way they came (ArrivalReturn), whatever the
  pairing of the moment says.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network

from agent.policy.state import PolicyDatapath


class RouteTable(enum.IntEnum):
    """Routing tables owned by the agent."""

    REMOTE = 28003
    REPLY = 28004
    SPREAD = 28005
    RETURN = 28006


# Rule priorities: before ``main`` (32766) so a primary CNI's routes cannot shadow ours.
RULE_PRIORITY: dict[RouteTable, int] = {
    RouteTable.RETURN: 28001,
    RouteTable.REPLY: 28002,
    RouteTable.REMOTE: 28003,
    RouteTable.SPREAD: 28005,
}


class Role(enum.Enum):
    """What this Node does for cross-cluster traffic."""

    DISABLED = "Disabled"
    """enableGateway is false: the underlay is expected to connect Pods."""
    NO_GATEWAY = "NoGateway"
    """No active Gateway in the local cluster: nothing can be routed."""
    GATEWAY = "Gateway"
    """This Node is the active Gateway (in active-active mode: one of them)."""
    RETIRING = "Retiring"
    """This Node stopped being a Gateway a moment ago (drained, or replaced) and still runs: it
    sends as a Member does, and for ``tunnel.retireSeconds`` still takes what remote Gateways
    send it until they have learned where the Gateways are now."""
    MEMBER = "Member"
    """Another Node is the active Gateway; tunnel cross-cluster traffic to it (or, active-active,
    spread it over them)."""


class ExclusionReason(enum.Enum):
    """Why (part of) a ClusterInfoImport is not programmed."""

    SELF_IMPORT = "SelfImport"
    DUPLICATE_CLUSTER = "DuplicateCluster"
    NO_GATEWAY_IP = "NoGatewayIP"
    INVALID_GATEWAY_IP = "InvalidGatewayIP"
    GATEWAY_IP_CONFLICT = "GatewayIPConflict"
    INVALID_CIDR = "InvalidCIDR"
    UNSUPPORTED_IP_FAMILY = "UnsupportedIPFamily"
    OVERLAPS_LOCAL_CIDR = "OverlapsLocalCIDR"
    OVERLAPS_REMOTE_CIDR = "OverlapsRemoteCIDR"
    CONTAINS_TUNNEL_ENDPOINT = "ContainsTunnelEndpoint"
    NO_ROUTABLE_CIDR = "NoRoutableCIDR"
    NO_WIREGUARD_KEY = "NoWireGuardPublicKey"


@dataclass(frozen=True)
class Exclusion:
    """A remote cluster (cidr None) or one of its CIDRs left out, and why."""

    cluster_id: str
    reason: ExclusionReason
    message: str
    cidr: str | None = None


@dataclass(frozen=True)
class TunnelDevice:
    """The single VXLAN device of the Node (see agent.tunnel_mac for the L2 scheme)."""

    name: str
    vni: int
    port: int
    mac: str
    underlay_ip: IPv4Address
    """This Node's InternalIP: the device carrying it is the underlay whose MTU counts."""
    mtu: int | None = None
    """Fixed MTU, or None: the underlay device's MTU minus the VXLAN overhead."""


@dataclass(frozen=True)
class TunnelPeer:
    """A tunnel endpoint: permanent neighbour (ip -> mac) and FDB (mac -> ip) entries."""

    underlay_ip: IPv4Address
    mac: str


@dataclass(frozen=True)
class Route:
    """A route in one of our tables; ``via`` None means a device route."""

    destination: IPv4Network
    table: RouteTable
    device: str
    via: IPv4Address | None = None


@dataclass(frozen=True)
class SpreadRoutes:
    """``destinations`` in table SPREAD via one resilient nexthop group over ``hops`` (the local
    Gateways' internalIPs, onlink through ``device``): one flow keeps one Gateway, and a Gateway
    that leaves moves only the flows it carried."""

    device: str
    hops: tuple[IPv4Address, ...]
    destinations: tuple[IPv4Network, ...]


@dataclass(frozen=True)
class PolicyRule:
    """``ip rule [fwmark <mark>/<mark>] lookup <table> pref <priority>``."""

    priority: int
    table: RouteTable
    fwmark: int | None = None
    """Only packets with this bit set in their mark; None: every packet."""


@dataclass(frozen=True)
class ReplyMarking:
    """Which connections' replies carry ``mark`` (and so take table REPLY into the tunnel).

    A connection is marked (its conntrack mark) when its first packets come from one of
    ``remote_gateways``: through one of ``arrival_interfaces`` on the Gateway; on other
    Nodes (``arrival_interfaces`` empty), from any device towards a non-local address,
    because the Gateway hands cross-cluster traffic to them through the primary CNI.
    Every reply-direction packet of a marked connection gets ``mark`` in its packet mark.
    """

    mark: int
    remote_gateways: tuple[IPv4Address, ...]
    arrival_interfaces: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArrivalReturn:
    """On a Node that takes what remote Gateways send it: every connection that arrives through
    ``tunnel_interface`` from one of ``senders`` (the remote Gateways' addresses, and a globally
    addressed one-Gateway remote's egress address) gets ``mark`` in its conntrack mark, and its
    replies in their packet mark, for table RETURN: they leave straight back to the sender.

    The Nodes of the cluster send a reply towards the local Gateway that pairing names
    (agent.pairing), which is the Gateway that received the request only while both ends see
    the same Gateway sets. For a moment they may not: a Gateway drained (our Nodes learn it
    from the Gateway CR, the other members from the hub) or a verdict only one end reached.
    So arrivals from ``masquerade_from``, the remote Gateways that pairing pairs with another
    local Gateway (a retiring Gateway: all of them), are translated to ``masquerade_to`` (this
    Node's internalIP) as they leave for the cluster: their replies come back to this Node
    whoever answers, and conntrack, which holds the connection's translations, sends them on.
    """

    mark: int
    tunnel_interface: str
    senders: tuple[IPv4Address, ...]
    masquerade_from: tuple[IPv4Address, ...]
    masquerade_to: IPv4Address


@dataclass(frozen=True)
class SnatRule:
    """Source NAT of cross-cluster traffic leaving through ``out_interface``: to the Gateway IP
    on the Gateway, and on other Nodes to the source address the packet already has
    (``to_address`` None). That null binding is what makes the Node's or the primary CNI's
    own masquerade rules (kind's, a cluster's "SNAT what leaves the Pod CIDR") pass the
    packet by, so it reaches the Gateway with its Pod's address, and so with its label
    identity, as Antrea's Gateway sees it."""

    out_interface: str
    destinations: tuple[IPv4Network, ...]
    to_address: IPv4Address | None


@dataclass(frozen=True)
class GlobalDnat:
    """On the Gateway of a globally addressed cluster: its exported Pods' global addresses
    translated to the Pods' own (nat prerouting, before kube-proxy). An exported Service's global
    address needs no rule here: it is an externalIP of the Service's shadow, which kube-proxy
    translates."""

    mappings: tuple[tuple[IPv4Address, IPv4Address], ...]
    """(global IP, Pod IP), sorted by global IP."""


@dataclass(frozen=True)
class WireGuardPeer:
    """A remote Gateway reached over WireGuard."""

    public_key: str
    endpoint: IPv4Address
    port: int
    allowed_ips: tuple[IPv4Network, ...]


@dataclass(frozen=True)
class WireGuardDevice:
    """The Gateway's WireGuard device and its peers."""

    name: str
    listen_port: int
    peers: tuple[WireGuardPeer, ...]


@dataclass(frozen=True)
class ProbeTarget:
    """A Gateway probed: a remote cluster's by the active Gateway, or (our own cluster ID) our own
    cluster's by a candidate Node that is not the Gateway."""

    cluster_id: str
    gateway_ip: IPv4Address
    by_kernel: bool = False
    """Answered by the Node's kernel, not its agent (a TCP SYN to the probe port; the RST of a
    closed port counts): our own Gateway's datapath lives in its kernel and outlives a restart
    of its agent, which must not move the Gateway. Remote Gateways are probed agent to agent,
    with a knock on their kernel after an unanswered echo (agent.health)."""
    standby: bool = False
    """A remote Gateway this Node stopped sending to because its probes went unanswered
    (agent.desired, ``unreachable``), probed by echo alone until its agent answers again: a
    kernel that answers while its datapath is not back yet must not take flows back."""

    @property
    def key(self) -> str:
        """One remote Gateway per cluster is probed (its cluster ID); our own cluster's, which in
        active-active mode are several, and a remote's on standby, by cluster ID and address."""
        return f"{self.cluster_id}/{self.gateway_ip}" if self.by_kernel or self.standby else self.cluster_id


@dataclass(frozen=True)
class DesiredDatapath:
    """Everything the agent wants in the kernel of its Node. Empty means: nothing of ours."""

    role: Role
    tunnel: TunnelDevice | None = None
    tunnel_peers: tuple[TunnelPeer, ...] = ()
    wireguard: WireGuardDevice | None = None
    routes: tuple[Route, ...] = ()
    spread: SpreadRoutes | None = None
    rules: tuple[PolicyRule, ...] = ()
    snat: SnatRule | None = None
    mss_clamp_interfaces: tuple[str, ...] = ()
    """Interfaces whose forwarded TCP SYNs get their MSS clamped to the route MTU."""
    reply_marking: ReplyMarking | None = None
    arrival_return: ArrivalReturn | None = None
    probe_targets: tuple[ProbeTarget, ...] = ()
    remote_clusters: tuple[str, ...] = ()
    """Cluster IDs whose traffic is routed."""
    policy: PolicyDatapath | None = None
    """The active VXLAN Gateway's identity tagging and ClusterSet rules (agent.policy)."""
    global_dnat: GlobalDnat | None = None
    exclusions: tuple[Exclusion, ...] = field(default=())
    reports_reachability: bool = False
    """This Gateway writes the remote Gateways' GatewayReachable conditions (in active-active
    mode only the first local Gateway does, so that they do not overwrite each other)."""

    @property
    def is_empty(self) -> bool:
        return (
            self.tunnel is None
            and self.wireguard is None
            and not self.routes
            and self.spread is None
            and self.snat is None
            and self.reply_marking is None
            and self.arrival_return is None
            and self.global_dnat is None
        )

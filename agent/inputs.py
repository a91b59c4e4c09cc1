"""What the agent is told: the local Node, the cluster's active Gateway, remote clusters.

The kube wiring converts Node, Gateway and ClusterInfoImport CRs into these frozen
values. Addresses stay strings as the CRs carry them: remote values come from other
clusters and are validated (and possibly excluded, with a reason) by agent.desired.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.policy.state import CompiledPolicy


@dataclass(frozen=True)
class LocalNode:
    """The Node this agent runs on."""

    name: str
    internal_ip: str
    """The Node's InternalIP; the source of tunnels to the local Gateway."""
    pod_cidrs: tuple[str, ...] = ()
    """The Node's own Pod CIDR(s) (Node.spec.podCIDRs)."""
    gateway_candidate: bool = False
    """Annotated as a Gateway candidate (mcapi.gateway_nodes): while another Node is the
    Gateway, this one probes it, so that the member can replace it as soon as it stops answering."""


@dataclass(frozen=True)
class LocalCluster:
    """The local cluster's identity and address ranges (from the member's config)."""

    cluster_id: str
    service_cidr: str | None = None
    pod_cidrs: tuple[str, ...] = ()
    global_cidr: str | None = None
    """The cluster's global block while the hub says it is globally addressed (None: it is
    reached at its own addresses). Its Gateway SNATs cross-cluster traffic to the block's first
    host address (its egress address) instead of the Gateway IP."""
    global_pods: tuple[tuple[str, str], ...] = ()
    """(global IP, Pod IP) of every exported Pod endpoint: the Gateway translates the first to
    the second (from the member's ConfigMap mchub-global-addresses)."""


@dataclass(frozen=True)
class ActiveGateway:
    """The cluster's Gateway CR (named after the Gateway Node)."""

    node_name: str
    gateway_ip: str
    """Address remote Gateways tunnel to."""
    internal_ip: str
    """Address the cluster's other Nodes tunnel to."""
    handing_over: bool = False
    """Its Node was cordoned and the Gateway moves away in a moment (the member's annotation,
    mcapi.gateway_nodes.ANNOTATION_HANDING_OVER): it masquerades what arrives meanwhile."""


@dataclass(frozen=True)
class RemoteCluster:
    """One ClusterInfoImport: another member cluster's network information."""

    cluster_id: str
    service_cidr: str | None
    gateway_ips: tuple[str, ...]
    """gatewayInfos[].gatewayIP; the first one is used, as Antrea does."""
    pod_cidrs: tuple[str, ...] = ()
    wireguard_public_key: str | None = None
    global_cidr: str | None = None
    """The cluster's global block while it is globally addressed: then it is routed instead of
    the Service and Pod CIDRs (None: those are routed)."""


@dataclass(frozen=True)
class AgentInputs:
    """Everything the desired datapath depends on, besides the agent config."""

    node: LocalNode
    cluster: LocalCluster
    gateway: ActiveGateway | None
    """The Gateway of single-active mode (with several Gateway CRs, the lowest-named)."""
    remotes: tuple[RemoteCluster, ...] = ()
    gateways: tuple[ActiveGateway, ...] = ()
    """Every live Gateway CR, by name (empty: just ``gateway``)."""
    active_active: bool = False
    """The member's ``gatewayMode`` is active-active: every Gateway in ``gateways`` carries traffic."""
    wireguard_public_key: str | None = None
    """This agent's own WireGuard public key (published in its Gateway CR)."""
    policy: CompiledPolicy | None = None
    """ClusterSet-scoped policy rules and label identities (enableStretchedNetworkPolicy)."""

    @property
    def all_gateways(self) -> tuple[ActiveGateway, ...]:
        return self.gateways or ((self.gateway,) if self.gateway is not None else ())

    def carrying_gateways(self, *, wireguard: bool) -> tuple[ActiveGateway, ...]:
        """The Gateways that carry cross-cluster traffic: every one in active-active mode, else the
        first. With WireGuard only the first: a ClusterInfo carries one public key."""
        return self.all_gateways if self.active_active and not wireguard else self.all_gateways[:1]

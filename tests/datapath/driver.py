"""Drives one DatapathAgent per Node of a namespace topology, as the kube wiring would.

The driver holds the ClusterSet's "API state" (each cluster's active Gateway, which
ClusterInfoImports each cluster has) and turns it into AgentInputs for every agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agent.config import AgentConfig, HealthConfig, TrafficEncryptionMode, TunnelConfig, WireGuardConfig
from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from agent.policy.state import CompiledPolicy
from agent.runner import DEFAULT_RESYNC_INTERVAL, DatapathAgent, ReconcileOutcome
from agent.wgkey import WireGuardKeyPair, generate_key_pair
from tests.datapath.topology import ClusterNs, NodeNs, Topology

FAST_HEALTH = HealthConfig(interval_seconds=0.05, miss_threshold=5)


@dataclass
class ClusterSetDriver:
    topo: Topology
    wireguard: bool = False
    pod_to_pod: bool = True
    gateways: dict[str, str] = field(default_factory=dict)
    """cluster ID -> Node name of its active Gateway (absent: no Gateway)."""
    withdrawn: set[tuple[str, str]] = field(default_factory=set)
    """(importing cluster, exporting cluster) pairs whose ClusterInfoImport is gone."""
    agents: dict[str, DatapathAgent] = field(default_factory=dict)
    keys: dict[str, WireGuardKeyPair] = field(default_factory=dict)
    policy: Callable[[str], CompiledPolicy] | None = None
    """cluster ID -> its compiled ClusterSet policy (enableStretchedNetworkPolicy); None: off."""
    resync_interval: float | None = DEFAULT_RESYNC_INTERVAL
    """How often every agent applies its unchanged inputs again."""
    global_blocks: dict[str, str] = field(default_factory=dict)
    """cluster ID -> its global block, for the globally addressed clusters (what the hub stamps)."""
    global_pods: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    """cluster ID -> (global IP, Pod IP) of its exported Pods (its member's mchub-global-addresses)."""
    active_active: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """cluster ID -> its Gateways' Node names, for the clusters in gatewayMode active-active."""
    retire_seconds: float = TunnelConfig().retire_seconds
    handing_over: set[str] = field(default_factory=set)
    """Node names whose Gateway CR says it hands over (the member's annotation before a drain's move)."""

    def __post_init__(self) -> None:
        for cluster in self.topo.clusters.values():
            self.gateways.setdefault(cluster.cluster_id, cluster.nodes[0].name)
            for node in cluster.nodes:
                self.keys[node.name] = generate_key_pair()
                self.agents[node.name] = DatapathAgent(
                    self.config_for(node),
                    netns=node.netns,
                    wireguard_private_key=self.keys[node.name].private_key,
                    resync_interval=self.resync_interval,
                )

    def config_for(self, node: NodeNs) -> AgentConfig:
        return AgentConfig(
            enable_gateway=True,
            enable_pod_to_pod_connectivity=self.pod_to_pod,
            traffic_encryption_mode=TrafficEncryptionMode.WIREGUARD if self.wireguard else TrafficEncryptionMode.NONE,
            wireguard=WireGuardConfig(interface=self.topo.wireguard_name(node)),
            health=FAST_HEALTH,
            tunnel=TunnelConfig(retire_seconds=self.retire_seconds),
            enable_stretched_network_policy=self.policy is not None,
        )

    def gateway_node(self, cluster: ClusterNs) -> NodeNs | None:
        name = self.gateways.get(cluster.cluster_id)
        return None if name is None else cluster.node(name)

    def gateway_nodes(self, cluster: ClusterNs) -> tuple[NodeNs, ...]:
        """Its Gateways: the active-active set, else the one Gateway (if any)."""
        if cluster.cluster_id in self.active_active:
            return tuple(cluster.node(name) for name in self.active_active[cluster.cluster_id])
        gateway = self.gateway_node(cluster)
        return () if gateway is None else (gateway,)

    def cluster_info(self, cluster: ClusterNs) -> RemoteCluster | None:
        """What ``cluster`` exports (None while it has no Gateway)."""
        gateways = self.gateway_nodes(cluster)
        if not gateways:
            return None
        gateway = gateways[0]
        return RemoteCluster(
            cluster_id=cluster.cluster_id,
            service_cidr=cluster.service_cidr,
            gateway_ips=tuple(g.underlay_ip for g in gateways),
            pod_cidrs=(cluster.pod_cidr,),
            wireguard_public_key=self.keys[gateway.name].public_key,
            global_cidr=self.global_blocks.get(cluster.cluster_id),
        )

    def inputs_for(self, cluster: ClusterNs, node: NodeNs) -> AgentInputs:
        gateway = self.gateway_node(cluster)
        remotes = []
        for other in self.topo.clusters.values():
            info = self.cluster_info(other)
            if other is cluster or info is None or (cluster.cluster_id, other.cluster_id) in self.withdrawn:
                continue
            remotes.append(info)
        return AgentInputs(
            node=LocalNode(node.name, node.underlay_ip, (node.pod_cidr,)),
            cluster=LocalCluster(
                cluster.cluster_id,
                cluster.service_cidr,
                (cluster.pod_cidr,),
                global_cidr=self.global_blocks.get(cluster.cluster_id),
                global_pods=self.global_pods.get(cluster.cluster_id, ()),
            ),
            gateway=None if gateway is None else self._gateway_cr(gateway),
            remotes=tuple(remotes),
            wireguard_public_key=self.keys[node.name].public_key,
            policy=None if self.policy is None else self.policy(cluster.cluster_id),
            gateways=tuple(self._gateway_cr(g) for g in self.gateway_nodes(cluster)),
            active_active=cluster.cluster_id in self.active_active,
        )

    def _gateway_cr(self, node: NodeNs) -> ActiveGateway:
        return ActiveGateway(node.name, node.underlay_ip, node.underlay_ip, node.name in self.handing_over)

    async def sync_node(self, name: str) -> ReconcileOutcome:
        """Push current inputs to one Node's agent (its watch saw a change before the others')."""
        cluster = next(c for c in self.topo.clusters.values() if any(n.name == name for n in c.nodes))
        outcome = await self.agents[name].update(self.inputs_for(cluster, cluster.node(name)))
        assert outcome.applied, f"{name}: {outcome.error!r}"
        return outcome

    async def sync(self, *only: str) -> dict[str, ReconcileOutcome]:
        """Push current inputs to every agent (``only``: of these clusters, the others keep what
        they were told last, as members that have not heard of a change yet); fail loudly if any
        reconcile failed."""
        outcomes = {}
        for cluster in self.topo.clusters.values():
            if only and cluster.cluster_id not in only:
                continue
            for node in cluster.nodes:
                outcome = await self.agents[node.name].update(self.inputs_for(cluster, node))
                assert outcome.applied, f"{node.name}: {outcome.error!r}"
                outcomes[node.name] = outcome
        return outcomes

    def move_gateway(self, cluster_id: str, node_name: str) -> None:
        self.gateways[cluster_id] = node_name

    def withdraw(self, importer: str, exporter: str) -> None:
        self.withdrawn.add((importer, exporter))

    async def stop_all(self, *, cleanup: bool = True) -> None:
        errors = []
        for name, agent in self.agents.items():
            try:
                await agent.stop(cleanup=cleanup)
            except Exception as err:  # keep cleaning the others
                errors.append(f"{name}: {err!r}")
        assert not errors, errors

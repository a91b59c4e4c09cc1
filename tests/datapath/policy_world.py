"""The "API state" of ClusterSet policy for the namespace topology, as the Kubernetes side
would hand it to each Gateway agent: Pod labels, the hub's label identities, each
cluster's Antrea policies, Tiers and multi-cluster Services.

Every Node's Pod (topology.py: ``10.<c>.<n>.10``) is Pod ``<node>-pod`` in Namespace
``default``, with the named container ports ``container_ports`` gives it. Identities are
allocated as the hub does: one ID per distinct normalized label across the clusters, stable
for the label's life (IDs start at a value above 16 bits so the tests cover the whole 24-bit
path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Address
from typing import Any

from agent.policy.compile import LocalPod, MultiClusterService, PolicyObject, PolicySources, compile_policies
from agent.policy.labels import LabelIdentity, identity_from_label
from agent.policy.named_ports import ContainerPort
from agent.policy.state import CompiledPolicy
from mcapi.labels import normalized_label
from tests.datapath.topology import Topology

NAMESPACE = "default"
FIRST_ID = 0x10000 + 7


@dataclass
class PolicyWorld:
    topo: Topology
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    """Node name -> the labels of the Pod on it."""
    policies: dict[str, list[PolicyObject]] = field(default_factory=dict)
    tiers: dict[str, dict[str, int]] = field(default_factory=dict)
    services: dict[str, list[MultiClusterService]] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)
    container_ports: dict[str, tuple[ContainerPort, ...]] = field(default_factory=dict)
    """Node name -> the named container ports of the Pod on it."""

    def label_of(self, node: str) -> str:
        return normalized_label(NAMESPACE, {}, self.labels.get(node, {}))

    def identities(self) -> tuple[LabelIdentity, ...]:
        wanted = sorted({self.label_of(n.name) for c in self.topo.clusters.values() for n in c.nodes})
        for label in wanted:
            self.ids.setdefault(label, FIRST_ID + len(self.ids))
        found = [identity_from_label(self.ids[label], label) for label in wanted]
        return tuple(i for i in found if i is not None)

    def identity_of(self, node: str) -> int:
        self.identities()
        return self.ids[self.label_of(node)]

    def compiled(self, cluster_id: str) -> CompiledPolicy:
        cluster = self.topo.clusters[cluster_id]
        pods = tuple(
            LocalPod(
                NAMESPACE,
                f"{n.name}-pod",
                IPv4Address(n.pod.ip),
                tuple(sorted(self.labels.get(n.name, {}).items())),
                self.container_ports.get(n.name, ()),
            )
            for n in cluster.nodes
        )
        sources = PolicySources(
            policies=tuple(self.policies.get(cluster_id, [])),
            tiers=self.tiers.get(cluster_id, {}),
            identities=self.identities(),
            pods=pods,
            namespaces={NAMESPACE: {}},
            services=tuple(self.services.get(cluster_id, [])),
        )
        return compile_policies(sources)


def acnp(name: str, spec: dict[str, Any]) -> PolicyObject:
    return PolicyObject("ClusterNetworkPolicy", {"metadata": {"name": name, "generation": 1}, "spec": spec})


def ingress_from_cluster_set(
    name: str,
    action: str,
    peer_labels: dict[str, str],
    *,
    priority: float = 5,
    tier: str | None = None,
    applied_to: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
) -> PolicyObject:
    spec: dict[str, Any] = {
        "priority": priority,
        "appliedTo": [{"podSelector": {"matchLabels": applied_to or {}}}],
        "ingress": [{"action": action, "from": [{"scope": "ClusterSet", "podSelector": {"matchLabels": peer_labels}}]}],
    }
    if tier is not None:
        spec["tier"] = tier
    if ports is not None:
        spec["ingress"][0]["ports"] = ports
    return acnp(name, spec)


def egress_to_services(
    name: str, action: str, services: list[str], *, priority: float = 1, applied_to: dict[str, str] | None = None
) -> PolicyObject:
    """An ACNP whose one egress rule goes to the ClusterSet Services ``services`` of NAMESPACE."""
    rule = {
        "action": action,
        "toServices": [{"name": service, "namespace": NAMESPACE, "scope": "ClusterSet"} for service in services],
    }
    spec = {"priority": priority, "appliedTo": [{"podSelector": {"matchLabels": applied_to or {}}}], "egress": [rule]}
    return acnp(name, spec)

"""PolicyView: informers over what ClusterSet policy needs, compiled into a CompiledPolicy.

Every Pod, Namespace and LabelIdentity of the cluster, the imported Services and Endpoints
(label ``multicluster.antrea.io/imported-service=true``), and Antrea's ClusterNetworkPolicies,
NetworkPolicies and Tiers (crd.antrea.io/v1beta1). A kind whose CRD is not served when the
agent starts (Antrea's CRDs beside another CNI are optional) is taken as empty and logged.
Every event sets the shared ``changed`` signal of the agent's ClusterView.

RBAC it needs: get/list/watch pods, namespaces, services, endpoints (cluster-wide),
labelidentities, clusternetworkpolicies, networkpolicies, tiers; patch their status; create
and patch events.
"""

from __future__ import annotations

import asyncio
import logging

from agent.policy.compile import PolicySources, compile_policies
from agent.policy.kube_objects import (
    label_identities,
    local_pods,
    multicluster_services,
    namespace_labels,
    policy_objects,
    tier_priorities,
)
from agent.policy.state import CompiledPolicy
from kube.client import KubeClient, WatchEvent
from kube.errors import Forbidden, NotFound
from kube.informer import Informer
from kube.manager import Watches
from kube.resources import ENDPOINTS, NAMESPACES, PODS, SERVICES, Obj, Resource
from mcapi.crds.antrea_policy import ANTREA_CRD_GROUP
from mcapi.names import ANNOTATION_IMPORTED_SERVICE
from mcapi.resources import LABEL_IDENTITIES

log = logging.getLogger(__name__)

CLUSTER_NETWORK_POLICIES = Resource(
    ANTREA_CRD_GROUP, "v1beta1", "clusternetworkpolicies", "ClusterNetworkPolicy", False
)
NETWORK_POLICIES = Resource(ANTREA_CRD_GROUP, "v1beta1", "networkpolicies", "NetworkPolicy", True)
TIERS = Resource(ANTREA_CRD_GROUP, "v1beta1", "tiers", "Tier", False)
_OPTIONAL = (LABEL_IDENTITIES, CLUSTER_NETWORK_POLICIES, NETWORK_POLICIES, TIERS)


class PolicyView:
    def __init__(self, client: KubeClient, changed: asyncio.Event) -> None:
        self.client = client
        self.changed = changed
        # Seconds for every informer's first list at start (None: no limit).
        self.sync_timeout: float | None = 30.0
        imported = f"{ANNOTATION_IMPORTED_SERVICE}=true"
        self._informers: dict[Resource, Informer] = {
            PODS: Informer(client, PODS, handler=self._on_event),
            NAMESPACES: Informer(client, NAMESPACES, handler=self._on_event),
            SERVICES: Informer(client, SERVICES, label_selector=imported, handler=self._on_event),
            ENDPOINTS: Informer(client, ENDPOINTS, label_selector=imported, handler=self._on_event),
        }

    async def start(self) -> None:
        """Sync every informer, within ``sync_timeout`` (the owner stops the view after a failed start too)."""
        for resource in _OPTIONAL:
            try:
                await self.client.list(resource, limit=1)
            except (NotFound, Forbidden) as err:
                log.info("policyKindNotReadable", extra={"kind": resource.qualified_name, "error": str(err)})
                continue
            self._informers[resource] = Informer(self.client, resource, handler=self._on_event)
        await Watches(*self._informers.values(), sync_timeout=self.sync_timeout).start()

    async def stop(self) -> None:
        await Watches(*self._informers.values()).stop()

    async def _on_event(self, event: WatchEvent) -> None:
        self.changed.set()

    def _list(self, resource: Resource) -> list[Obj]:
        informer = self._informers.get(resource)
        return informer.list() if informer is not None else []

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj | None:
        informer = self._informers.get(resource)
        return informer.get(name, namespace) if informer is not None else None

    def sources(self) -> PolicySources:
        return PolicySources(
            policies=policy_objects(self._list(CLUSTER_NETWORK_POLICIES), self._list(NETWORK_POLICIES)),
            tiers=tier_priorities(self._list(TIERS)),
            identities=label_identities(self._list(LABEL_IDENTITIES)),
            pods=local_pods(self._list(PODS)),
            namespaces=namespace_labels(self._list(NAMESPACES)),
            services=multicluster_services(self._list(SERVICES), self._list(ENDPOINTS)),
        )

    def compiled(self) -> CompiledPolicy:
        return compile_policies(self.sources())

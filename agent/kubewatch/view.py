"""ClusterView: informers over everything agent/kube_inputs.py reads, and one "changed" signal.

Its own Node by field selector; Gateways, ClusterInfoImports, the member ConfigMap, the
member's global addresses (ConfigMap mchub-global-addresses) and the ClusterSet (when the CRD
is served) in the member Namespace. ``changed`` is set by every
event; the consumer clears it, reads ``inputs()`` and acts if they differ from the last.
"""

from __future__ import annotations

import asyncio
import logging

from agent.inputs import AgentInputs
from agent.kube_inputs import build_inputs
from kube.client import KubeClient, WatchEvent
from kube.errors import Forbidden, NotFound
from kube.informer import Informer
from kube.manager import Watches
from kube.resources import CONFIG_MAPS, NODES, Obj
from mcapi import global_addresses
from mcapi.names import MC_CONTROLLER_CONFIGMAP
from mcapi.resources import CLUSTER_INFO_IMPORTS, CLUSTER_SETS, GATEWAYS

log = logging.getLogger(__name__)


class ClusterView:
    def __init__(self, client: KubeClient, node_name: str, namespace: str) -> None:
        self.client = client
        self.node_name = node_name
        self.namespace = namespace
        self.changed = asyncio.Event()
        self.node_changed = asyncio.Event()
        self._node = Informer(client, NODES, field_selector=f"metadata.name={node_name}", handler=self._on_node)
        self._gateways = Informer(client, GATEWAYS, namespace=namespace, handler=self._on_event)
        self._imports = Informer(client, CLUSTER_INFO_IMPORTS, namespace=namespace, handler=self._on_event)
        self._configmap = self._one_configmap(client, MC_CONTROLLER_CONFIGMAP)
        self._global_addresses = self._one_configmap(client, global_addresses.CONFIGMAP)
        self._cluster_sets: Informer | None = None
        # Seconds for every informer's first list at start (None: no limit).
        self.sync_timeout: float | None = 30.0

    def _one_configmap(self, client: KubeClient, name: str) -> Informer:
        """A watch of the member Namespace's ConfigMap ``name`` only (not every ConfigMap there)."""
        selector = f"metadata.name={name}"
        return Informer(client, CONFIG_MAPS, namespace=self.namespace, field_selector=selector, handler=self._on_event)

    async def start(self) -> None:
        """Sync every informer, within ``sync_timeout``; raises the first informer's error (a
        missing CRD, RBAC). The owner stops the view after a failed start too (kube.manager)."""
        try:
            await self.client.list(CLUSTER_SETS, self.namespace, limit=1)
        except (NotFound, Forbidden) as err:
            log.info("clusterSetNotReadable", extra={"namespace": self.namespace, "error": str(err)})
        else:
            self._cluster_sets = Informer(self.client, CLUSTER_SETS, namespace=self.namespace, handler=self._on_event)
        await Watches(*self._informers(), sync_timeout=self.sync_timeout).start()
        self.changed.set()
        self.node_changed.set()

    async def stop(self) -> None:
        await Watches(*self._informers()).stop()

    @property
    def synced(self) -> bool:
        """Every informer has listed what it watches."""
        return all(informer.synced.is_set() for informer in self._informers())

    def _informers(self) -> list[Informer]:
        found = [self._node, self._gateways, self._imports, self._configmap, self._global_addresses]
        return found + ([self._cluster_sets] if self._cluster_sets is not None else [])

    async def _on_event(self, event: WatchEvent) -> None:
        self.changed.set()

    async def _on_node(self, event: WatchEvent) -> None:
        self.changed.set()
        self.node_changed.set()

    @property
    def node(self) -> Obj | None:
        return self._node.get(self.node_name)

    def imports(self) -> list[Obj]:
        return self._imports.list(self.namespace)

    def inputs(self, wireguard_public_key: str | None) -> AgentInputs | None:
        return build_inputs(
            self.node,
            self._gateways.list(self.namespace),
            self.imports(),
            configmap=self._configmap.get(MC_CONTROLLER_CONFIGMAP, self.namespace),
            global_addresses=self._global_addresses.get(global_addresses.CONFIGMAP, self.namespace),
            cluster_sets=self._cluster_sets.list(self.namespace) if self._cluster_sets is not None else (),
            wireguard_public_key=wireguard_public_key,
        )

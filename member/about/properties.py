"""This cluster's ClusterProperties (about.k8s.io, KEP-2149): watched from the member's start to its
stop, and the two well-known ones written while it is a member.

- ``cluster.clusterset.k8s.io`` is the cluster's ID. One a person (or another tool) wrote is
  where the member takes its ID from; without one, the member writes it from its ClusterSet (and
  keeps it in step with it), labelled as its own.
- ``clusterset.k8s.io`` names the ClusterSet; it exists only while the cluster is a member: the
  member writes it when it joins and removes it when it leaves.

The member removes only properties it wrote (its label ``app.kubernetes.io/managed-by:
mchub-member``). Every property goes to the hub in the member's announces (member.about.inventory).
A cluster without the ClusterProperty CRD has no properties: the member then takes its ID from
its ClusterSet, as before the About API, and says so once in its log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kube.apply import delete_if_owned, ensure
from kube.client import KubeClient, WatchEvent
from kube.discovery import first_served
from kube.informer import Informer
from kube.resources import Obj, Resource, name_of
from kube.writecache import WriteThroughCache
from mcapi.crds import PROPERTY_CLUSTER_ID, PROPERTY_CLUSTER_SET
from mcapi.resources import CLUSTER_PROPERTIES, CLUSTER_PROPERTIES_V1ALPHA1

log = logging.getLogger(__name__)

LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_MEMBER = "mchub-member"

Listener = Callable[[str], None]


def written_by_member(obj: Obj) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_MANAGED_BY) == MANAGED_BY_MEMBER


def property_value(obj: Obj | None) -> str:
    spec = (obj or {}).get("spec") or {}
    value = spec.get("value")
    return value if isinstance(value, str) else ""


class ClusterProperties:
    """A Runnable of the member: the watch of this cluster's ClusterProperties, and its writes."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._resource: Resource | None = None
        self._informer: Informer | None = None
        self._cache: WriteThroughCache | None = None
        self._listeners: list[Listener] = []

    async def start(self) -> None:
        self._resource = await first_served(self._client, (CLUSTER_PROPERTIES, CLUSTER_PROPERTIES_V1ALPHA1))
        if self._resource is None:
            log.warning(
                "the ClusterProperty CRD (about.k8s.io) is not installed: the cluster ID comes from the "
                "ClusterSet, and announces carry no ClusterProperties"
            )
            return
        self._informer = Informer(self._client, self._resource, handler=self._on_event)
        self._cache = WriteThroughCache(self._informer)
        self._informer.start()
        await self._informer.wait_synced()

    async def stop(self) -> None:
        informer, self._informer, self._cache = self._informer, None, None
        if informer is not None:
            await informer.stop()

    @property
    def available(self) -> bool:
        return self._cache is not None

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(name)`` whenever a property changes (ours included), until the returned
        function is called."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def _on_event(self, event: WatchEvent) -> None:
        assert self._cache is not None
        self._cache.observe(event)
        for listener in list(self._listeners):
            listener(name_of(event.object))

    # ---- reading ---------------------------------------------------------------

    def get(self, name: str) -> Obj | None:
        return self._cache.get(name) if self._cache is not None else None

    def values(self) -> dict[str, str]:
        """Every property, name -> value (none without the CRD)."""
        if self._cache is None:
            return {}
        found = {name_of(obj): property_value(obj) for obj in self._cache.list()}
        return {name: value for name, value in found.items() if value}

    def cluster_id_of_a_person(self) -> str:
        """The value of ``cluster.clusterset.k8s.io`` when someone other than the member wrote it."""
        found = self.get(PROPERTY_CLUSTER_ID)
        return property_value(found) if found is not None and not written_by_member(found) else ""

    # ---- writing (while a member) ----------------------------------------------------

    async def claim(self, cluster_id: str, cluster_set_id: str) -> None:
        """This cluster is member ``cluster_id`` of ``cluster_set_id``: the well-known properties say so
        (the ID only when nobody else wrote it)."""
        if self._cache is None:
            return
        if not self.cluster_id_of_a_person():
            await self._write(PROPERTY_CLUSTER_ID, cluster_id)
        await self._write(PROPERTY_CLUSTER_SET, cluster_set_id)

    async def release(self) -> None:
        """The cluster left its ClusterSet: the properties the member wrote go."""
        if self._cache is None or self._resource is None:
            return
        for name in (PROPERTY_CLUSTER_SET, PROPERTY_CLUSTER_ID):
            found = self.get(name)
            if found is None or not written_by_member(found):
                continue
            await delete_if_owned(self._client, self._resource, name, owned_check=written_by_member)
            self._cache.deleted(found)
            log.info("cluster property removed", extra={"property": name})

    async def _write(self, name: str, value: str) -> None:
        assert self._resource is not None and self._cache is not None
        current = self.get(name)
        if current is not None and property_value(current) == value and written_by_member(current):
            return
        desired = {
            "apiVersion": self._resource.api_version,
            "kind": self._resource.kind,
            "metadata": {"name": name, "labels": {LABEL_MANAGED_BY: MANAGED_BY_MEMBER}},
            "spec": {"value": value},
        }
        applied = await ensure(self._client, self._resource, desired)
        self._cache.wrote(applied.object)
        log.info("cluster property written", extra={"property": name, "value": value})

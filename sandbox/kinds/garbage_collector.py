"""ownerReference garbage collection, as kube-controller-manager's collector does it.

- Background (default): when an owner is gone, each dependent none of whose owners
  still exists is deleted. A dependent created with only dangling owners goes too.
- Foreground: the owner keeps the `foregroundDeletion` finalizer until its
  dependents are gone.
- Orphan: the `orphan` finalizer makes the collector strip the owner's references
  from its dependents, then let the owner go.

Owners are matched by uid, so the collector works across kinds and from namespaced
dependents to cluster-scoped owners. Work runs on the next loop turn, never inside
the write that triggered it, so clients see deletion as asynchronous.
"""

from __future__ import annotations

import asyncio
import copy
import logging

from kube.resources import Obj
from sandbox.registry import DeleteOptions, Registry
from sandbox.resources import GroupResource, ResourceCatalog
from sandbox.store import ObjectKey, StoredEvent, object_key

log = logging.getLogger(__name__)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"

DependentKey = tuple[GroupResource, ObjectKey]


def _owner_uids(obj: Obj) -> set[str]:
    return {ref.get("uid", "") for ref in obj["metadata"].get("ownerReferences") or []}


class GarbageCollector:
    def __init__(self, registry: Registry, catalog: ResourceCatalog) -> None:
        self.registry = registry
        self.catalog = catalog
        self._dependents: dict[str, set[DependentKey]] = {}
        self._loop = asyncio.get_running_loop()

    def on_event(self, event: StoredEvent) -> None:
        obj, key = event.object, (event.resource, object_key(event.object))
        before = _owner_uids(event.previous) if event.previous else set()
        after = _owner_uids(obj) if event.type != "DELETED" else set()
        for uid in before - after:
            self._dependents.get(uid, set()).discard(key)
        for uid in after - before:
            self._dependents.setdefault(uid, set()).add(key)
        if event.type == "ADDED" and after:
            self._loop.call_soon(self._collect_if_orphaned, key)
        uid = obj["metadata"].get("uid", "")
        if event.type == "DELETED":
            for dependent in list(self._dependents.get(uid, ())):
                self._loop.call_soon(self._collect_if_orphaned, dependent)
            for owner_uid in _owner_uids(obj):
                self._loop.call_soon(self._finish_foreground, owner_uid)
        elif obj["metadata"].get("deletionTimestamp"):
            finalizers = obj["metadata"].get("finalizers") or []
            if ORPHAN in finalizers:
                self._loop.call_soon(self._orphan, event.resource, obj)
            if FOREGROUND in finalizers:
                self._loop.call_soon(self._start_foreground, uid)

    def _get(self, key: DependentKey) -> Obj | None:
        resource, (namespace, name) = key
        return self.registry.store.get(resource, namespace, name)

    def _delete(self, key: DependentKey, propagation: str = "Background") -> None:
        resource, (namespace, name) = key
        rt = self.catalog.preferred_for_storage_key(resource)
        obj = self._get(key)
        if rt is None or obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        try:
            self.registry.delete(rt, namespace, name, DeleteOptions(propagation=propagation))
            log.info("garbage collected", extra={"object": f"{namespace}/{name}", "resource": resource[1]})
        except Exception:
            log.exception("garbage collection failed", extra={"object": f"{namespace}/{name}"})

    def _collect_if_orphaned(self, key: DependentKey) -> None:
        obj = self._get(key)
        if obj is None:
            return
        owners = _owner_uids(obj)
        if owners and not any(self.registry.store.by_uid(uid) for uid in owners):
            self._delete(key)

    def _orphan(self, resource: GroupResource, owner: Obj) -> None:
        uid = owner["metadata"].get("uid", "")
        for key in list(self._dependents.get(uid, ())):
            obj = self._get(key)
            if obj is None:
                continue
            updated = copy.deepcopy(obj)
            refs = [r for r in updated["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            if refs:
                updated["metadata"]["ownerReferences"] = refs
            else:
                updated["metadata"].pop("ownerReferences", None)
            self.registry.put_internal(key[0], updated)
        self.registry.remove_finalizer(resource, owner, ORPHAN)

    def _start_foreground(self, uid: str) -> None:
        for key in list(self._dependents.get(uid, ())):
            self._delete(key, propagation="Foreground")
        self._finish_foreground(uid)

    def _finish_foreground(self, uid: str) -> None:
        found = self.registry.store.by_uid(uid)
        if found is None:
            return
        resource, owner = found
        if FOREGROUND not in (owner["metadata"].get("finalizers") or []):
            return
        if not owner["metadata"].get("deletionTimestamp"):
            return
        if any(self._get(key) is not None for key in self._dependents.get(uid, ())):
            return
        self.registry.remove_finalizer(resource, owner, FOREGROUND)

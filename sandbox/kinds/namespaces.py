"""Namespaces: phase Active/Terminating and the namespace controller's cascade.

Deleting a Namespace marks it Terminating (deletionTimestamp set, spec.finalizers
still ["kubernetes"]); the controller then deletes everything in it, waits for
objects held by finalizers to go, and finally clears the "kubernetes" finalizer,
which removes the Namespace - the order a real control plane follows. A new
Namespace gets a "default" ServiceAccount and the "kube-root-ca.crt" ConfigMap,
as the ServiceAccount controller and root-CA publisher add them.
"""

from __future__ import annotations

import asyncio
import copy
import logging

from kube.resources import Obj
from sandbox.kinds.base import KindBehaviour
from sandbox.registry import NAMESPACES, DeleteOptions, Registry
from sandbox.resources import ResourceCatalog
from sandbox.store import StoredEvent
from sandbox.timefmt import now_rfc3339

log = logging.getLogger(__name__)

KUBERNETES_FINALIZER = "kubernetes"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"


class NamespaceBehaviour(KindBehaviour):
    def prepare_create(self, obj: Obj, *, dry_run: bool) -> None:
        obj["spec"] = {"finalizers": [KUBERNETES_FINALIZER]}
        obj["status"] = {"phase": "Active"}
        labels = obj["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def prepare_update(self, old: Obj, new: Obj, *, dry_run: bool) -> None:
        # spec.finalizers changes only through /finalize; the name label stays.
        if "spec" in old:
            new["spec"] = copy.deepcopy(old["spec"])
        labels = new["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = new["metadata"]["name"]

    def deletion_requested(self, obj: Obj) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def blocks_removal(self, obj: Obj) -> bool:
        spec_finalizers = (obj.get("spec") or {}).get("finalizers") or []
        return bool(obj["metadata"].get("finalizers") or spec_finalizers)


class NamespaceController:
    """Populates new namespaces and empties terminating ones."""

    def __init__(self, registry: Registry, catalog: ResourceCatalog, ca_pem: str) -> None:
        self.registry = registry
        self.catalog = catalog
        self.ca_pem = ca_pem
        self._scheduled: set[str] = set()
        self._loop = asyncio.get_running_loop()

    def on_event(self, event: StoredEvent) -> None:
        if event.resource == NAMESPACES:
            name = event.object["metadata"]["name"]
            if event.type == "ADDED":
                self._loop.call_soon(self._populate, name)
            if event.type != "DELETED" and event.object["metadata"].get("deletionTimestamp"):
                self._schedule(name)
        elif event.type == "DELETED" and event.namespace:
            ns = self.registry.store.get(NAMESPACES, "", event.namespace)
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self._schedule(event.namespace)

    def _schedule(self, namespace: str) -> None:
        if namespace not in self._scheduled:
            self._scheduled.add(namespace)
            self._loop.call_soon(self._sweep, namespace)

    def _populate(self, namespace: str) -> None:
        store = self.registry.store
        ns = store.get(NAMESPACES, "", namespace)
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        if store.get(("", "serviceaccounts"), namespace, "default") is None:
            self._create_quietly("serviceaccounts", namespace, {"metadata": {"name": "default"}})
        if store.get(("", "configmaps"), namespace, ROOT_CA_CONFIGMAP) is None:
            self._create_quietly(
                "configmaps", namespace, {"metadata": {"name": ROOT_CA_CONFIGMAP}, "data": {"ca.crt": self.ca_pem}}
            )

    def _create_quietly(self, plural: str, namespace: str, body: Obj) -> None:
        rt = self.catalog.lookup("", "v1", plural)
        if rt is None:
            return
        try:
            self.registry.create(rt, namespace, body)
        except Exception:
            # A user may have raced us to it; either way the namespace is usable.
            log.debug("namespace content not created", extra={"namespace": namespace, "resource": plural})

    def _sweep(self, namespace: str) -> None:
        self._scheduled.discard(namespace)
        store = self.registry.store
        ns = store.get(NAMESPACES, "", namespace)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        for resource in store.resources():
            rt = self.catalog.preferred_for_storage_key(resource)
            if rt is None or not rt.namespaced:
                continue
            for obj in store.list_objects(resource, namespace):
                if not obj["metadata"].get("deletionTimestamp"):
                    try:
                        self.registry.delete(rt, namespace, obj["metadata"]["name"], DeleteOptions())
                    except Exception:
                        log.exception("namespace content not deleted", extra={"namespace": namespace})
        leftover = sum(len(store.list_objects(r, namespace)) for r in store.resources())
        if leftover == 0:
            self._finalize(ns)

    def _finalize(self, ns: Obj) -> None:
        current = self.registry.store.get(NAMESPACES, "", ns["metadata"]["name"])
        if current is None:
            return
        updated = copy.deepcopy(current)
        updated.setdefault("spec", {})["finalizers"] = [
            f for f in (updated.get("spec") or {}).get("finalizers") or [] if f != KUBERNETES_FINALIZER
        ]
        updated.setdefault("status", {})["phase"] = "Terminating"
        log.info("namespace emptied", extra={"namespace": ns["metadata"]["name"], "at": now_rfc3339()})
        if not updated["metadata"].get("finalizers") and not updated["spec"]["finalizers"]:
            self.registry.store.remove(NAMESPACES, updated)
        else:
            self.registry.put_internal(NAMESPACES, updated)

"""CustomResourceDefinitions: validation, status, and serving their resources.

A created CRD is accepted at once (NamesAccepted and Established True) and its
served versions appear in discovery and the API before the create returns - a
real apiserver takes a moment, so clients that wait for Established work on both.
Deleting a CRD first deletes its custom resources (honouring their finalizers) under
the `customresourcecleanup.apiextensions.k8s.io` finalizer, then stops serving it. As
kube-apiserver v1.28 does (tests/sandbox/test_crd_deletion_semantics.py): the CRD is
Terminating meanwhile (InstanceDeletionPending, then InstanceDeletionInProgress), its
resources are still served but the create verb (POST) is refused with 405 - a server-side
apply of a missing object still creates it - and once it is gone its open watches end
(the stream closes, no ERROR event). A change of spec or accepted names also
rebuilds the resource's storage: its watches end and older resourceVersions are too old.

Custom resources are validated, pruned and defaulted by their structural schemas the way
a real apiserver with conversion strategy None does it: by the request's version on
writes, by the storage version when stored, by the storage and then the request's version
on reads (see custom_resources). Faithfulness notes: conversion is always None (webhook
conversion is not run); CEL validation rules (x-kubernetes-validations) are not checked.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import re
from dataclasses import dataclass
from typing import Any

from kube.conditions import Condition, find_condition, set_condition
from kube.resources import Obj
from sandbox import errors
from sandbox.errors import FieldError, go_string
from sandbox.kinds.base import KindBehaviour
from sandbox.kinds.custom_resources import CustomResourceVersion
from sandbox.registry import DeleteOptions, Registry
from sandbox.resources import GroupResource, PrinterColumn, ResourceCatalog, ResourceType
from sandbox.store import ObjectStore, StoredEvent

log = logging.getLogger(__name__)

CRDS: GroupResource = ("apiextensions.k8s.io", "customresourcedefinitions")
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_DEFAULT_COLUMNS = (PrinterColumn("Age", "date", ".metadata.creationTimestamp"),)


def _conditions(crd: Obj) -> list[Condition]:
    conditions: list[Condition] = crd.setdefault("status", {}).setdefault("conditions", [])
    return conditions


def _terminating_reason(crd: Obj) -> str | None:
    condition = find_condition((crd.get("status") or {}).get("conditions"), "Terminating")
    if condition is None or condition.get("status") != "True":
        return None
    reason: str = condition["reason"]
    return reason


def _names_with_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    names = dict(spec.get("names") or {})
    kind = names.get("kind", "")
    names.setdefault("singular", kind.lower())
    names.setdefault("listKind", f"{kind}List")
    return names


class CRDBehaviour(KindBehaviour):
    def prepare_create(self, obj: Obj, *, dry_run: bool) -> None:
        spec = obj.setdefault("spec", {})
        self._default_and_validate(obj)
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        conditions: list[Condition] = []
        set_condition(conditions, "NamesAccepted", "True", "NoConflicts", "no conflicts found")
        set_condition(conditions, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
        obj["status"] = {
            "conditions": conditions,
            "acceptedNames": spec["names"],
            "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")],
        }

    def deletion_requested(self, obj: Obj) -> None:
        message = "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
        set_condition(_conditions(obj), "Terminating", "True", "InstanceDeletionPending", message)

    def prepare_update(self, old: Obj, new: Obj, *, dry_run: bool) -> None:
        self._default_and_validate(new)
        status = new.setdefault("status", {})
        status["acceptedNames"] = new["spec"]["names"]
        stored = list(status.get("storedVersions") or [])
        for version in new["spec"]["versions"]:
            if version.get("storage") and version["name"] not in stored:
                stored.append(version["name"])
        status["storedVersions"] = stored

    def _default_and_validate(self, obj: Obj) -> None:
        spec = obj["spec"]
        name = obj["metadata"]["name"]
        spec["names"] = _names_with_defaults(spec)
        spec.setdefault("conversion", {"strategy": "None"})
        problems: list[FieldError] = []
        group, plural = spec.get("group", ""), spec["names"].get("plural", "")
        if name != f"{plural}.{group}":
            problems.append(FieldError("metadata.name", 'must be spec.names.plural+"."+spec.group', go_string(name)))
        if "." not in group:
            problems.append(FieldError("spec.group", "should be a domain with at least one dot", go_string(group)))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            problems.append(
                FieldError(
                    "spec.scope",
                    'supported values: "Cluster", "Namespaced"',
                    go_string(str(spec.get("scope"))),
                    "FieldValueNotSupported",
                )
            )
        if not spec["names"].get("kind"):
            problems.append(FieldError("spec.names.kind", "", kind="FieldValueRequired"))
        versions = spec.get("versions") or []
        if sum(1 for v in versions if v.get("storage")) != 1:
            problems.append(
                FieldError("spec.versions", "must have exactly one version marked as storage version", "[]")
            )
        if problems:
            raise errors.invalid("apiextensions.k8s.io", "CustomResourceDefinition", name, problems)


def _schema(version: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    return schema


def resource_types_of(crd: Obj) -> list[ResourceType]:
    spec = crd["spec"]
    names = _names_with_defaults(spec)
    versions = spec.get("versions") or []
    storage_version = next((v for v in versions if v.get("storage")), versions[0] if versions else {})
    storage = storage_version.get("name", "")
    types = []
    for version in versions:
        if not version.get("served", True):
            continue
        columns = tuple(
            PrinterColumn(
                c.get("name", ""),
                c.get("type", "string"),
                c.get("jsonPath", ""),
                c.get("description", ""),
                c.get("priority", 0),
                c.get("format", ""),
            )
            for c in version.get("additionalPrinterColumns") or []
        )
        selectable = tuple(s.get("jsonPath", "").lstrip(".") for s in version.get("selectableFields") or [])
        types.append(
            ResourceType(
                spec["group"],
                version["name"],
                names["plural"],
                names["kind"],
                spec.get("scope") == "Namespaced",
                names["singular"],
                tuple(names.get("shortNames") or ()),
                tuple(names.get("categories") or ()),
                status_subresource="status" in (version.get("subresources") or {}),
                tracks_generation=True,
                strategic_merge=False,
                selectable_fields=selectable,
                printer_columns=columns or _DEFAULT_COLUMNS,
                storage_version=storage,
                from_crd=True,
                codec=CustomResourceVersion(
                    _schema(version),
                    _schema(storage_version),
                    f"{spec['group']}/{version['name']}",
                    is_storage_version=version["name"] == storage,
                ),
            )
        )
    return types


class CustomResourceBehaviour(KindBehaviour):
    """The lifecycle of one CRD's custom resources: no creates while the CRD is terminating."""

    def __init__(self, store: ObjectStore, crd_name: str, resource: GroupResource) -> None:
        self.store, self.crd_name, self.resource = store, crd_name, resource

    def admit_create(self) -> None:
        crd = self.store.get(CRDS, "", self.crd_name)
        if crd is not None and _terminating_reason(crd) is not None:
            group, plural = self.resource
            raise errors.ApiError(
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
                {"group": group, "kind": plural},
            )


@dataclass(frozen=True)
class _Served:
    """A CRD whose resource is served: the resource's storage key, and what its storage was
    built from (uid, spec, accepted names): a change of it rebuilds the storage."""

    resource: GroupResource
    built_from: tuple[str, Any, Any]


class CRDController:
    """Keeps the catalog in step with CRDs and cleans up custom resources on deletion."""

    def __init__(self, registry: Registry, catalog: ResourceCatalog) -> None:
        self.registry = registry
        self.catalog = catalog
        self._served: dict[str, _Served] = {}
        self._loop = asyncio.get_running_loop()

    def on_event(self, event: StoredEvent) -> None:
        if event.resource == CRDS:
            crd = event.object
            name = crd["metadata"]["name"]
            if event.type == "DELETED":
                self._unserve(name)
                return
            if not crd["metadata"].get("deletionTimestamp"):
                self._serve(crd)
            else:
                self._loop.call_soon(self._cleanup, name)
        elif event.type == "DELETED":
            for name, served in self._served.items():
                if served.resource == event.resource:
                    self._loop.call_soon(self._cleanup, name)

    def _serve(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        built_from = (crd["metadata"].get("uid", ""), crd["spec"], (crd.get("status") or {}).get("acceptedNames"))
        previous = self._served.get(name)
        if previous is not None and previous.built_from == built_from:
            return  # a status or metadata change: a real apiserver keeps the storage too
        key = (crd["spec"]["group"], _names_with_defaults(crd["spec"])["plural"])
        if previous is not None:
            self.registry.store.rebuild(previous.resource)
        old_key = previous.resource if previous is not None else key
        self.catalog.remove_where(lambda rt: rt.from_crd and rt.storage_key == old_key)
        for rt in resource_types_of(crd):
            self.catalog.add(rt)
        self.catalog.set_version_order(key[0], _version_priority(crd["spec"].get("versions") or []))
        self.registry.register_behaviour(key, CustomResourceBehaviour(self.registry.store, name, key))
        self._served[name] = _Served(key, built_from)
        log.info("crd served", extra={"crd": name})

    def _unserve(self, name: str) -> None:
        served = self._served.pop(name, None)
        if served is not None:
            self.catalog.remove_where(lambda rt: rt.from_crd and rt.storage_key == served.resource)
            self.registry.store.rebuild(served.resource)
            log.info("crd no longer served", extra={"crd": name})

    def _cleanup(self, name: str) -> None:
        store = self.registry.store
        crd = store.get(CRDS, "", name)
        served = self._served.get(name)
        if crd is None or served is None or not crd["metadata"].get("deletionTimestamp"):
            return
        key = served.resource
        if _terminating_reason(crd) != "InstanceDeletionInProgress":
            crd = copy.deepcopy(crd)
            message = "CustomResource deletion is in progress"
            set_condition(_conditions(crd), "Terminating", "True", "InstanceDeletionInProgress", message)
            crd = self.registry.put_internal(CRDS, crd)
        rt = self.catalog.preferred_for_storage_key(key)
        remaining = store.list_objects(key)
        if rt is not None:
            for obj in remaining:
                if not obj["metadata"].get("deletionTimestamp"):
                    meta = obj["metadata"]
                    self.registry.delete(rt, meta.get("namespace", ""), meta["name"], DeleteOptions())
        if not store.list_objects(key):
            self.registry.remove_finalizer(CRDS, crd, CLEANUP_FINALIZER)


def _version_priority(versions: list[dict[str, Any]]) -> list[str]:
    """Kubernetes version order: GA > beta > alpha, higher numbers first (v1 > v1beta2 > v1alpha1)."""

    def rank(name: str) -> tuple[int, int, int, str]:
        match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
        if not match:
            return (3, 0, 0, name)
        major, stage, minor = match.groups()
        stage_rank = {None: 0, "beta": 1, "alpha": 2}[stage]
        return (stage_rank, -int(major), -int(minor or 0), name)

    return sorted((v["name"] for v in versions if v.get("served", True)), key=rank)

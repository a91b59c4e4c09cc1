"""Writing only what is ours, once per change: how imported objects are marked, and the
create-or-update and delete that read the importer's caches and refuse to touch anything else.

Antrea's rule: an object under the name an import needs that lacks the importer's
annotation belongs to a user (or another controller) and is never changed or deleted; the
import fails instead, and the user learns why from a Warning Event on their object and from
the import's status in the leader.

Every imported object also carries a label (the annotation's key), so the importer can watch
exactly its own objects; what the cache shows decides between create, patch and nothing, so
no request is sent that is expected to fail. The exceptions are a name taken by an object the
cache does not select (a user's, or one imported before the label existed): the create
answers AlreadyExists, and that object is read once and remembered, so retries read it
instead of failing again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kube.apply import contains, without_absent
from kube.client import KubeClient
from kube.errors import AlreadyExists, Conflict, Invalid, NotFound, TemporaryError
from kube.resources import Obj, Resource, name_of, namespace_of
from mcapi import names
from member.imports.outcome import Conflicting, ImportBlocked, ImportReason

if TYPE_CHECKING:
    from member.imports.caches import OwnedKind

log = logging.getLogger(__name__)

# Antrea also marks a ServiceImport with the cluster that imported it.
ANNOTATION_LOCAL_CLUSTER_ID = "multicluster.antrea.io/local-cluster-id"
# We publish the imported Service's EndpointSlices ourselves (one set per source cluster),
# so the EndpointSlice mirroring controller must not mirror the Endpoints as well.
LABEL_SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "mchub-member.multicluster.antrea.io"
# What the importer's watches select on (the annotations are what ownership is decided by).
LABEL_IMPORTED_SERVICE = names.ANNOTATION_IMPORTED_SERVICE
LABEL_IMPORTED_ACNP = names.ANNOTATION_IMPORTED_ACNP

# Set by the server; a desired object carrying them must not make them look "different".
_SERVER_METADATA = frozenset(
    {"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp"}
)


def imported_service_annotations() -> dict[str, str]:
    return {names.ANNOTATION_IMPORTED_SERVICE: "true"}


def imported_service_labels() -> dict[str, str]:
    return {LABEL_IMPORTED_SERVICE: "true"}


def _ref(resource: Resource, namespace: str | None, name: str) -> str:
    return f"{resource.kind} {namespace}/{name}" if namespace else f"{resource.kind} {name}"


def _managed(desired: Obj) -> Obj:
    body = {k: v for k, v in desired.items() if k not in ("status", "apiVersion", "kind")}
    body["metadata"] = {k: v for k, v in (desired.get("metadata") or {}).items() if k not in _SERVER_METADATA}
    return body


class ObjectWriter:
    """Writes one cluster's imported objects through the caches of their kinds."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        # Names found taken by an object our caches do not see: read, not created, on a retry.
        self._unseen: set[tuple[Resource, str | None, str]] = set()

    async def ensure(self, kind: OwnedKind, desired: Obj, *, import_name: str) -> Obj:
        """Create or update ``desired`` when what is there differs; returns the object as it is
        now. ImportBlocked when the name is someone else's or the API server refuses the object."""
        resource = kind.resource
        name, namespace = name_of(desired), namespace_of(desired)
        managed = _managed(desired)
        try:
            live = kind.get(name, namespace) or await self._read_unseen(resource, name, namespace)
            if live is None:
                created = await self._create(kind, managed, name, namespace)
                if created is not None:
                    return created
                live = await self._read_unseen(resource, name, namespace)
                if live is None:
                    raise TemporaryError(f"{_ref(resource, namespace, name)} was there and is gone", delay=0.1)
            if not kind.owns(live):
                raise self._conflict(kind, live, import_name)
            if (live.get("metadata") or {}).get("deletionTimestamp"):
                # Patching it is pointless and creating is refused until it is gone: come back later.
                raise TemporaryError(f"{_ref(resource, namespace, name)} is being deleted", delay=1.0)
            if contains(live, managed):
                return live
            patch = {
                **managed,
                "metadata": {**managed["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]},
            }
            try:
                updated = await self.client.patch(resource, name, patch, namespace)
            except NotFound:
                raise TemporaryError(f"{_ref(resource, namespace, name)} went away meanwhile", delay=0.1) from None
            kind.wrote(updated)
            self._unseen.discard((resource, namespace, name))
            log.info("importedObjectUpdated", extra={"kind": resource.kind, "object": _ref(resource, namespace, name)})
            return updated
        except Invalid as err:
            message = f"{_ref(resource, namespace, name)} refused by the API server: {err.message}"
            raise ImportBlocked(ImportReason.INVALID, message) from None

    async def ensure_status(self, kind: OwnedKind, live: Obj, desired_status: dict[str, Any]) -> Obj:
        """Patch the status subresource when ``desired_status`` is not already there (conditional
        on ``live``'s resourceVersion: a Conflict is retried once the cache has caught up)."""
        if contains(live.get("status") or {}, desired_status):
            return live
        name, namespace = name_of(live), namespace_of(live)
        patch = {"metadata": {"resourceVersion": live["metadata"]["resourceVersion"]}, "status": desired_status}
        updated = await self.client.patch_status(kind.resource, name, patch, namespace)
        kind.wrote(updated)
        return updated

    async def delete(self, kind: OwnedKind, live: Obj) -> bool:
        """Delete exactly this object (its uid): a same-named successor made meanwhile is not hit."""
        meta = live.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return False
        name, namespace = name_of(live), namespace_of(live)
        try:
            await self.client.delete(kind.resource, name, namespace, uid=meta.get("uid") or None)
        except (NotFound, Conflict):
            kind.deleted(live)
            return False  # gone, or replaced by another object of that name (uid precondition)
        kind.deleted(live)
        log.info(
            "importedObjectDeleted", extra={"kind": kind.resource.kind, "object": _ref(kind.resource, namespace, name)}
        )
        return True

    async def delete_all(self, kind: OwnedKind, import_name: str) -> int:
        deleted = 0
        for live in kind.of_import(import_name):
            if await self.delete(kind, live):
                deleted += 1
        return deleted

    async def _create(self, kind: OwnedKind, managed: Obj, name: str, namespace: str | None) -> Obj | None:
        """POST it; None when the name turned out to be taken by an object the cache does not see."""
        resource = kind.resource
        try:
            created = await self.client.create(resource, without_absent(managed), namespace)
        except AlreadyExists:
            self._unseen.add((resource, namespace, name))
            return None
        kind.wrote(created)
        log.info("importedObjectCreated", extra={"kind": resource.kind, "object": _ref(resource, namespace, name)})
        return created

    async def _read_unseen(self, resource: Resource, name: str, namespace: str | None) -> Obj | None:
        if (resource, namespace, name) not in self._unseen:
            return None
        try:
            return await self.client.get(resource, name, namespace)
        except NotFound:
            self._unseen.discard((resource, namespace, name))
            return None

    def _conflict(self, kind: OwnedKind, live: Obj, import_name: str) -> ImportBlocked:
        resource = kind.resource
        name, namespace = name_of(live), namespace_of(live)
        annotation = kind.spec.owner
        message = (
            f"{_ref(resource, namespace, name)} exists and was not created by Antrea Multi-cluster "
            f"(no annotation {annotation}): import {import_name} is not applied; "
            f"delete or rename that {resource.kind} to import it"
        )
        return ImportBlocked(ImportReason.CONFLICT, message, Conflicting(resource, live))


def require_namespace(namespace: str, cluster_id: str, known: Obj | None) -> None:
    """ImportBlocked unless the Namespace exists and is not terminating (MCS namespace sameness:
    a Service is imported only into clusters that have its Namespace). ``known``: the Namespace
    as the importer's watch shows it; when it appears, the watch wakes the imports waiting."""
    if known is None:
        raise ImportBlocked(
            ImportReason.NAMESPACE_NOT_FOUND,
            f"Namespace {namespace} does not exist in cluster {cluster_id}: the import is applied when it is created",
        )
    if (known.get("metadata") or {}).get("deletionTimestamp"):
        raise ImportBlocked(
            ImportReason.NAMESPACE_NOT_FOUND,
            f"Namespace {namespace} is being deleted in cluster {cluster_id}",
        )

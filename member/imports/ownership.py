"""Writing only what is ours, once per change: how imported objects are marked, and the
importer's create-or-update and delete: kube.apply's, reading the importer's caches instead of
the API server, and refusing to touch anything else.

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

from typing import TYPE_CHECKING, Any

from kube import apply
from kube.client import KubeClient
from kube.errors import Invalid, NotFound, TemporaryError
from kube.resources import Obj, Resource
from mcapi import names
from member.imports.outcome import Conflicting, ImportBlocked, ImportReason

if TYPE_CHECKING:
    from member.imports.caches import OwnedKind

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


def imported_service_annotations() -> dict[str, str]:
    return {names.ANNOTATION_IMPORTED_SERVICE: "true"}


def imported_service_labels() -> dict[str, str]:
    return {LABEL_IMPORTED_SERVICE: "true"}


Unseen = tuple[Resource, str | None, str]


class _CachedKind:
    """One kind's cache as kube.apply's LiveSource, with the names found taken by objects it
    does not show (read from the API server, not created, on a retry)."""

    def __init__(self, client: KubeClient, kind: OwnedKind, unseen: set[Unseen]) -> None:
        self._client = client
        self._kind = kind
        self._unseen = unseen

    async def read(self, resource: Resource, name: str, namespace: str | None) -> Obj | None:
        return self._kind.get(name, namespace) or await self._read_unseen(resource, name, namespace)

    async def read_taken(self, resource: Resource, name: str, namespace: str | None) -> Obj:
        self._unseen.add((resource, namespace, name))
        live = await self._read_unseen(resource, name, namespace)
        if live is None:
            raise TemporaryError(f"{resource.ref(namespace, name)} was there and is gone", delay=0.1)
        return live

    def wrote(self, obj: Obj) -> None:
        self._kind.wrote(obj)
        meta = obj.get("metadata") or {}
        self._unseen.discard((self._kind.resource, meta.get("namespace"), meta.get("name", "")))

    def deleted(self, obj: Obj) -> None:
        self._kind.deleted(obj)

    async def _read_unseen(self, resource: Resource, name: str, namespace: str | None) -> Obj | None:
        if (resource, namespace, name) not in self._unseen:
            return None
        try:
            return await self._client.get(resource, name, namespace)
        except NotFound:
            self._unseen.discard((resource, namespace, name))
            return None


class ObjectWriter:
    """Writes one cluster's imported objects through the caches of their kinds."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        # Names found taken by an object our caches do not see: read, not created, on a retry.
        self._unseen: set[Unseen] = set()

    def _source(self, kind: OwnedKind) -> _CachedKind:
        return _CachedKind(self.client, kind, self._unseen)

    async def ensure(self, kind: OwnedKind, desired: Obj, *, import_name: str) -> Obj:
        """Create or update ``desired`` when what is there differs; returns the object as it is
        now. ImportBlocked when the name is someone else's or the API server refuses the object."""
        resource = kind.resource
        try:
            applied = await apply.ensure(self.client, resource, desired, kind.owns, source=self._source(kind))
        except apply.NameTaken as taken:
            raise _conflict(kind, taken.object, import_name) from None
        except NotFound:
            ref = resource.ref(desired["metadata"].get("namespace"), desired["metadata"]["name"])
            raise TemporaryError(f"{ref} went away meanwhile", delay=0.1) from None
        except Invalid as err:
            ref = resource.ref(desired["metadata"].get("namespace"), desired["metadata"]["name"])
            raise ImportBlocked(ImportReason.INVALID, f"{ref} refused by the API server: {err.message}") from None
        return applied.object

    async def ensure_status(self, kind: OwnedKind, live: Obj, desired_status: dict[str, Any]) -> Obj:
        """Patch the status subresource when ``desired_status`` is not already there (conditional
        on ``live``'s resourceVersion: a Conflict is retried once the cache has caught up)."""
        return await apply.ensure_status(self.client, kind.resource, live, desired_status, source=self._source(kind))

    async def delete(self, kind: OwnedKind, live: Obj) -> bool:
        """Delete exactly this object (its uid): a same-named successor made meanwhile is not hit."""
        return await apply.delete_object(self.client, kind.resource, live, source=self._source(kind))

    async def delete_all(self, kind: OwnedKind, import_name: str) -> int:
        deleted = 0
        for live in kind.of_import(import_name):
            if await self.delete(kind, live):
                deleted += 1
        return deleted


def _conflict(kind: OwnedKind, live: Obj, import_name: str) -> ImportBlocked:
    resource = kind.resource
    meta = live.get("metadata") or {}
    message = (
        f"{resource.ref(meta.get('namespace'), meta.get('name', ''))} exists and was not created by Antrea "
        f"Multi-cluster (no annotation {kind.spec.owner}): import {import_name} is not applied; "
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

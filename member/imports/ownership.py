"""Writing only what is ours: how imported objects are marked, and the create-or-update
and delete that refuse to touch anything else.

Antrea's rule: an object under the name an import needs that lacks the importer's
annotation belongs to a user (or another controller) and is never changed or
deleted; the import fails instead, and the user learns why from a Warning Event
on their object and from the import's status in the leader.
"""

from __future__ import annotations

import logging

from kube.apply import OwnedCheck, ensure, without_absent
from kube.client import KubeClient
from kube.errors import AlreadyExists, Conflict, Invalid, NotFound, NotOwned
from kube.resources import NAMESPACES, Obj, Resource, name_of, namespace_of
from mcapi import names
from member.imports.outcome import Conflicting, ImportBlocked, ImportReason

log = logging.getLogger(__name__)

# Antrea also marks a ServiceImport with the cluster that imported it.
ANNOTATION_LOCAL_CLUSTER_ID = "multicluster.antrea.io/local-cluster-id"
# We publish the imported Service's EndpointSlices ourselves (one set per source cluster),
# so the EndpointSlice mirroring controller must not mirror the Endpoints as well.
LABEL_SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "mchub-member.multicluster.antrea.io"


def _annotated(key: str) -> OwnedCheck:
    # Antrea tests for the annotation's presence, whatever its value.
    return lambda obj: key in ((obj.get("metadata") or {}).get("annotations") or {})


is_imported_service: OwnedCheck = _annotated(names.ANNOTATION_IMPORTED_SERVICE)
is_imported_acnp: OwnedCheck = _annotated(names.ANNOTATION_IMPORTED_ACNP)


def imported_service_annotations() -> dict[str, str]:
    return {names.ANNOTATION_IMPORTED_SERVICE: "true"}


def _ref(resource: Resource, namespace: str | None, name: str) -> str:
    return f"{resource.kind} {namespace}/{name}" if namespace else f"{resource.kind} {name}"


async def ensure_owned(
    client: KubeClient,
    resource: Resource,
    desired: Obj,
    owned: OwnedCheck | None,
    *,
    import_name: str,
    exists: bool = False,
) -> Obj:
    """Create or update ``desired`` without churn; ImportBlocked if the name is taken by
    someone else's object or the API server refuses the object. ``exists``: the caller just
    saw an object of that name, so no create is tried first."""
    name, namespace = name_of(desired), namespace_of(desired)
    try:
        created = None if exists else await create_if_absent(client, resource, desired)
        if created is not None:
            return created
        return (await ensure(client, resource, desired, owned)).object
    except NotOwned:
        try:
            live = await client.get(resource, name, namespace)
        except NotFound:
            live = None  # gone meanwhile: the next attempt will create ours
        annotation = names.ANNOTATION_IMPORTED_ACNP if owned is is_imported_acnp else names.ANNOTATION_IMPORTED_SERVICE
        message = (
            f"{_ref(resource, namespace, name)} exists and was not created by Antrea Multi-cluster "
            f"(no annotation {annotation}): import {import_name} is not applied; "
            f"delete or rename that {resource.kind} to import it"
        )
        raise ImportBlocked(
            ImportReason.CONFLICT, message, Conflicting(resource, live) if live is not None else None
        ) from None
    except Invalid as err:
        message = f"{_ref(resource, namespace, name)} refused by the API server: {err.message}"
        raise ImportBlocked(ImportReason.INVALID, message) from None


async def create_if_absent(client: KubeClient, resource: Resource, desired: Obj) -> Obj | None:
    """Create ``desired`` (without its None, "must be absent", fields) unless something has
    its name; None then. Create first, not GET first: most imports are new, and a create
    that finds a name taken writes nothing (the caller then compares with what is there)."""
    name, namespace = name_of(desired), namespace_of(desired)
    try:
        created = await client.create(resource, without_absent(desired), namespace)
    except AlreadyExists:
        return None  # lost a race: ensure() compares with the winner
    log.info("importedObjectCreated", extra={"kind": resource.kind, "object": _ref(resource, namespace, name)})
    return created


async def delete_owned(
    client: KubeClient, resource: Resource, name: str, namespace: str | None, owned: OwnedCheck | None
) -> bool:
    """Delete the object if it exists and is ours; a user's object is left alone. True if deleted."""
    try:
        live = await client.get(resource, name, namespace)
    except NotFound:
        return False
    if owned is not None and not owned(live):
        log.info("importedObjectNotOurs", extra={"kind": resource.kind, "object": _ref(resource, namespace, name)})
        return False
    return await delete_exact(client, resource, live)


async def delete_exact(client: KubeClient, resource: Resource, live: Obj) -> bool:
    """Delete exactly this object (its uid): a same-named successor made meanwhile is not hit."""
    meta = live.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False
    name, namespace = name_of(live), namespace_of(live)
    try:
        await client.delete(resource, name, namespace, uid=meta.get("uid") or None)
    except (NotFound, Conflict):
        return False  # gone, or replaced by another object of that name (uid precondition)
    log.info("importedObjectDeleted", extra={"kind": resource.kind, "object": _ref(resource, namespace, name)})
    return True


async def require_namespace(client: KubeClient, namespace: str, cluster_id: str, cached: Obj | None = None) -> None:
    """ImportBlocked unless the Namespace exists and is not terminating (MCS namespace sameness:
    a Service is imported only into clusters that have its Namespace). ``cached``: the Namespace
    as a watch last saw it; without it (a cache lags creations) the API server is asked."""
    try:
        ns = cached if cached is not None else await client.get(NAMESPACES, namespace)
    except NotFound:
        raise ImportBlocked(
            ImportReason.NAMESPACE_NOT_FOUND,
            f"Namespace {namespace} does not exist in cluster {cluster_id}: the import is applied when it is created",
        ) from None
    if (ns.get("metadata") or {}).get("deletionTimestamp"):
        raise ImportBlocked(
            ImportReason.NAMESPACE_NOT_FOUND,
            f"Namespace {namespace} is being deleted in cluster {cluster_id}",
        )

"""Create-or-update-if-owned for reconcilers, without churn and without trespassing.

``ensure`` compares the live object with the desired one on the fields the desired
object sets (its managed fields): equal means no write at all, so resourceVersion
stays put and watchers are not woken; different means one merge patch of exactly
those fields, conditional on the resourceVersion that was compared. An object
that exists but fails ``owned_check`` is refused with ``NameTaken`` (a NotOwned that holds
the object): a reconciler never overwrites what a user or another controller made under the
same name. ``delete_if_owned`` and ``delete_object`` delete only what is ours, and only the
object that was looked at.

Lists are managed whole (a desired ``ports`` list replaces the live one, and items
are compared field by field so that server defaults inside them are no change); a desired
``None`` value means "this field must be absent". ``status`` is not written by
``ensure`` (it is a separate subresource): use ``ensure_status``.

Where the live object comes from is a ``LiveSource``: by default the API server (a GET before
every decision); a controller that watches its objects passes its cache instead, so that
deciding costs no request at all and its own writes count at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from kube.client import KubeClient
from kube.errors import AlreadyExists, Conflict, NotFound, NotOwned, TemporaryError
from kube.resources import Obj, Resource, name_of, namespace_of
from kube.writecache import WriteThroughCache

log = logging.getLogger(__name__)

OwnedCheck = Callable[[Obj], bool]

# Set by the server; a desired object carrying them must not make them look "different".
_SERVER_METADATA = frozenset(
    {"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp"}
)


class Outcome(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Applied:
    outcome: Outcome
    object: Obj


class NameTaken(NotOwned):
    """An object that is not ours holds the name; ``object`` is it (its owner may be told)."""

    def __init__(self, resource: Resource, obj: Obj) -> None:
        super().__init__(resource.kind, namespace_of(obj), name_of(obj))
        self.resource = resource
        self.object = obj


class LiveSource(Protocol):
    """Where ``ensure`` and the deletes find the object that is there now, and what they tell it
    of their writes."""

    async def read(self, resource: Resource, name: str, namespace: str | None) -> Obj | None:
        """The object as it is now; None when there is none."""

    async def read_taken(self, resource: Resource, name: str, namespace: str | None) -> Obj:
        """The object a create found in its way (another writer was first, or ``read`` does not
        show it); raises when it is gone again."""

    def wrote(self, obj: Obj) -> None:
        """``obj`` is what a create or a write just made."""

    def deleted(self, obj: Obj) -> None:
        """``obj`` was deleted, or is gone."""


class FromApiServer:
    """The API server as the LiveSource: a GET for every read; nothing to remember."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def read(self, resource: Resource, name: str, namespace: str | None) -> Obj | None:
        try:
            return await self._client.get(resource, name, namespace)
        except NotFound:
            return None

    async def read_taken(self, resource: Resource, name: str, namespace: str | None) -> Obj:
        return await self._client.get(resource, name, namespace)

    def wrote(self, obj: Obj) -> None:
        pass

    def deleted(self, obj: Obj) -> None:
        pass


class FromCache:
    """A watch's WriteThroughCache as the LiveSource: a read costs no request, and a write is
    seen at once; a name taken by an object the watch does not select is read from the API
    server."""

    def __init__(self, client: KubeClient, cache: WriteThroughCache) -> None:
        self._client = client
        self._cache = cache

    async def read(self, resource: Resource, name: str, namespace: str | None) -> Obj | None:
        return self._cache.get(name, namespace)

    async def read_taken(self, resource: Resource, name: str, namespace: str | None) -> Obj:
        return await self._client.get(resource, name, namespace)

    def wrote(self, obj: Obj) -> None:
        self._cache.wrote(obj)

    def deleted(self, obj: Obj) -> None:
        self._cache.deleted(obj)


def contains(live: Any, desired: Any) -> bool:
    """True if every field ``desired`` sets has that value in ``live`` (None: must be absent)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return False
        for key, value in desired.items():
            if value is None:
                if live.get(key) is not None:
                    return False
            elif key not in live or not contains(live[key], value):
                return False
        return True
    if isinstance(desired, list):
        # Same length, and each item contained in the live one at its place: tolerates what the
        # server defaults inside items (a Service port's targetPort) without missing a change.
        return (
            isinstance(live, list)
            and len(live) == len(desired)
            and all(contains(have, want) for have, want in zip(live, desired, strict=True))
        )
    return bool(live == desired)


def _managed(desired: Obj) -> Obj:
    body = {k: v for k, v in desired.items() if k not in ("status", "apiVersion", "kind")}
    meta = {k: v for k, v in (desired.get("metadata") or {}).items() if k not in _SERVER_METADATA}
    body["metadata"] = meta
    return body


def without_absent(value: Any) -> Any:
    """A new object carries no field marked "must be absent" (None) at all, not JSON null."""
    if isinstance(value, dict):
        return {k: without_absent(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_absent(v) for v in value]
    return value


async def ensure(
    client: KubeClient,
    resource: Resource,
    desired: Obj,
    owned_check: OwnedCheck | None = None,
    *,
    source: LiveSource | None = None,
) -> Applied:
    """Make the object match ``desired`` on the fields it sets; write only if it differs.

    ``desired`` needs metadata.name (and namespace when namespaced). Raises NameTaken if
    the live object fails ``owned_check``; TemporaryError while it is being deleted; Conflict
    (temporary) if it changed meanwhile; NotFound if it went away meanwhile.
    """
    source = source or FromApiServer(client)
    name, namespace = name_of(desired), namespace_of(desired)
    managed = _managed(desired)
    live = await source.read(resource, name, namespace)
    if live is None:
        try:
            created = await client.create(resource, without_absent(managed), namespace)
        except AlreadyExists:
            live = await source.read_taken(resource, name, namespace)
        else:
            source.wrote(created)
            log.info("objectCreated", extra={"kind": resource.kind, "object": resource.ref(namespace, name)})
            return Applied(Outcome.CREATED, created)
    if owned_check is not None and not owned_check(live):
        raise NameTaken(resource, live)
    if (live.get("metadata") or {}).get("deletionTimestamp"):
        # Patching it is pointless and creating is refused until it is gone: come back later.
        raise TemporaryError(f"{resource.ref(namespace, name)} is being deleted", delay=1.0)
    if contains(live, managed):
        return Applied(Outcome.UNCHANGED, live)
    patch = {**managed, "metadata": {**managed["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}}
    updated = await client.patch(resource, name, patch, namespace)
    source.wrote(updated)
    log.info("objectUpdated", extra={"kind": resource.kind, "object": resource.ref(namespace, name)})
    return Applied(Outcome.UPDATED, updated)


async def ensure_status(
    client: KubeClient,
    resource: Resource,
    live: Obj,
    desired_status: Mapping[str, Any],
    *,
    source: LiveSource | None = None,
) -> Obj:
    """Merge-patch the status subresource when ``desired_status`` is not already there.

    Conditional on ``live``'s resourceVersion: a Conflict means status was computed from a
    stale read, and the caller should reconcile again.
    """
    if contains(live.get("status") or {}, desired_status):
        return live
    name, namespace = name_of(live), namespace_of(live)
    patch = {"metadata": {"resourceVersion": live["metadata"]["resourceVersion"]}, "status": dict(desired_status)}
    updated = await client.patch_status(resource, name, patch, namespace)
    if source is not None:
        source.wrote(updated)
    return updated


async def delete_if_owned(
    client: KubeClient,
    resource: Resource,
    name: str,
    namespace: str | None = None,
    owned_check: OwnedCheck | None = None,
    *,
    source: LiveSource | None = None,
) -> bool:
    """Delete the object if it exists and is ours; True if a delete was issued.

    Raises NameTaken if it exists but is someone else's. The delete is conditional on the
    uid and resourceVersion that were checked (Conflict if it changed in between).
    """
    source = source or FromApiServer(client)
    live = await source.read(resource, name, namespace)
    if live is None:
        return False
    if owned_check is not None and not owned_check(live):
        raise NameTaken(resource, live)
    return await delete_object(client, resource, live, source=source, same_version=True)


async def delete_object(
    client: KubeClient,
    resource: Resource,
    live: Obj,
    *,
    source: LiveSource | None = None,
    same_version: bool = False,
) -> bool:
    """Delete exactly ``live`` (its uid: a same-named successor made meanwhile is not hit; with
    ``same_version``, only as it was read); True if a delete was issued.

    False when it is already going away or gone, or (without ``same_version``) when another
    object has its name by now; with ``same_version``, a Conflict says it changed since it was read.
    """
    meta = live.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False  # already going away
    name, namespace = name_of(live), namespace_of(live)
    version = meta.get("resourceVersion") if same_version else None
    try:
        await client.delete(resource, name, namespace, uid=meta.get("uid") or None, resource_version=version)
    except NotFound:
        if source is not None:
            source.deleted(live)
        return False
    except Conflict:
        if same_version:
            raise
        if source is not None:
            source.deleted(live)
        return False  # replaced by another object of that name (uid precondition)
    if source is not None:
        source.deleted(live)
    log.info("objectDeleted", extra={"kind": resource.kind, "object": resource.ref(namespace, name)})
    return True

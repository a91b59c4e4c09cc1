"""In-memory object storage with one global revision, an event log and watchers.

Like etcd behind a real apiserver: every write gets the next revision (the
objects' resourceVersion), the log of recent writes lets a watch resume from a
revision, and a revision older than the log's start is "too old" (410 Gone).
The log is bounded (`event_window` writes) and `compact()` drops it entirely, as
etcd compaction does. `rebuild(resource)` is what a real apiserver does to a custom
resource when its CRD goes or changes its spec: it drops that resource's storage and
watch cache, so the open watches end and a watch from an earlier revision is too old.

Stored objects are never mutated in place: writers pass new dicts, so readers and
watch queues can hold references without copying.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from kube.resources import Obj
from sandbox.errors import too_old_resource_version
from sandbox.resources import GroupResource

log = logging.getLogger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
ObjectKey = tuple[str, str]  # (namespace or "", name)


@dataclass(frozen=True)
class StoredEvent:
    revision: int
    type: EventType
    resource: GroupResource
    object: Obj
    previous: Obj | None

    @property
    def namespace(self) -> str:
        ns: str = self.object["metadata"].get("namespace", "")
        return ns


@dataclass(eq=False)
class Watcher:
    """A queue of the events of one resource (optionally one namespace)."""

    resource: GroupResource
    namespace: str | None
    queue: asyncio.Queue[StoredEvent | None] = field(default_factory=asyncio.Queue)

    def close(self) -> None:
        self.queue.put_nowait(None)


Listener = Callable[[StoredEvent], None]


def object_key(obj: Obj) -> ObjectKey:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


class ObjectStore:
    def __init__(self, event_window: int = 100_000) -> None:
        self._objects: dict[GroupResource, dict[str, dict[str, Obj]]] = {}
        self._revision = 0
        self._log: deque[StoredEvent] = deque(maxlen=event_window)
        # Oldest revision a watch may resume from: everything after it is in the log.
        self._compacted_at = 0
        # Per resource, the revision its current watch cache started at (see rebuild).
        self._rebuilt_at: dict[GroupResource, int] = {}
        self._watchers: dict[GroupResource, set[Watcher]] = {}
        self._listeners: list[Listener] = []
        self._by_uid: dict[str, tuple[GroupResource, ObjectKey]] = {}

    @property
    def revision(self) -> int:
        return self._revision

    def next_revision(self) -> int:
        self._revision += 1
        return self._revision

    # Reads

    def get(self, resource: GroupResource, namespace: str, name: str) -> Obj | None:
        return self._objects.get(resource, {}).get(namespace, {}).get(name)

    def list_objects(self, resource: GroupResource, namespace: str | None = None) -> list[Obj]:
        """Objects in key order (namespace, then name), as etcd returns them."""
        by_ns = self._objects.get(resource, {})
        spaces = [namespace] if namespace is not None else sorted(by_ns)
        out: list[Obj] = []
        for ns in spaces:
            names = by_ns.get(ns, {})
            out.extend(names[n] for n in sorted(names))
        return out

    def count(self, resource: GroupResource) -> int:
        return sum(len(v) for v in self._objects.get(resource, {}).values())

    def resources(self) -> list[GroupResource]:
        return list(self._objects)

    def by_uid(self, uid: str) -> tuple[GroupResource, Obj] | None:
        found = self._by_uid.get(uid)
        if found is None:
            return None
        resource, (ns, name) = found
        obj = self.get(resource, ns, name)
        return (resource, obj) if obj is not None else None

    # Writes

    def put(self, resource: GroupResource, obj: Obj) -> Obj:
        """Store obj (created or replaced) under a new revision and tell watchers."""
        ns, name = object_key(obj)
        revision = self.next_revision()
        obj["metadata"]["resourceVersion"] = str(revision)
        names = self._objects.setdefault(resource, {}).setdefault(ns, {})
        previous = names.get(name)
        names[name] = obj
        uid = obj["metadata"].get("uid")
        if uid:
            self._by_uid[uid] = (resource, (ns, name))
        self._emit(StoredEvent(revision, "MODIFIED" if previous else "ADDED", resource, obj, previous))
        return obj

    def remove(self, resource: GroupResource, obj: Obj) -> Obj:
        """Delete the object stored under obj's key; the DELETED event carries obj (its final
        state, e.g. with the last finalizer gone) under a new revision."""
        ns, name = object_key(obj)
        names = self._objects.get(resource, {}).get(ns, {})
        previous = names.pop(name, None)
        if previous is None:
            return obj
        if not names:
            del self._objects[resource][ns]
        self._by_uid.pop(previous["metadata"].get("uid", ""), None)
        revision = self.next_revision()
        final = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(revision)}}
        self._emit(StoredEvent(revision, "DELETED", resource, final, previous))
        return final

    def _emit(self, event: StoredEvent) -> None:
        if len(self._log) == self._log.maxlen:
            self._compacted_at = self._log[0].revision
        self._log.append(event)
        for watcher in self._watchers.get(event.resource, ()):
            if watcher.namespace is None or watcher.namespace == event.namespace:
                watcher.queue.put_nowait(event)
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                # A controller's bug must not make the write fail for the client.
                log.exception("listener failed", extra={"revision": event.revision})

    # Watching

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def compact(self) -> None:
        """Forget the event log: watches from any revision before now get 410 Gone."""
        self._log.clear()
        self._compacted_at = self._revision

    def rebuild(self, resource: GroupResource) -> None:
        """End the watches of resource, and refuse watches from before now as too old."""
        self._rebuilt_at[resource] = self._revision
        for watcher in self._watchers.pop(resource, set()):
            watcher.close()

    def events_since(self, resource: GroupResource, namespace: str | None, revision: int) -> list[StoredEvent]:
        if revision < self._compacted_at:
            raise too_old_resource_version(revision, self._revision)
        rebuilt_at = self._rebuilt_at.get(resource, 0)
        if revision < rebuilt_at:
            # As the new watch cache words it: the oldest revision it holds in parentheses.
            raise too_old_resource_version(revision, rebuilt_at)
        return [
            e
            for e in self._log
            if e.revision > revision and e.resource == resource and (namespace is None or e.namespace == namespace)
        ]

    def check_revision_retained(self, revision: int) -> None:
        if revision < self._compacted_at:
            raise too_old_resource_version(revision, self._revision)

    def subscribe(self, resource: GroupResource, namespace: str | None) -> Watcher:
        watcher = Watcher(resource, namespace)
        self._watchers.setdefault(resource, set()).add(watcher)
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        self._watchers.get(watcher.resource, set()).discard(watcher)

    def close_watchers(self) -> None:
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.close()

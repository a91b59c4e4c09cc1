"""An informer's cache in which this process's own writes are seen at once.

A reconciler that reads a watch cache and writes to the API server reads its own write back
stale for a moment: it would create the object again (409 AlreadyExists), delete it again
(404), or patch from an old resourceVersion (409 Conflict). As client-go's MutationCache does,
the object the server returned from a write is kept beside the informer's copy and wins while
it is newer, and an object this process deleted is hidden until the watch reports the
deletion. resourceVersions of one API server are etcd revisions (integers) and are compared
as such; a value that is not an integer is never taken as newer than the informer's.

Kept objects have no metadata.managedFields, as the informer's have none (kube.informer says
why): what a cache holds does not depend on whether a write or the watch brought it.

Only objects the informer selects belong here: a write the watch never echoes would be kept
until a later event of that name.
"""

from __future__ import annotations

from kube.client import WatchEvent
from kube.informer import CacheKey, Informer, cache_key
from kube.resources import Obj


def _rv(obj: Obj | None) -> int | None:
    if obj is None:
        return None
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion", ""))
    except ValueError:
        return None


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _without_managed_fields(obj: Obj) -> Obj:
    # The server's answer belongs to whoever wrote (it may return it on): new top-level and
    # metadata dicts without managedFields, sharing everything else, instead of changing it.
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {key: value for key, value in meta.items() if key != "managedFields"}}


def newer(mine: Obj, than: Obj | None) -> bool:
    """Whether ``mine`` is a later version of the object than ``than`` (None: none known)."""
    if than is None:
        return True
    ours, theirs = _rv(mine), _rv(than)
    return ours is not None and theirs is not None and ours > theirs


class WriteThroughCache:
    def __init__(self, informer: Informer) -> None:
        self.informer = informer
        self._written: dict[CacheKey, Obj] = {}  # our latest write the watch has not brought yet
        self._own_versions: dict[CacheKey, set[int]] = {}  # versions we wrote, until echoed
        self._deleted: dict[CacheKey, str] = {}  # uid we deleted, until the watch says so

    # Reading

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        key = (namespace or "", name)
        return self._visible(key, self.informer.get(name, namespace))

    def list(self, namespace: str | None = None) -> list[Obj]:
        seen: dict[CacheKey, Obj | None] = {cache_key(obj): obj for obj in self.informer.list(namespace)}
        for key in self._written:
            if namespace is None or key[0] == namespace:
                seen.setdefault(key, None)
        out = []
        for key, live in seen.items():
            obj = self._visible(key, live)
            if obj is not None:
                out.append(obj)
        return out

    def _visible(self, key: CacheKey, live: Obj | None) -> Obj | None:
        mine = self._written.get(key)
        obj = mine if mine is not None and newer(mine, live) else live
        if obj is not None and self._deleted.get(key) == _uid(obj):
            return None
        return obj

    # Our writes

    def wrote(self, obj: Obj) -> None:
        """The server's answer to our create/update/patch of an object the informer selects."""
        key = cache_key(obj)
        version = _rv(obj)
        if version is not None:
            self._own_versions.setdefault(key, set()).add(version)
        if newer(obj, self.informer.get(key[1], key[0] or None)) and newer(obj, self._written.get(key)):
            self._written[key] = _without_managed_fields(obj)
        # A tombstone hides only the object we deleted: a new one of that name (another uid) shows.

    def deleted(self, obj: Obj) -> None:
        """We deleted exactly this object (its uid)."""
        key = cache_key(obj)
        self._deleted[key] = _uid(obj)
        mine = self._written.get(key)
        if mine is not None and _uid(mine) == _uid(obj):
            del self._written[key]

    # The watch

    def observe(self, event: WatchEvent) -> bool:
        """Call with every event of the informer (after its cache took it); True when the event
        only echoes a write or delete of ours, so nobody needs to look at it again."""
        key = cache_key(event.object)
        uid = _uid(event.object)
        if event.type == "DELETED":
            own = self._deleted.get(key) == uid
            if own:
                del self._deleted[key]
            mine = self._written.get(key)
            if mine is not None and _uid(mine) == uid:
                del self._written[key]
            self._own_versions.pop(key, None)
            return own
        version = _rv(event.object)
        if self._deleted.get(key) == uid:
            return True  # our delete, seen as a deletionTimestamp before the object goes
        versions = self._own_versions.get(key)
        own = versions is not None and version in versions
        if versions is not None and version is not None:
            versions.difference_update({v for v in versions if v <= version})
            if not versions:
                del self._own_versions[key]
        mine = self._written.get(key)
        if mine is not None and not newer(mine, event.object):
            del self._written[key]
        return own

"""What the importer knows of this cluster without asking: watch caches of the objects it makes.

One ``OwnedKind`` per kind of imported object that the registry of import kinds names
(member.imports.kinds; each described by a ``KindSpec``, member.imports.objects): an informer
selecting only the importer's objects (by label, or all of a kind that only the importer
writes), seen through a ``WriteThroughCache`` so the importer's own writes and deletes count at
once, and indexed by the import each object belongs to. Reads (does it exist, is it ours, is it
up to date, which objects does this import have) never cost a request; a change someone else
made to one of them is reported through ``on_change`` so the import can be looked at again.

Kinds whose CRD may be missing (the MCS ServiceImport, Antrea's ClusterNetworkPolicy) are
watched from the moment the API server serves them, in the version the importer writes.
Antrea's Tiers, which the importer only reads (a replicated policy needs its Tier), are
watched the same way from the first time a policy is checked against them; their coming and
going after the first list is reported through ``on_tier``.

Others may read the same caches instead of watching the same objects again (the member's
clusterset.local DNS does): ``ImportCaches.subscribe`` gives a handler every event of one
kind, after the cache took it, starting with the kind's current contents; a kind that stops
being followed (its CRD went away, another version replaced it) takes back what it held with
DELETED events. The importer's own callbacks are bound with ``listen`` so that caches owned by
the member outlive the importer of one join. Stopped caches watch nothing more: asking them for
an optional kind or for Tiers raises ``CachesStopped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from kube.client import KubeClient, WatchEvent
from kube.informer import CacheKey, Informer, cache_key
from kube.resources import NAMESPACES, Obj, Resource
from kube.writecache import WriteThroughCache
from member.imports.kinds import written_kinds
from member.imports.objects import KindSpec

log = logging.getLogger(__name__)

OnChange = Callable[[str], None]
OnEvent = Callable[[WatchEvent], None]
Unsubscribe = Callable[[], None]
Unlisten = Callable[[], None]


class CachesStopped(Exception):
    """The import caches were stopped: they start no watch any more."""


def _ignore_change(import_name: str) -> None:
    """No importer listens (the caches are between two joins)."""


def _ignore_event(event: WatchEvent) -> None:
    """No importer listens (the caches are between two joins)."""


class OwnedKind:
    def __init__(self, client: KubeClient, spec: KindSpec, on_change: OnChange, member_namespace: str) -> None:
        self.spec = spec
        self.resource = spec.resource
        self._on_change = on_change
        self._informer = Informer(
            client,
            spec.resource,
            namespace=member_namespace if spec.in_member_namespace else None,
            label_selector=spec.label_selector,
            handler=self._on_event,
        )
        self._cache = WriteThroughCache(self._informer)
        self._index: dict[str, set[CacheKey]] = {}  # import name -> keys of its objects
        self._subscribers: list[OnEvent] = []

    async def start(self) -> None:
        """Until the first list is in the cache (and in the index: its events went through it)."""
        self._informer.start().add_done_callback(self._watch_ended)
        await self._informer.wait_synced()

    async def stop(self) -> None:
        self._subscribers.clear()
        await self._informer.stop()

    async def ended(self) -> None:
        """Until the watch ends for good (stopped, or failed: ``failed`` then says so)."""
        with contextlib.suppress(Exception):
            await self._informer.wait()

    @property
    def synced(self) -> bool:
        return self._informer.synced.is_set()

    @property
    def failed(self) -> bool:
        """The watch ended on an error that is not retried (the CRD is no longer served)."""
        return self._informer.error is not None

    # Subscribers

    def subscribe(self, handler: OnEvent) -> None:
        """``handler`` gets an ADDED event for every object the watch holds now, then every event
        after the cache took it, until ``unsubscribe(handler)``."""
        for obj in self._informer.list():
            self._tell(handler, WatchEvent("ADDED", obj))
        self._subscribers.append(handler)

    def unsubscribe(self, handler: OnEvent) -> None:
        if handler in self._subscribers:
            self._subscribers.remove(handler)

    def retire(self, successor: OwnedKind) -> None:
        """``successor`` (another version of the kind) replaces this one: subscribers get DELETED
        for what only this one held, and no more events from it."""
        kept = {cache_key(obj) for obj in successor._informer.list()}
        subscribers, self._subscribers = self._subscribers, []
        for handler in subscribers:
            for obj in self._informer.list():
                if cache_key(obj) not in kept:
                    self._tell(handler, WatchEvent("DELETED", obj))

    def _watch_ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or self._informer.error is None:
            return
        # What can no longer be followed is taken back from those who read it.
        subscribers, self._subscribers = self._subscribers, []
        for handler in subscribers:
            for obj in self._informer.list():
                self._tell(handler, WatchEvent("DELETED", obj))

    def _tell(self, handler: OnEvent, event: WatchEvent) -> None:
        try:
            handler(event)
        except Exception:
            log.exception("importCacheSubscriberFailed", extra={"resource": self.resource.qualified_name})

    # Reading

    def owns(self, obj: Obj) -> bool:
        return self.spec.owns(obj)

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        """The object of that name as far as we know, ours or not (None: there is none)."""
        return self._cache.get(name, namespace)

    def of_import(self, import_name: str) -> list[Obj]:
        """The objects of ours that belong to this import."""
        out = []
        for namespace, name in sorted(self._index.get(import_name, ())):
            obj = self._cache.get(name, namespace or None)
            if obj is not None and self.owns(obj) and self.spec.import_of(obj) == import_name:
                out.append(obj)
        return out

    def import_names(self) -> set[str]:
        """Every import that has at least one object of ours of this kind."""
        return {name for name in self._index if self.of_import(name)}

    # Our writes

    def wrote(self, obj: Obj) -> None:
        self._cache.wrote(obj)
        self._index_object(obj)

    def deleted(self, obj: Obj) -> None:
        self._cache.deleted(obj)

    # The watch

    def _index_object(self, obj: Obj) -> str | None:
        if not self.owns(obj):
            return None
        import_name = self.spec.import_of(obj)
        if import_name is not None:
            self._index.setdefault(import_name, set()).add(cache_key(obj))
        return import_name

    async def _on_event(self, event: WatchEvent) -> None:
        own = self._cache.observe(event)
        import_name = self.spec.import_of(event.object) if self.owns(event.object) else None
        if event.type == "DELETED":
            if import_name is not None:
                keys = self._index.get(import_name)
                if keys is not None:
                    keys.discard(cache_key(event.object))
                    if not keys:
                        del self._index[import_name]
        else:
            self._index_object(event.object)
        for handler in list(self._subscribers):
            self._tell(handler, event)
        # The first list is no change; our own writes coming back are none either.
        if import_name is not None and not own and self._informer.synced.is_set():
            self._on_change(import_name)


# ---- every kind ----------------------------------------------------------------------------


class ImportCaches:
    """Every kind the importer writes, plus Namespaces (an import waits for its Namespace)."""

    def __init__(self, client: KubeClient, member_namespace: str) -> None:
        self._client = client
        self._member_namespace = member_namespace
        self._on_change: OnChange = _ignore_change
        self._on_namespace: OnEvent = _ignore_event
        self._on_tier: OnEvent = _ignore_event
        self._listener: object | None = None  # who listens (see listen)
        self._tiers: Informer | None = None
        self._kinds: dict[Resource, OwnedKind] = {
            spec.resource: OwnedKind(client, spec, self._changed, member_namespace)
            for spec in written_kinds()
            if not spec.optional
        }
        self._optional: dict[str, OwnedKind] = {}  # plural.group -> the served version's kind
        self._subscribers: dict[str, list[OnEvent]] = {}  # plural.group -> handlers
        self._lock = asyncio.Lock()
        self._stopped = False

        async def namespace_event(event: WatchEvent) -> None:
            self._on_namespace(event)

        self.namespaces = Informer(client, NAMESPACES, handler=namespace_event)

    @property
    def member_namespace(self) -> str:
        """The Namespace the member's ClusterInfoImports are watched (and written) in."""
        return self._member_namespace

    def listen(self, on_change: OnChange, on_namespace: OnEvent, on_tier: OnEvent) -> Unlisten:
        """The importer's callbacks: ``on_change(import_name)`` when someone else changed one of
        its objects, ``on_namespace`` for Namespace events, ``on_tier`` for Tier events after
        their first list. One importer at a time: raises RuntimeError while another listens.
        Returns the call that unbinds them (it unbinds nobody else's)."""
        if self._listener is not None:
            raise RuntimeError("the import caches already have a listener: one importer at a time")
        listener = object()
        self._listener = listener
        self._on_change, self._on_namespace, self._on_tier = on_change, on_namespace, on_tier

        def unlisten() -> None:
            if self._listener is listener:
                self._listener = None
                self._on_change, self._on_namespace, self._on_tier = _ignore_change, _ignore_event, _ignore_event

        return unlisten

    def _changed(self, import_name: str) -> None:
        self._on_change(import_name)

    def subscribe(self, qualified_name: str, handler: OnEvent) -> Unsubscribe:
        """Every event of the kind ``plural.group`` (any version; of an optional kind, from the
        moment it is watched), after the cache took it; first the current contents as ADDED.
        Events come for every object the kind's watch selects, the importer's or not."""
        self._subscribers.setdefault(qualified_name, []).append(handler)
        kind = self.watching(qualified_name)
        if kind is not None:
            kind.subscribe(handler)

        def unsubscribe() -> None:
            handlers = self._subscribers.get(qualified_name, [])
            if handler in handlers:
                handlers.remove(handler)
            for current in self.all_kinds():
                if current.resource.qualified_name == qualified_name:
                    current.unsubscribe(handler)

        return unsubscribe

    def watching(self, qualified_name: str) -> OwnedKind | None:
        """The kind ``plural.group`` as watched now, None when it is not (not served, failed)."""
        for kind in self.all_kinds():
            if kind.resource.qualified_name == qualified_name and not kind.failed:
                return kind
        return None

    async def start(self) -> None:
        self.namespaces.start()
        await asyncio.gather(self.namespaces.wait_synced(), *(kind.start() for kind in self._kinds.values()))

    async def stop(self) -> None:
        self._stopped = True  # first: a watch being started meanwhile stops itself
        kinds = [*self._kinds.values(), *self._optional.values()]
        self._optional.clear()
        tiers, self._tiers = self._tiers, None
        informers = [self.namespaces, *([tiers] if tiers is not None else [])]
        await asyncio.gather(*(informer.stop() for informer in informers), *(kind.stop() for kind in kinds))

    def kind(self, resource: Resource) -> OwnedKind:
        """A kind that is always watched (one whose KindSpec is not optional)."""
        return self._kinds[resource]

    def kinds_of(self, spec: KindSpec) -> list[OwnedKind]:
        """The watched kinds of ``spec``, whichever version (none, for an optional kind not watched)."""
        return [kind for kind in self.all_kinds() if kind.resource.qualified_name == spec.resource.qualified_name]

    async def optional_kind(self, spec: KindSpec) -> OwnedKind:
        """The kind of a CRD that may come and go, watched in the version ``spec`` names from
        now on (a watch of another version of it is stopped). Raises CachesStopped after stop()."""
        plural = spec.resource.qualified_name
        current = self._optional.get(plural)
        if current is not None and current.resource == spec.resource and not current.failed:
            return current
        async with self._lock:
            self._refuse_if_stopped()
            current = self._optional.get(plural)
            if current is not None and current.resource == spec.resource and not current.failed:
                return current
            kind = OwnedKind(self._client, spec, self._changed, self._member_namespace)
            try:
                await kind.start()
                self._refuse_if_stopped()  # stopped during the first list: stop() did not know it
            except BaseException:
                await kind.stop()
                raise
            self._optional[plural] = kind
            # Subscribers move over in one step (no await): the new version's contents, and
            # DELETED for what only the old one held (a failed one already took everything back).
            for handler in self._subscribers.get(plural, []):
                kind.subscribe(handler)
            if current is not None:
                current.retire(kind)
                await current.stop()
            log.info("importedKindWatched", extra={"resource": plural, "version": spec.resource.version})
            return kind

    async def tiers(self, resource: Resource) -> Informer:
        """Antrea's Tiers, watched in ``resource``'s version from now on (a watch of another
        version, or one that failed, is replaced). Raises NotFound when they are not served,
        CachesStopped after stop()."""
        current = self._tiers
        if current is not None and current.resource == resource and current.error is None:
            return current
        async with self._lock:
            self._refuse_if_stopped()
            current = self._tiers
            if current is not None and current.resource == resource and current.error is None:
                return current
            informer = Informer(self._client, resource)

            async def changed(event: WatchEvent) -> None:
                if informer.synced.is_set():  # the first list is what the importer starts from: no change
                    self._on_tier(event)

            informer.add_handler(changed)
            try:
                await informer.wait_synced()
                self._refuse_if_stopped()
            except BaseException:
                await informer.stop()
                raise
            self._tiers = informer
            if current is not None:
                await current.stop()
            log.info("tiersWatched", extra={"resource": resource.qualified_name, "version": resource.version})
            return informer

    def _refuse_if_stopped(self) -> None:
        if self._stopped:
            raise CachesStopped("the import caches are stopped: they start no watch any more")

    def all_kinds(self) -> list[OwnedKind]:
        return [*self._kinds.values(), *self._optional.values()]

    def import_names(self) -> set[str]:
        """Every import with at least one object of ours in this cluster."""
        found: set[str] = set()
        for kind in self.all_kinds():
            found |= kind.import_names()
        return found

    def namespace(self, name: str) -> Obj | None:
        return self.namespaces.get(name)

"""What the importer knows of this cluster without asking: watch caches of the objects it makes.

One ``OwnedKind`` per kind of imported object: an informer selecting only the importer's
objects (by label, or all of a kind that only the importer writes), seen through a
``WriteThroughCache`` so the importer's own writes and deletes count at once, and indexed by
the import each object belongs to. Reads (does it exist, is it ours, is it up to date, which
objects does this import have) never cost a request; a change someone else made to one of
them is reported through ``on_change`` so the import can be looked at again.

Kinds whose CRD may be missing (the MCS ServiceImport, Antrea's ClusterNetworkPolicy) are
watched from the moment the API server serves them, in the version the importer writes.
Antrea's Tiers, which the importer only reads (a replicated policy needs its Tier), are
watched the same way from the first time a policy is checked against them; their coming and
going after the first list is reported through ``on_tier``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from kube.apply import OwnedCheck
from kube.client import KubeClient, WatchEvent
from kube.informer import CacheKey, Informer, cache_key
from kube.resources import (
    CLUSTER_INFO_IMPORTS,
    ENDPOINT_SLICES,
    ENDPOINTS,
    LABEL_IDENTITIES,
    NAMESPACES,
    SERVICES,
    Obj,
    Resource,
    name_of,
    namespace_of,
)
from kube.writecache import WriteThroughCache
from mcapi import names
from member.imports.ownership import (
    LABEL_IMPORTED_ACNP,
    LABEL_IMPORTED_SERVICE,
    LABEL_MANAGED_BY,
    MANAGED_BY,
    is_imported_acnp,
    is_imported_service,
)

log = logging.getLogger(__name__)

ImportNameOf = Callable[[Obj], str | None]
OnChange = Callable[[str], None]
OnEvent = Callable[[WatchEvent], None]


# ---- which import an object belongs to (names are derived, so this survives restarts) ----


def _unprefixed(obj: Obj) -> str | None:
    name = name_of(obj)
    return name.removeprefix(names.IMPORTED_PREFIX) if name.startswith(names.IMPORTED_PREFIX) else None


def service_import_of_service(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.service_import_name(namespace_of(obj) or "", base) if base else None


def endpoints_import_of_endpoints(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.endpoints_import_name(namespace_of(obj) or "", base) if base else None


def endpoints_import_of_slice(obj: Obj) -> str | None:
    service = ((obj.get("metadata") or {}).get("labels") or {}).get(names.LABEL_MCS_SERVICE_NAME)
    return names.endpoints_import_name(namespace_of(obj) or "", service) if service else None


def service_import_of_service_import(obj: Obj) -> str | None:
    return names.service_import_name(namespace_of(obj) or "", name_of(obj))


def acnp_import_of_policy(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.acnp_import_name(base) if base else None


def named_after_import(obj: Obj) -> str | None:
    return name_of(obj)


# ---- one kind -------------------------------------------------------------------------------


@dataclass(frozen=True)
class KindSpec:
    resource: Resource
    import_of: ImportNameOf
    owned: OwnedCheck | None  # None: every object of the kind (as selected) is the importer's
    label_selector: str | None = None
    namespace: str | None = None


class OwnedKind:
    def __init__(self, client: KubeClient, spec: KindSpec, on_change: OnChange) -> None:
        self.spec = spec
        self.resource = spec.resource
        self._on_change = on_change
        self._informer = Informer(
            client,
            spec.resource,
            namespace=spec.namespace,
            label_selector=spec.label_selector,
            handler=self._on_event,
        )
        self._cache = WriteThroughCache(self._informer)
        self._index: dict[str, set[CacheKey]] = {}  # import name -> keys of its objects

    async def start(self) -> None:
        """Until the first list is in the cache (and in the index: its events went through it)."""
        await self._informer.wait_synced()

    async def stop(self) -> None:
        await self._informer.stop()

    @property
    def synced(self) -> bool:
        return self._informer.synced.is_set()

    # Reading

    def owns(self, obj: Obj) -> bool:
        return self.spec.owned is None or self.spec.owned(obj)

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
        # The first list is no change; our own writes coming back are none either.
        if import_name is not None and not own and self._informer.synced.is_set():
            self._on_change(import_name)


# ---- every kind ----------------------------------------------------------------------------

_IMPORTED = f"{LABEL_IMPORTED_SERVICE}=true"


def _fixed_kinds(member_namespace: str) -> list[KindSpec]:
    return [
        KindSpec(SERVICES, service_import_of_service, is_imported_service, _IMPORTED),
        KindSpec(ENDPOINTS, endpoints_import_of_endpoints, is_imported_service, _IMPORTED),
        # Slices made before imported objects were labelled carry the managed-by label too.
        KindSpec(ENDPOINT_SLICES, endpoints_import_of_slice, is_imported_service, f"{LABEL_MANAGED_BY}={MANAGED_BY}"),
        KindSpec(LABEL_IDENTITIES, named_after_import, None),
        KindSpec(CLUSTER_INFO_IMPORTS, named_after_import, None, namespace=member_namespace),
    ]


def service_import_kind(resource: Resource) -> KindSpec:
    return KindSpec(resource, service_import_of_service_import, is_imported_service, _IMPORTED)


def acnp_kind(resource: Resource) -> KindSpec:
    return KindSpec(resource, acnp_import_of_policy, is_imported_acnp, f"{LABEL_IMPORTED_ACNP}=true")


class ImportCaches:
    """Every kind the importer writes, plus Namespaces (an import waits for its Namespace)."""

    def __init__(
        self,
        client: KubeClient,
        member_namespace: str,
        on_change: OnChange,
        on_namespace: OnEvent,
        on_tier: OnEvent,
    ) -> None:
        self._client = client
        self._on_change = on_change
        self._on_tier = on_tier
        self._tiers: Informer | None = None
        self._kinds: dict[Resource, OwnedKind] = {
            spec.resource: OwnedKind(client, spec, on_change) for spec in _fixed_kinds(member_namespace)
        }
        self._optional: dict[str, OwnedKind] = {}  # plural.group -> the served version's kind
        self._lock = asyncio.Lock()

        async def namespace_event(event: WatchEvent) -> None:
            on_namespace(event)

        self.namespaces = Informer(client, NAMESPACES, handler=namespace_event)

    async def start(self) -> None:
        self.namespaces.start()
        await asyncio.gather(self.namespaces.wait_synced(), *(kind.start() for kind in self._kinds.values()))

    async def stop(self) -> None:
        kinds = [*self._kinds.values(), *self._optional.values()]
        self._optional.clear()
        tiers, self._tiers = self._tiers, None
        informers = [self.namespaces, *([tiers] if tiers is not None else [])]
        await asyncio.gather(*(informer.stop() for informer in informers), *(kind.stop() for kind in kinds))

    def kind(self, resource: Resource) -> OwnedKind:
        """A kind that is always watched (Services, Endpoints, EndpointSlices, LabelIdentities,
        ClusterInfoImports)."""
        return self._kinds[resource]

    async def optional_kind(self, spec: KindSpec) -> OwnedKind:
        """The kind of a CRD that may come and go, watched in the version ``spec`` names from
        now on (a watch of another version of it is stopped)."""
        plural = spec.resource.qualified_name
        current = self._optional.get(plural)
        if current is not None and current.resource == spec.resource:
            return current
        async with self._lock:
            current = self._optional.get(plural)
            if current is not None and current.resource == spec.resource:
                return current
            kind = OwnedKind(self._client, spec, self._on_change)
            await kind.start()
            self._optional[plural] = kind
            if current is not None:
                await current.stop()
            log.info("importedKindWatched", extra={"resource": plural, "version": spec.resource.version})
            return kind

    async def tiers(self, resource: Resource) -> Informer:
        """Antrea's Tiers, watched in ``resource``'s version from now on (a watch of another
        version, or one that failed, is replaced). Raises NotFound when they are not served."""
        current = self._tiers
        if current is not None and current.resource == resource and current.error is None:
            return current
        async with self._lock:
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
            except BaseException:
                await informer.stop()
                raise
            self._tiers = informer
            if current is not None:
                await current.stop()
            log.info("tiersWatched", extra={"resource": resource.qualified_name, "version": resource.version})
            return informer

    def optional_kinds(self) -> list[OwnedKind]:
        return list(self._optional.values())

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

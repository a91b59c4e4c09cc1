"""What the zone is built from: the member's imported ServiceImports and MCS EndpointSlices,
read from the importer's watch caches (``member.imports.caches``), so that the member watches
them once, whatever the query rate.

Those caches select the importer's objects by label; of them, only objects the member imported
count (annotation ``multicluster.antrea.io/imported-service``), so a user's own ServiceImport
never gets a clusterset.local name from us. Every change reaches the zone as one cache event,
after the cache took it; a subscription starts with what the cache holds.

The ServiceImport CRD may be missing when the member starts (MCS CRDs installed later) and its
served version decides what is watched (``served``, the importer's own choice of the version it
writes): until a version is served, and whenever its watch fails for good (CRD removed), the
feed asks again every ``retry_interval`` seconds and has the caches watch it (the importer does
the same when it writes one); the zone keeps no ServiceImport the caches no longer follow.
"""

from __future__ import annotations

import asyncio
import logging

from kube.client import KubeClient, WatchEvent
from kube.errors import KubeError
from kube.resources import ENDPOINT_SLICES, Obj
from kube.waiting import cancel_and_wait, until_set_or_done
from mcapi import names
from mcapi.resources import SERVICE_IMPORTS
from member.dns.zone import ClustersetZone
from member.imports.caches import CachesStopped, ImportCaches, OwnedKind, Unsubscribe
from member.imports.discovery import ApiDiscovery
from member.imports.objects import IMPORTED_SERVICE_IMPORTS, served

log = logging.getLogger(__name__)

DEFAULT_RETRY_INTERVAL = 10.0


def is_member_import(obj: Obj) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return names.ANNOTATION_IMPORTED_SERVICE in annotations


class DnsFeed:
    def __init__(
        self,
        client: KubeClient,
        caches: ImportCaches,
        zone: ClustersetZone,
        *,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
    ) -> None:
        """``caches``: the importer's, started; the feed only reads them (and asks them to watch
        the served ServiceImport version). ``client``: for discovery of that version."""
        self._apis = ApiDiscovery(client)
        self.caches = caches
        self.zone = zone
        self.retry_interval = retry_interval
        self._unsubscribe: list[Unsubscribe] = []
        self._imports_task: asyncio.Task[None] | None = None
        # Set once the first look for the ServiceImport CRD is over: watched, or not served.
        self._first_look = asyncio.Event()

    async def start(self) -> None:
        """Fill the zone from the caches and follow them; returns once the ServiceImports are
        followed too, if their CRD is served. A CRD installed later is followed from then on."""
        self._unsubscribe = [
            self.caches.subscribe(ENDPOINT_SLICES.qualified_name, self._on_slice),
            self.caches.subscribe(SERVICE_IMPORTS.qualified_name, self._on_service_import),
        ]
        self._imports_task = asyncio.create_task(self._follow_service_imports(), name="dns-feed-serviceimports")
        try:
            await until_set_or_done(self._first_look, self._imports_task)
        except BaseException:
            # Cancelled on the way: nothing may go on following the caches (nor start a watch).
            await self.stop()
            raise

    async def stop(self) -> None:
        task, self._imports_task = self._imports_task, None
        await cancel_and_wait(task)
        unsubscribe, self._unsubscribe = self._unsubscribe, []
        for end in unsubscribe:
            end()
        await self._apis.close()

    @property
    def synced(self) -> bool:
        """The zone holds what the caches hold, and they follow ServiceImports and EndpointSlices."""
        return bool(self._unsubscribe) and all(
            self.caches.watching(resource.qualified_name) is not None for resource in (ENDPOINT_SLICES, SERVICE_IMPORTS)
        )

    async def _follow_service_imports(self) -> None:
        while True:
            try:
                kind = self.caches.watching(SERVICE_IMPORTS.qualified_name) or await self._watch_served()
            except CachesStopped:
                return  # the member stopped its caches: there is nothing more to follow
            self._first_look.set()
            if kind is None:
                await asyncio.sleep(self.retry_interval)
            else:
                await kind.ended()

    async def _watch_served(self) -> OwnedKind | None:
        """Have the caches watch the served ServiceImport version; None when none is served."""
        try:
            # Asked only when nothing is watched (every retry_interval, or after a watch ended):
            # the answer of now, not one kept from a while ago.
            self._apis.forget()
            spec = await served(IMPORTED_SERVICE_IMPORTS, self._apis)
            if spec is None:
                return None
            return await self.caches.optional_kind(spec)
        except (KubeError, RuntimeError) as err:  # RuntimeError: its watch ended before its list
            log.warning("dnsFeedDiscoveryFailed", extra={"error": str(err)})
            return None

    def _on_service_import(self, event: WatchEvent) -> None:
        if event.type == "DELETED" or not is_member_import(event.object):
            self.zone.delete_service_import(event.object)
        else:
            self.zone.put_service_import(event.object)

    def _on_slice(self, event: WatchEvent) -> None:
        if event.type == "DELETED" or not is_member_import(event.object):
            self.zone.delete_endpoint_slice(event.object)
        else:
            self.zone.put_endpoint_slice(event.object)

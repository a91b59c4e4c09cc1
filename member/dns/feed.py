"""What the zone is built from: the member's imported ServiceImports and MCS EndpointSlices,
followed through informers (one list+watch per kind, whatever the query rate).

Only objects the member imported count (annotation ``multicluster.antrea.io/imported-service``),
so a user's own ServiceImport never gets a clusterset.local name from us. EndpointSlices are
selected on the API server by their MCS label ``multicluster.kubernetes.io/service-name``.

The ServiceImport CRD may be missing when the member starts (MCS CRDs installed later) and its
served version decides what to watch (v1beta1 where served, else v1alpha1): until a version is
served, and whenever the watch fails for good (CRD removed), the feed asks again every
``retry_interval`` seconds, and the zone keeps no ServiceImport it cannot follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from kube.client import KubeClient, WatchEvent
from kube.errors import KubeError, NotFound
from kube.informer import Informer
from kube.resources import ENDPOINT_SLICES, SERVICE_IMPORTS, SERVICE_IMPORTS_V1BETA1, Obj, Resource
from mcapi import names
from member.dns.zone import ClustersetZone

log = logging.getLogger(__name__)

# Preferred first: the version the importer writes where both are served.
SERVICE_IMPORT_VERSIONS = (SERVICE_IMPORTS_V1BETA1, SERVICE_IMPORTS)
DEFAULT_RETRY_INTERVAL = 10.0


def is_member_import(obj: Obj) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return names.ANNOTATION_IMPORTED_SERVICE in annotations


async def served_service_import(client: KubeClient) -> Resource | None:
    """The ServiceImport version to watch, or None while the API server serves none."""
    try:
        document: Any = await client.request("GET", f"/apis/{names.MCS_GROUP}")
    except NotFound:
        return None
    served = {v.get("version") for v in (document or {}).get("versions") or [] if isinstance(v, dict)}
    for resource in SERVICE_IMPORT_VERSIONS:
        if resource.version not in served:
            continue
        try:
            listing: Any = await client.request("GET", f"/apis/{names.MCS_GROUP}/{resource.version}")
        except NotFound:
            continue
        plurals = {r.get("name") for r in (listing or {}).get("resources") or [] if isinstance(r, dict)}
        if resource.plural in plurals:
            return resource
    return None


class DnsFeed:
    def __init__(self, client: KubeClient, zone: ClustersetZone, *, retry_interval: float = DEFAULT_RETRY_INTERVAL):
        self.client = client
        self.zone = zone
        self.retry_interval = retry_interval
        self.slices = Informer(
            client, ENDPOINT_SLICES, label_selector=names.LABEL_MCS_SERVICE_NAME, handler=self._on_slice
        )
        self.service_imports: Informer | None = None
        self._imports_task: asyncio.Task[None] | None = None
        self.imports_synced = asyncio.Event()
        # Set once the first look for the ServiceImport CRD is over: listed, or not served.
        self._first_look = asyncio.Event()

    async def start(self) -> None:
        """Start following; returns once the EndpointSlices and (if their CRD is served) the
        ServiceImports are listed. A CRD installed later is followed from then on."""
        self._imports_task = asyncio.create_task(self._follow_service_imports(), name="dns-feed-serviceimports")
        await self.slices.wait_synced()
        first_look = asyncio.ensure_future(self._first_look.wait())
        try:
            await asyncio.wait({first_look, self._imports_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            first_look.cancel()

    async def stop(self) -> None:
        task, self._imports_task = self._imports_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.slices.stop()

    @property
    def synced(self) -> bool:
        return self.slices.synced.is_set() and self.imports_synced.is_set()

    async def _follow_service_imports(self) -> None:
        while True:
            try:
                resource = await served_service_import(self.client)
            except KubeError as err:
                log.warning("dnsFeedDiscoveryFailed", extra={"error": str(err)})
                resource = None
            if resource is not None:
                await self._watch(resource)
            self._first_look.set()
            await asyncio.sleep(self.retry_interval)

    async def _watch(self, resource: Resource) -> None:
        informer = Informer(self.client, resource, handler=self._on_service_import)
        self.service_imports = informer
        try:
            informer.start()
            await informer.wait_synced()
            self.imports_synced.set()
            self._first_look.set()
            log.info("dnsFeedFollowing", extra={"resource": resource.qualified_name, "version": resource.version})
            await informer.wait()
        except (KubeError, RuntimeError) as err:
            log.warning("dnsFeedWatchEnded", extra={"resource": resource.qualified_name, "error": str(err)})
        finally:
            await informer.stop()
            # What can no longer be followed is no longer answered.
            for obj in informer.list():
                self.zone.delete_service_import(obj)
            self.service_imports = None
            self.imports_synced.clear()

    async def _on_service_import(self, event: WatchEvent) -> None:
        if event.type == "DELETED" or not is_member_import(event.object):
            self.zone.delete_service_import(event.object)
        else:
            self.zone.put_service_import(event.object)

    async def _on_slice(self, event: WatchEvent) -> None:
        if event.type == "DELETED" or not is_member_import(event.object):
            self.zone.delete_endpoint_slice(event.object)
        else:
            self.zone.put_endpoint_slice(event.object)

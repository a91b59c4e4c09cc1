"""ImportApplier: the member's side of WatchImports, turning the hub's imports into objects
in this cluster (Antrea's ResourceImport reconciler and the import half of its stale
controller).

Events come one at a time from the HubSession and are applied under one lock, shared
with the background retry. An import blocked by this cluster (its Namespace missing, a
user's object under our name, Antrea's CRDs or a Tier missing) is acknowledged, reported
failed and retried when its Namespace appears and every ``retry_interval``; any other
failure is raised so that the session delivers the event again. Each import's outcome
is reported to the hub only when it changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from kube.client import KubeClient, WatchEvent
from kube.errors import KubeError, TemporaryError
from kube.events import EventRecorder
from kube.informer import Informer
from kube.resources import NAMESPACES, Obj, name_of
from mcapi.convert.errors import ConversionError
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient.events import Delete, ImportEvent, Resumed, Synced, Upsert
from member.imports.cluster_info import apply_cluster_info, delete_cluster_info
from member.imports.context import ImportContext
from member.imports.discovery import ApiDiscovery
from member.imports.endpoints import apply_endpoints, delete_endpoints
from member.imports.inventory import delete_imported, imported_objects
from member.imports.label_identity import apply_label_identity, delete_label_identity
from member.imports.outcome import SUCCEEDED, ImportBlocked, ImportReason, Outcome
from member.imports.policies import apply_acnp, delete_acnp, policy_name
from member.imports.services import apply_service_import, delete_service_import

log = logging.getLogger(__name__)

Report = Callable[[str, bool, str, str], None]
EVENT_COMPONENT = "mchub-member"
EVENT_REASON_CONFLICT = "ImportConflict"
_NAMESPACED_PAYLOADS = ("service_import", "endpoints")


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ImportApplier:
    def __init__(
        self,
        client: KubeClient,
        *,
        cluster_id: str,
        member_namespace: str,
        report: Report,
        recorder: EventRecorder | None = None,
        clock: Callable[[], datetime] = _utc_now,
        retry_interval: float = 30.0,
        discovery_ttl: float = 10.0,
    ) -> None:
        """``report(import_name, succeeded, reason, message)`` is called when an import's outcome
        changes (e.g. ``HubSession.report_import_status``). ``retry_interval``: seconds between
        attempts at blocked imports. ``discovery_ttl``: seconds a discovery answer (is the
        ClusterNetworkPolicy CRD served?) is reused."""
        self._ctx = ImportContext(
            client, cluster_id, member_namespace, ApiDiscovery(client, discovery_ttl), clock, self._cached_namespace
        )
        self._report_to = report
        self._recorder = recorder if recorder is not None else EventRecorder(client, EVENT_COMPONENT)
        self._retry_interval = retry_interval
        self._lock = asyncio.Lock()
        self._known: dict[str, pb.ResourceImport] = {}  # the latest Upsert of every import
        self._retry: set[str] = set()  # imports to apply again (blocked, failed, or their Namespace came back)
        self._reported: dict[str, Outcome] = {}
        self._warned: dict[str, str] = {}  # import -> uid of the user's object we put a Warning on
        self._wake = asyncio.Event()
        self._namespaces: Informer | None = None
        self._retry_task: asyncio.Task[None] | None = None

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Watch Namespaces (an import waiting for its Namespace is applied when it appears) and
        retry blocked imports in the background."""
        if self._retry_task is not None:
            return
        self._namespaces = Informer(self._ctx.client, NAMESPACES, handler=self._on_namespace)
        self._namespaces.start()
        self._retry_task = asyncio.create_task(self._retry_loop(), name=f"imports-retry-{self._ctx.cluster_id}")

    async def stop(self) -> None:
        task, self._retry_task = self._retry_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        informer, self._namespaces = self._namespaces, None
        if informer is not None:
            await informer.stop()

    # ---- the session's consumer ---------------------------------------------

    async def handle(self, event: ImportEvent) -> None:
        """Apply one import event; returning acknowledges it, raising has it delivered again."""
        async with self._lock:
            if isinstance(event, Upsert):
                await self._apply(event.resource, from_event=True)
            elif isinstance(event, Delete):
                await self._delete(event.import_name)
            elif isinstance(event, Synced):
                await self._remove_stale(event)
                self._wake.set()
            elif isinstance(event, Resumed):
                self._wake.set()

    async def remove_all(self) -> None:
        """The member leaves the ClusterSet: delete every object it imported (users' objects stay)."""
        async with self._lock:
            objects = await imported_objects(self._ctx)
            deleted = await delete_imported(objects, self._ctx)
            self._known.clear()
            self._retry.clear()
            self._reported.clear()
            self._warned.clear()
        log.info("importedObjectsRemoved", extra={"clusterID": self._ctx.cluster_id, "count": deleted})

    async def retry_blocked(self) -> None:
        """Apply again every import that is blocked or waiting (the background loop calls this)."""
        async with self._lock:
            for import_name in sorted(self._retry):
                message = self._known.get(import_name)
                if message is None:
                    self._retry.discard(import_name)
                    continue
                await self._apply(message, from_event=False)

    def outcome(self, import_name: str) -> Outcome | None:
        """The last outcome reported for this import."""
        return self._reported.get(import_name)

    # ---- applying ------------------------------------------------------------

    async def _apply(self, message: pb.ResourceImport, *, from_event: bool) -> None:
        import_name = message.import_name
        self._known[import_name] = message
        if not self._targets_this_cluster(message):
            log.debug("importNotForThisCluster", extra={"import": import_name})
            await self._remove(import_name, message)
            self._forget(import_name)
            return
        try:
            await self._write(message)
        except ImportBlocked as blocked:
            self._retry.add(import_name)
            log.info(
                "importBlocked",
                extra={"import": import_name, "reason": str(blocked.reason), "detail": blocked.message},
            )
            await self._warn(import_name, blocked)
            self._report(import_name, blocked.outcome)
            return
        except (KubeError, TemporaryError) as err:
            self._retry.add(import_name)
            if from_event:
                raise
            log.warning("importRetryFailed", extra={"import": import_name, "error": str(err)})
            return
        self._retry.discard(import_name)
        self._warned.pop(import_name, None)
        self._report(import_name, SUCCEEDED)

    async def _write(self, message: pb.ResourceImport) -> None:
        payload = message.WhichOneof("payload")
        try:
            if payload == "service_import":
                await apply_service_import(self._ctx, message)
            elif payload == "endpoints":
                await apply_endpoints(self._ctx, message)
            elif payload == "cluster_network_policy":
                await apply_acnp(self._ctx, message)
            elif payload == "cluster_info":
                await apply_cluster_info(self._ctx, message)
            elif payload == "label_identity":
                await apply_label_identity(self._ctx, message)
            else:
                raise ImportBlocked(ImportReason.INVALID, f"import {message.import_name} has no payload")
        except (ConversionError, ValueError) as err:
            raise ImportBlocked(ImportReason.INVALID, f"import {message.import_name}: {err}") from None

    def _targets_this_cluster(self, message: pb.ResourceImport) -> bool:
        cluster_id = self._ctx.cluster_id
        if message.cluster_ids and cluster_id not in message.cluster_ids:
            return False
        # A member never imports its own ClusterInfo.
        return not (message.HasField("cluster_info") and message.cluster_info.cluster_id == cluster_id)

    # ---- removing ------------------------------------------------------------

    async def _delete(self, import_name: str) -> None:
        await self._remove(import_name, self._known.get(import_name))
        self._forget(import_name)

    async def _remove(self, import_name: str, message: pb.ResourceImport | None) -> None:
        """Delete the objects of one import (ours only)."""
        ctx = self._ctx
        payload = message.WhichOneof("payload") if message is not None else None
        if message is None or payload is None:
            # An import this process never saw (delivered before a restart): find its objects by name.
            objects = [o for o in await imported_objects(ctx) if o.import_name == import_name]
            await delete_imported(objects, ctx)
        elif payload == "service_import":
            await delete_service_import(ctx, message.namespace, message.name)
        elif payload == "endpoints":
            await delete_endpoints(ctx, message.namespace, message.name)
        elif payload == "cluster_network_policy":
            await delete_acnp(ctx, policy_name(message))
        elif payload == "cluster_info":
            await delete_cluster_info(ctx, import_name)
        else:
            await delete_label_identity(ctx, import_name)
        log.info("importRemoved", extra={"import": import_name})

    async def _remove_stale(self, synced: Synced) -> None:
        """After a snapshot: delete every object of ours whose import the hub no longer has."""
        keep = synced.names
        for import_name in [n for n in self._known if n not in keep]:
            self._forget(import_name)
        objects = await imported_objects(self._ctx)
        stale = [o for o in objects if o.import_name not in keep]
        for item in stale:
            log.info("staleImportedObject", extra={"import": item.import_name, "object": item.ref})
        deleted = await delete_imported(stale, self._ctx)
        log.info(
            "importsSynced",
            extra={"reason": pb.SyncedReason.Name(synced.reason), "imports": len(keep), "staleDeleted": deleted},
        )

    def _forget(self, import_name: str) -> None:
        self._known.pop(import_name, None)
        self._retry.discard(import_name)
        self._reported.pop(import_name, None)
        self._warned.pop(import_name, None)

    # ---- telling -------------------------------------------------------------

    def _report(self, import_name: str, outcome: Outcome) -> None:
        if self._reported.get(import_name) == outcome:
            return
        self._reported[import_name] = outcome
        try:
            self._report_to(import_name, outcome.succeeded, str(outcome.reason), outcome.message)
        except Exception:
            # The outcome is still applied; a report that cannot be sent must not undo that.
            log.exception("importReportFailed", extra={"import": import_name})

    async def _warn(self, import_name: str, blocked: ImportBlocked) -> None:
        conflicting = blocked.conflicting
        if conflicting is None:
            return
        uid = str((conflicting.object.get("metadata") or {}).get("uid") or name_of(conflicting.object))
        if self._warned.get(import_name) == uid:
            return  # told once per object: retries must not pile up Events
        self._warned[import_name] = uid
        await self._recorder.warning(conflicting.object, EVENT_REASON_CONFLICT, blocked.message, conflicting.resource)

    def _cached_namespace(self, name: str) -> Obj | None:
        informer = self._namespaces
        if informer is None or not informer.synced.is_set():
            return None
        return informer.get(name)

    # ---- background ----------------------------------------------------------

    async def _on_namespace(self, event: WatchEvent) -> None:
        if event.type != "ADDED" or (event.object.get("metadata") or {}).get("deletionTimestamp"):
            return
        namespace = name_of(event.object)
        waiting = [
            name
            for name, message in self._known.items()
            if message.namespace == namespace and message.WhichOneof("payload") in _NAMESPACED_PAYLOADS
        ]
        if waiting:
            self._retry.update(waiting)
            self._wake.set()

    async def _retry_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._retry_interval):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.retry_blocked()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("importRetryLoopFailed", extra={"clusterID": self._ctx.cluster_id})

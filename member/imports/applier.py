"""ImportApplier: the member's side of WatchImports, turning the hub's imports into objects
in this cluster (Antrea's ResourceImport reconciler and the import half of its stale
controller), level-based and concurrent.

What an import of each payload means (how it is applied, which objects it writes and so
deletes) is the registry's (member.imports.kinds). The session's events only change the
desired state, the latest import of every name, and queue that name; ``handle`` returns at
once. A keyed work queue with ``workers`` workers converges each name on what the caches show
(``member.imports.caches``): one name is never handled by two workers at once, repeated
updates of a name coalesce into one pass, and a name that fails backs off alone. A name with
no import is removed, once the importer knows it is stale: the hub deleted it, or a snapshot
ended without it (Synced) — those removals go in the queue's background lane, behind every
import to apply.

An import blocked by this cluster (its Namespace missing, a user's object under our name,
Antrea's CRDs or a Tier missing) is reported failed and tried again with a backoff up to
``retry_interval``, and at once when its Namespace (or, for a policy, its Tier) appears or
API discovery serves other resources than before (CRDs installed or removed); an
imported policy whose Tier is deleted is looked at again at once, and so removed. Any other
failure (the API server unreachable, a write conflict) is retried with the same backoff
without a report.
Each import's outcome is reported to the hub only when it changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from kube.backoff import Backoff
from kube.client import KubeClient, WatchEvent
from kube.errors import TemporaryError
from kube.events import EventRecorder
from kube.informer import cache_key
from kube.queue_worker import QueueWorker
from kube.resources import name_of
from kube.workqueue import WorkQueue
from mcapi import names, trace
from mcapi.convert.errors import ConversionError
from mcapi.delivery import delivers_to
from mcapi.mchub.v1 import common_area_pb2 as pb
from member import COMPONENT
from member.hubclient.events import Delete, ImportEvent, Resumed, Synced, Upsert
from member.imports.caches import ImportCaches, Unlisten
from member.imports.context import ImportContext
from member.imports.discovery import ApiDiscovery
from member.imports.kinds import import_kind, written_kinds
from member.imports.local_endpoints import LocalEndpoints, has_subset_of
from member.imports.outcome import SUCCEEDED, ImportBlocked, ImportReason, Outcome
from member.imports.ownership import ObjectWriter
from member.imports.policies import policy_tier

log = logging.getLogger(__name__)

Report = Callable[[str, bool, str, str], None]
EVENT_REASON_CONFLICT = "ImportConflict"
# A real API server takes 1-2k writes/s on two cores; 8 writers keep it busy without a pile-up.
DEFAULT_WORKERS = 8


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ImportApplier:
    def __init__(
        self,
        client: KubeClient,
        *,
        cluster_id: str,
        report: Report,
        recorder: EventRecorder | None = None,
        clock: Callable[[], datetime] = _utc_now,
        retry_interval: float = 30.0,
        discovery_ttl: float = 10.0,
        workers: int = DEFAULT_WORKERS,
        registry: CollectorRegistry | None = None,
        caches: ImportCaches,
        local_endpoints: LocalEndpoints | None = None,
    ) -> None:
        """``report(import_name, succeeded, reason, message)`` is called when an import's outcome
        changes (e.g. ``HubSession.report_import_status``). ``retry_interval``: seconds, the
        longest wait between attempts at a blocked import. ``discovery_ttl``: seconds a discovery
        answer (is the ServiceImport CRD served, in which version?) is reused. ``workers``: imports
        written at once. ``registry``: where the work queue's metrics go (none: not counted).
        ``caches``: the member's started import caches (they name its Namespace; they outlive
        this importer and others read them too); the importer only reads them and has them
        watch the optional kinds it writes. ``local_endpoints``: this cluster's Endpoints as the
        ServiceExportController watches them: this cluster's own share of an Endpoints import is
        written from them, and again when they change (none: as the hub merged it)."""
        if workers < 1:
            raise ValueError("an importer needs at least one worker")
        self._caches = caches
        self._apis = ApiDiscovery(client, discovery_ttl, on_change=self._on_apis_changed)
        self._ctx = ImportContext(
            client,
            cluster_id,
            caches.member_namespace,
            self._apis,
            clock,
            self._caches,
            ObjectWriter(client),
            local_endpoints,
            self._desired_import,
        )
        self._local_endpoints = local_endpoints
        self._local_handler_added = False
        self._desired: dict[str, pb.ResourceImport] = {}  # the latest Upsert of every import
        self._report_to = report
        self._recorder = recorder if recorder is not None else EventRecorder(client, COMPONENT)
        backoff = Backoff(initial=min(0.05, retry_interval), maximum=retry_interval, jitter=0.0)
        self._queue: WorkQueue[str] = WorkQueue(f"imports-{cluster_id}", backoff=backoff, registry=registry)
        # Until a snapshot ended (or the watch resumed), an import not desired may just not have
        # been delivered yet: its objects are removed only if the hub deleted it.
        self._complete = False
        self._deleted: set[str] = set()
        self._reported: dict[str, Outcome] = {}
        self._warned: dict[str, str] = {}  # import -> uid of the user's object we put a Warning on
        self._worker: QueueWorker[str] = QueueWorker(self._queue, self._reconcile, workers=workers)
        self._unlisten: Unlisten | None = None  # while bound to the caches

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Listen to the caches, have them watch the optional kinds served now, then start the
        workers. Raises RuntimeError while another importer listens to the same caches."""
        if self._worker.running:
            return
        self._unlisten = self._caches.listen(self._on_object_changed, self._on_namespace, self._on_tier)
        if self._local_endpoints is not None and not self._local_handler_added:
            self._local_endpoints.add_handler(self._on_local_endpoints)
            self._local_handler_added = True
        # Objects of the optional kinds may have been imported before a restart: watch them.
        await self._watch_optional_kinds()
        self._worker.start()

    async def stop(self) -> None:
        await self._worker.close()
        await self._apis.close()
        unlisten, self._unlisten = self._unlisten, None
        if unlisten is not None:
            unlisten()

    # ---- the session's consumer ---------------------------------------------

    async def handle(self, event: ImportEvent) -> None:
        """Take one import event into the desired state; the workers apply it."""
        if isinstance(event, Upsert):
            name = event.import_name
            self._desired[name] = event.resource
            self._deleted.discard(name)
            self._queue.add(name)
            self._again_with_selection(event.resource)
        elif isinstance(event, Delete):
            self._forget_desired(event.import_name)
            self._queue.add(event.import_name)
        elif isinstance(event, Synced):
            await self._mark_stale(event)
        elif isinstance(event, Resumed):
            self._complete = True

    async def settled(self) -> None:
        """Until every change handed over so far was tried once (blocked imports keep retrying)."""
        await self._queue.wait_quiet()

    async def remove_all(self) -> None:
        """The member leaves the ClusterSet: delete every object it imported (users' objects stay).
        Raises TemporaryError if some could not be deleted."""
        self._desired.clear()
        self._complete = True
        await self._watch_optional_kinds()
        for name in sorted(self._caches.import_names()):
            self._queue.forget(name)
            self._queue.add(name)
        await self._queue.wait_quiet()
        left = self._caches.import_names()
        self._reported.clear()
        self._warned.clear()
        log.info("importedObjectsRemoved", extra={"clusterID": self._ctx.cluster_id, "importsLeft": len(left)})
        if left:
            raise TemporaryError(f"objects of {len(left)} imports could not be removed yet")

    async def retry_blocked(self) -> None:
        """Try every import that is blocked or failing again now, and wait until that is done."""
        self._blocked_again_now()
        await self._queue.wait_quiet()

    def outcome(self, import_name: str) -> Outcome | None:
        """The last outcome reported for this import."""
        return self._reported.get(import_name)

    def requeues(self, import_name: str) -> int:
        """How many attempts at this import failed in a row (0 once applied)."""
        return self._queue.num_requeues(import_name)

    # ---- the desired state ---------------------------------------------------

    def _desired_import(self, import_name: str) -> pb.ResourceImport | None:
        return self._desired.get(import_name)

    def _again_with_selection(self, message: pb.ResourceImport) -> None:
        """A ServiceImport's cluster selectors choose which endpoints its Endpoints import writes
        (member.imports.selection): that one is looked at again too (it writes only what differs)."""
        if not message.HasField("service_import"):
            return
        endpoints = names.endpoints_import_name(message.namespace, message.name)
        if endpoints in self._desired:
            self._queue.add(endpoints)

    def _forget_desired(self, import_name: str) -> None:
        self._desired.pop(import_name, None)
        self._deleted.add(import_name)

    async def _mark_stale(self, synced: Synced) -> None:
        """A snapshot ended: every import it did not hold is stale, whatever objects it has."""
        keep = synced.names
        await self._watch_optional_kinds()
        stale = {name for name in self._desired if name not in keep}
        for name in stale:
            self._forget_desired(name)
        stale |= self._caches.import_names() - keep
        self._complete = True
        for name in sorted(stale):
            self._queue.add_background(name)
        log.info(
            "importsSynced",
            extra={"reason": pb.SyncedReason.Name(synced.reason), "imports": len(keep), "stale": len(stale)},
        )

    async def _watch_optional_kinds(self) -> None:
        """Watch the CRD kinds served now, so that their stale objects are seen too."""
        for spec in written_kinds():
            if spec.optional:
                await self._ctx.watched(spec)

    # ---- one import ----------------------------------------------------------

    async def _reconcile(self, import_name: str) -> float | None:
        message = self._desired.get(import_name)
        if message is None:
            if self._complete or import_name in self._deleted:
                await self._remove(import_name)
                self._deleted.discard(import_name)
                self._reported.pop(import_name, None)
                self._warned.pop(import_name, None)
            return None
        if not delivers_to(message, self._ctx.cluster_id):
            log.debug("importNotForThisCluster", extra={"import": import_name})
            await self._remove(import_name)
            self._reported.pop(import_name, None)
            return None
        trace.mark_import(trace.Hop.APPLY_STARTED, message, self._ctx.cluster_id)
        try:
            await self._write(message)
        except ImportBlocked as blocked:
            log.info(
                "importBlocked",
                extra={"import": import_name, "reason": str(blocked.reason), "detail": blocked.message},
            )
            await self._warn(import_name, blocked)
            self._report(import_name, blocked.outcome)
            raise TemporaryError(f"blocked: {blocked.message}") from None
        self._warned.pop(import_name, None)
        self._report(import_name, SUCCEEDED)
        return None

    async def _write(self, message: pb.ResourceImport) -> None:
        kind = import_kind(message)
        if kind is None:
            raise ImportBlocked(ImportReason.INVALID, f"import {message.import_name} has no payload")
        try:
            await kind.apply(self._ctx, message)
        except (ConversionError, ValueError) as err:
            raise ImportBlocked(ImportReason.INVALID, f"import {message.import_name}: {err}") from None

    async def _remove(self, import_name: str) -> None:
        """Delete whatever objects of ours belong to this import (found in the caches by name,
        so this works for imports this process never saw)."""
        deleted = 0
        for spec in written_kinds():
            for kind in self._caches.kinds_of(spec):
                deleted += await self._ctx.writer.delete_all(kind, import_name)
        if deleted:
            log.info("importRemoved", extra={"import": import_name, "objects": deleted})

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

    # ---- what the caches tell ------------------------------------------------

    def _on_object_changed(self, import_name: str) -> None:
        """Someone else changed or deleted one of our objects: look at its import again."""
        if import_name in self._desired or self._complete:
            self._queue.add(import_name)

    async def _on_local_endpoints(self, event: WatchEvent) -> None:
        """This cluster's Endpoints of a Service changed: the Endpoints import holding this
        cluster's share of it is written again (from them; only what differs)."""
        if not self._worker.running:
            return
        namespace, name = cache_key(event.object)
        import_name = names.endpoints_import_name(namespace, name)
        message = self._desired.get(import_name)
        if (
            message is not None
            and (message.namespace, message.name) == (namespace, name)
            and has_subset_of(message, self._ctx.cluster_id)
        ):
            self._queue.add(import_name)

    def _on_namespace(self, event: WatchEvent) -> None:
        if event.type != "ADDED" or (event.object.get("metadata") or {}).get("deletionTimestamp"):
            return
        namespace = name_of(event.object)
        for name, message in self._desired.items():
            kind = import_kind(message)
            if message.namespace == namespace and kind is not None and kind.namespaced:
                self._again_now(name)

    def _on_tier(self, event: WatchEvent) -> None:
        """A Tier was created (policies waiting for it apply) or deleted (policies in it go)."""
        if event.type not in ("ADDED", "DELETED"):
            return
        tier = name_of(event.object)
        for name, message in self._desired.items():
            if policy_tier(message) == tier:
                self._again_now(name)

    def _on_apis_changed(self, group: str) -> None:
        """Discovery serves other resources of ``group`` now: what was blocked may apply (its CRD
        came), so every import not applied is tried again at once."""
        if self._worker.running:
            log.info("apiResourcesChanged", extra={"group": group, "blockedImports": self._blocked_again_now()})

    def _blocked_again_now(self) -> int:
        """Queue every import not applied (blocked or failing) for an attempt now; how many."""
        blocked = [name for name, outcome in self._reported.items() if not outcome.succeeded]
        for name in blocked:
            self._again_now(name)
        return len(blocked)

    def _again_now(self, import_name: str) -> None:
        self._queue.forget(import_name)  # no backoff left over from waiting
        self._queue.add(import_name)

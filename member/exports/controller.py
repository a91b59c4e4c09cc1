"""ServiceExportController: ServiceExports (their exported labels and annotations, their Services
and Endpoints) -> the hub session's desired exports, and the hub's verdicts -> ServiceExport
conditions.

Informers watch ServiceExports (multicluster.x-k8s.io, v1beta1 when served, whose alpha
clusterSelectors and status.clusters v1alpha1 has not; else v1alpha1),
Services and Endpoints in every Namespace (but the importer's, which are never exported); a work
queue keyed by (namespace, name) runs one reconcile per ServiceExport on ``workers`` workers: get
(gone means withdraw) -> evaluate
into exports or a reason -> hand the exports to the session (it sends only what changed,
pipelined) -> write the conditions if they differ. Verdicts, solicited or not, re-queue the
ServiceExport. The conditions are compared with the cache as our last status write left it
(a WriteThroughCache), so a status write costs one request and the echo of our own write
does not wake the ServiceExport again.

While the hub says the member is globally addressed (its ranges overlap another member's), each
export gets its global addresses before it goes to the session, and its shadow Service is kept
(member.global_addresses); the hub's verdict comes through ``set_global_addressing``.

Its sink is the hub session, given at construction (not started yet when the member joins):
``start()`` syncs the informers and hands the session every export the ServiceExports make
before the session's first sync bracket, so a restarted member does not churn; then the
workers give every ServiceExport its status.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from kube.client import KubeClient, WatchEvent
from kube.discovery import first_served
from kube.errors import NotFound, PermanentError
from kube.events import EventRecorder
from kube.informer import Informer, cache_key
from kube.manager import Watches
from kube.queue_worker import QueueWorker
from kube.resources import ENDPOINTS, SERVICES, Obj, Resource
from kube.workqueue import WorkQueue
from kube.writecache import WriteThroughCache
from mcapi import names, trace
from mcapi.config import EndpointIPType
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import SERVICE_EXPORTS, SERVICE_EXPORTS_V1BETA1
from member.exports.conditions import (
    READY,
    REASON_PENDING,
    HubAnswer,
    apply_conditions,
    exported_to,
    wanted_conditions,
)
from member.exports.evaluate import Evaluation, Key, evaluate, export_names
from member.global_addresses.addressing import GlobalAddressing, Localized
from member.global_addresses.shadow import LABEL_SHADOW_OF
from member.hubclient import ExportSink

log = logging.getLogger(__name__)

# Status writes are what a reconcile waits for; enough of them at once keep exports flowing.
DEFAULT_WORKERS = 4
# The importer's Services and Endpoints (labelled) are left out of the watches here: every imported
# object would otherwise come twice, to the importer and to this controller, which never exports
# them. A ServiceExport of such a Service reads it from the API server (to say ImportedService)
# and is looked at again this often (seconds).
_NOT_IMPORTED = f"!{names.ANNOTATION_IMPORTED_SERVICE}"
# Nor are the shadows of exported Services (member.global_addresses.shadow) ever exported.
_NOT_MCHUBS = f"{_NOT_IMPORTED},!{LABEL_SHADOW_OF}"
IMPORTED_SERVICE_RECHECK = 30.0
# A valid export waits this long (seconds) for the leader's answer before its ServiceExport shows
# Ready=False/Pending: the answer usually comes within milliseconds, and writing "Pending" first
# would double the status writes of every export (a burst of 1,000 exports: 1,000 more PATCHes).
PENDING_STATUS_GRACE = 2.0


def _key(obj: Obj) -> Key:
    return cache_key(obj)


class ServiceExportController:
    def __init__(
        self,
        client: KubeClient,
        cluster_id: str,
        ip_type: EndpointIPType,
        sink: ExportSink,
        *,
        workers: int = DEFAULT_WORKERS,
        registry: CollectorRegistry | None = None,
        sync_timeout: float | None = None,
        global_addressing: GlobalAddressing | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        """``sink``: the hub session. ``sync_timeout``: seconds start() waits for the informers' first lists.
        ``global_addressing``: what exports carry while the member is globally addressed (None: never)."""
        self._client = client
        self._global = global_addressing
        self._recorder = recorder
        self._cluster_id = cluster_id
        self._ip_type = ip_type
        self._sink = sink
        self._sync_timeout = sync_timeout
        self._queue: WorkQueue[Key] = WorkQueue(f"serviceexport-{cluster_id}", registry=registry)
        self._resource: Resource = SERVICE_EXPORTS
        self._watches = Watches()
        self._service_exports: Informer | None = None
        self._written: WriteThroughCache | None = None
        self._services: Informer | None = None
        # Made here, not in start(): the importer reads this watch too (local_endpoints).
        self._endpoints = Informer(client, ENDPOINTS, label_selector=_NOT_IMPORTED, handler=self._on_backing_object)
        self._worker: QueueWorker[Key] = QueueWorker(self._queue, self._reconcile, workers=workers)
        # Keys whose exports the session holds; export name -> its ServiceExport.
        self._exported: set[Key] = set()
        self._owners: dict[str, Key] = {}
        # When each valid export was first seen waiting for the leader's answer (loop time).
        self._waiting_since: dict[Key, float] = {}

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Watch ServiceExports, Services and Endpoints; once synced, hand the sink every export
        they make now and start reconciling (every ServiceExport gets its status)."""
        served = await first_served(self._client, (SERVICE_EXPORTS_V1BETA1, SERVICE_EXPORTS))
        if served is None:
            raise PermanentError("the MCS ServiceExport CRD (multicluster.x-k8s.io) is not installed")
        self._resource = served
        if self._global is not None:
            await self._global.start()  # the verdict and addresses the exports carried before
        self._service_exports = Informer(self._client, served, handler=self._on_service_export)
        self._written = WriteThroughCache(self._service_exports)
        self._services = Informer(self._client, SERVICES, label_selector=_NOT_MCHUBS, handler=self._on_backing_object)
        self._watches = Watches(self._service_exports, self._services, self._endpoints, sync_timeout=self._sync_timeout)
        await self._watches.start()
        self._sink.watch_answers(self._on_answer)
        for export in self._desired_exports():
            self._sink.set_export(export)
        if self._global is not None:
            self._global.settle()
        self._worker.start()
        for obj in self._service_exports.list():
            self._queue.add(_key(obj))
        for key in self._global.shadowed() if self._global is not None else ():
            self._queue.add(key)  # a shadow whose ServiceExport went while the member was away goes

    @property
    def local_endpoints(self) -> Informer:
        """This cluster's Endpoints (but the importer's), as this controller watches them from
        start() on: the importer writes this cluster's own share of an import from them."""
        return self._endpoints

    def _desired_exports(self) -> list[pb.ResourceExport]:
        """Every export the ServiceExports make now (once the informers synced)."""
        assert self._service_exports is not None
        exports: list[pb.ResourceExport] = []
        for obj in self._service_exports.list():
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue
            key = _key(obj)
            evaluation = self._localized(self._evaluate(key), self._service(key)).evaluation
            if evaluation.valid and evaluation.exports:
                exports.extend(evaluation.exports)
                self._remember(evaluation.key)
        return exports

    async def stop(self) -> None:
        await self._worker.close()
        await self._watches.stop()
        if self._global is not None:
            await self._global.stop()

    # ---- global addressing ---------------------------------------------------------

    async def remove_global_addresses(self) -> None:
        """The shadow Services and the record of global addresses go (leaving; after stop())."""
        if self._global is not None:
            await self._global.remove_all()

    def set_global_addressing(self, block: str, globally_addressed: bool) -> None:
        """The hub's verdict (AnnounceResponse); every ServiceExport follows when it changed."""
        if self._global is None or not self._global.set_verdict(block, globally_addressed):
            return
        if self._service_exports is not None:
            for obj in self._service_exports.list():
                self._queue.add(_key(obj))

    def _localized(self, evaluation: Evaluation, service: Obj | None) -> Localized:
        if self._global is None:
            return Localized(evaluation)
        return self._global.localize(evaluation, service)

    def _service(self, key: Key) -> Obj | None:
        assert self._services is not None
        return self._services.get(key[1], key[0])

    async def wait_idle(self) -> None:
        await self._queue.wait_idle()

    # ---- what the session tells ----------------------------------------------

    def _on_answer(self, export_name: str) -> None:
        """The hub answered (or refused) one of our exports: its ServiceExport's status follows."""
        key = self._owners.get(export_name)
        if key is not None:
            self._queue.add(key)

    # ---- events --------------------------------------------------------------

    async def _on_service_export(self, event: WatchEvent) -> None:
        assert self._written is not None
        if self._written.observe(event):
            return  # our own status write coming back
        key = _key(event.object)
        trace.mark(trace.Hop.EXPORT_EVENT, *key, self._cluster_id)
        self._queue.add(key)

    async def _on_backing_object(self, event: WatchEvent) -> None:
        key = _key(event.object)
        assert self._service_exports is not None
        if key in self._exported or self._service_exports.get(key[1], key[0]) is not None:
            self._queue.add(key)

    # ---- reconcile -----------------------------------------------------------

    def _evaluate(self, key: Key, service: Obj | None = None) -> Evaluation:
        assert self._services is not None and self._written is not None
        namespace, name = key
        return evaluate(
            self._cluster_id,
            self._ip_type,
            key,
            service if service is not None else self._services.get(name, namespace),
            self._endpoints.get(name, namespace),
            service_export=self._written.get(name, namespace),
        )

    async def _imported_service(self, key: Key) -> Obj | None:
        """The Service of a ServiceExport named like an imported one, which the watch leaves out."""
        namespace, name = key
        if not name.startswith(names.IMPORTED_PREFIX):
            return None
        try:
            return await self._client.get(SERVICES, name, namespace)
        except NotFound:
            return None

    def _remember(self, key: Key) -> None:
        self._exported.add(key)
        for name in export_names(self._cluster_id, key):
            self._owners[name] = key

    def _withdraw(self, key: Key) -> None:
        if key not in self._exported:
            return
        self._exported.discard(key)
        for name in export_names(self._cluster_id, key):
            self._sink.remove_export(name)
            self._owners.pop(name, None)
        log.info("service export withdrawn", extra={"serviceExport": f"{key[0]}/{key[1]}"})

    async def _reconcile(self, key: Key) -> float | None:
        assert self._written is not None
        namespace, name = key
        service_export = self._written.get(name, namespace)
        if service_export is None or (service_export.get("metadata") or {}).get("deletionTimestamp"):
            self._waiting_since.pop(key, None)
            self._withdraw(key)
            if self._global is not None:
                self._global.release(key)
                await self._global.ensure_shadow(key, Localized(Evaluation(key)))
            return None
        assert self._services is not None
        imported = None if self._services.get(name, namespace) else await self._imported_service(key)
        evaluation = await self._with_global_addresses(
            service_export, self._evaluate(key, imported), imported or self._service(key)
        )
        if evaluation.valid and evaluation.exports:
            for export in evaluation.exports:
                self._sink.set_export(export)
                trace.mark_export(trace.Hop.EXPORT_RECONCILED, export, self._cluster_id)
            self._remember(key)
        else:
            self._withdraw(key)
        answer_due = await self._write_status(service_export, evaluation)
        # An imported Service is not watched here: look again later, in case the import goes away.
        recheck = IMPORTED_SERVICE_RECHECK if imported is not None else None
        if answer_due is not None:
            recheck = answer_due if recheck is None else min(recheck, answer_due)
        return recheck

    async def _with_global_addresses(
        self, service_export: Obj, evaluation: Evaluation, service: Obj | None
    ) -> Evaluation:
        """The export with its global addresses and its shadow Service in place (as it was
        without global addressing); blocked when they could not be given (an Event says so
        when the block is full)."""
        if self._global is None:
            return evaluation
        localized = self._global.localize(evaluation, service)
        blocked = await self._global.ensure_shadow(evaluation.key, localized)
        if blocked is not None:
            return replace(localized.evaluation, exports=(), blocked=blocked)
        why = localized.evaluation.blocked
        if localized.exhausted and self._recorder is not None and why is not None:
            await self._recorder.warning(service_export, why.reason, why.message, self._resource)
        return localized.evaluation

    def _answer(self, export_name: str) -> HubAnswer:
        return HubAnswer(self._sink.verdict(export_name), self._sink.rejection(export_name))

    def _status(self, obj: Obj, evaluation: Evaluation) -> tuple[dict[str, Any], bool]:
        """The status to write (conditions, and status.clusters on v1beta1) and whether it changed."""
        service_name, endpoints_name = export_names(self._cluster_id, evaluation.key)
        status = obj.get("status") or {}
        current = status.get("conditions")
        service = self._answer(service_name)
        wanted = wanted_conditions(evaluation, service, self._answer(endpoints_name), current)
        generation = (obj.get("metadata") or {}).get("generation")
        conditions, changed = apply_conditions(
            current, wanted, generation if isinstance(generation, int) else None, datetime.now(UTC)
        )
        desired: dict[str, Any] = {"conditions": conditions}
        if self._resource.version != SERVICE_EXPORTS.version:
            desired["clusters"] = exported_to(service) if evaluation.valid else None
            changed = changed or desired["clusters"] != status.get("clusters")
        return desired, changed

    def _answer_due(self, key: Key, conditions: list[dict[str, Any]]) -> float | None:
        """Seconds left to wait for the leader's answer before showing Pending; None when the
        conditions are to be written now."""
        pending = any(c.get("type") == READY and c.get("reason") == REASON_PENDING for c in conditions)
        if not pending:
            self._waiting_since.pop(key, None)
            return None
        now = asyncio.get_running_loop().time()
        left = self._waiting_since.setdefault(key, now) + PENDING_STATUS_GRACE - now
        return left if left > 0 else None

    async def _write_status(self, cached: Obj, evaluation: Evaluation) -> float | None:
        """One conditional patch when the conditions differ from the cache (which holds our last
        write); a Conflict (someone wrote meanwhile) is retried by the queue from a fresher cache.
        Returns when to look again if the write waits for the leader's answer."""
        assert self._written is not None
        status, changed = self._status(cached, evaluation)
        if not changed:
            self._waiting_since.pop(evaluation.key, None)
            return None
        answer_due = self._answer_due(evaluation.key, status["conditions"])
        if answer_due is not None:
            return answer_due
        namespace, name = evaluation.key
        patch = {"metadata": {"resourceVersion": cached["metadata"]["resourceVersion"]}, "status": status}
        try:
            written = await self._client.patch_status(self._resource, name, patch, namespace)
        except NotFound:
            return None
        self._written.wrote(written)
        log.info(
            "service export status updated",
            extra={
                "serviceExport": f"{namespace}/{name}",
                "valid": evaluation.valid,
                "reason": str(evaluation.invalid or ""),
            },
        )
        return None

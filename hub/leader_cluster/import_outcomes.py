"""What members report about applying imports, written where kubectl shows it (kube store).

With the kube store every ResourceImport is a CR in the leader Namespace. For each member
report (ReportImportStatus) this writes:

* the CR's ``status.clusterStatuses``: one entry per reporting cluster with a ``Succeeded``
  condition (True, or False with the member's reason and message), as Antrea's
  ResourceImport status has it; a later success replaces a failure;
* for a failed AntreaClusterNetworkPolicy import, the Warning Event Antrea's member writes on
  the leader's ResourceImport: reason ``ACNPImportFailed``, source
  ``resourceimport-controller``, message ``ACNP Tier <tier> does not exist in the importing
  cluster <clusterID>`` (the member's words). A repeat of the same failure bumps the Event's
  count and lastTimestamp, as Kubernetes' recorder does; a success adds nothing, so the
  Event stops growing once the policy applies. ``kubectl describe resourceimport`` shows it.

Writes happen beside the gRPC call, never in it: the engine only records the report, and a
worker drains a keyed work queue, one status write per import however many reports came
meanwhile. Failing writes are logged and left to the next report (best effort, like Events).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hub.engine.reports import ImportStatusEntry, cluster_statuses
from kube.client import KubeClient, PatchType
from kube.errors import KubeError, NotFound
from kube.events import EventRecorder
from kube.queue_worker import QueueWorker
from kube.resources import Obj
from kube.workqueue import WorkQueue
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import RESOURCE_IMPORTS

log = logging.getLogger(__name__)

EVENT_SOURCE = "resourceimport-controller"
REASON_ACNP_IMPORT_FAILED = "ACNPImportFailed"


@dataclass(frozen=True)
class _Failure:
    cluster_id: str
    message: str


class ReportSource:
    """What the writer reads of the serving engine: imports and the reports about them."""

    def __init__(
        self,
        imports: Callable[[], Mapping[str, pb.ResourceImport]],
        reports: Callable[[], dict[str, dict[str, ImportStatusEntry]]],
    ) -> None:
        self.imports = imports
        self.reports = reports


def failure_message(cluster_id: str, message: str) -> str:
    """The member's words (they name the cluster); the cluster added when they do not."""
    text = message or "the ClusterNetworkPolicy could not be applied"
    return text if cluster_id in text else f"{text} (importing cluster {cluster_id})"


class ImportOutcomeWriter:
    def __init__(self, client: KubeClient, namespace: str, source: ReportSource) -> None:
        self._client = client
        self._namespace = namespace
        self._source = source
        self._recorder = EventRecorder(client, EVENT_SOURCE)
        self._pending: dict[str, list[_Failure]] = {}  # import name -> failures to record
        # Keyed: reports about one import coalesce into one write.
        self._work: QueueWorker[str] = QueueWorker(WorkQueue("hub-import-outcomes"), self._reconcile)

    def observe(self, import_name: str, cluster_id: str, entry: ImportStatusEntry) -> None:
        """A member reported about an import (called by the engine's report book; never blocks).
        After close it is dropped: nothing would write it."""
        if self._work.closed:
            return
        failures = self._pending.setdefault(import_name, [])
        imported = self._source.imports().get(import_name)
        if not entry.succeeded and imported is not None and imported.HasField("cluster_network_policy"):
            failures.append(_Failure(cluster_id, failure_message(cluster_id, entry.message)))
        self._work.add(import_name)

    async def settled(self) -> None:
        """Until every report observed so far was written (or failed to be)."""
        await self._work.settled()

    async def close(self) -> None:
        """Stop writing; reports observed afterwards are not written."""
        await self._work.close()
        self._pending.clear()

    async def _reconcile(self, name: str) -> None:
        """The worker's turn at one import (kube.queue_worker). A failed write is
        logged and not retried: the next report about the import writes its status again."""
        try:
            await self._write(name, self._pending.pop(name, []))
        except KubeError as exc:
            log.warning("import outcome not written", extra={"import": name, "error": str(exc)})
        except Exception:
            log.exception("import outcome not written", extra={"import": name})

    async def _write(self, name: str, failures: list[_Failure]) -> None:
        if name not in self._source.imports():
            return  # deleted meanwhile: its CR (and its status) went with it
        reports = self._source.reports().get(name, {})
        patch = {"status": {"clusterStatuses": cluster_statuses(reports)}}
        try:
            written: Obj = await self._client.patch_status(
                RESOURCE_IMPORTS, name, patch, self._namespace, patch_type=PatchType.MERGE
            )
        except NotFound:
            return  # the store has not written the CR yet, or deleted it: the next report tries again
        for failure in failures:
            await self._recorder.warning(written, REASON_ACNP_IMPORT_FAILED, failure.message, RESOURCE_IMPORTS)
            log.info(
                "import failure recorded",
                extra={"import": name, "clusterID": failure.cluster_id, "reason": REASON_ACNP_IMPORT_FAILED},
            )

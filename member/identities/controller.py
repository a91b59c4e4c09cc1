"""LabelIdentityController: the Pods and Namespaces of the cluster -> one LabelIdentity export
per distinct normalized label (Antrea's member LabelIdentityReconciler), for
``enableStretchedNetworkPolicy``.

Two informers (every Pod, every Namespace) feed an IdentityIndex; only labels that appeared
(first Pod) or went (last Pod) are touched, so 10,000 Pods of 500 label sets make 500
exports, and a Pod that comes or goes beside others of its labels makes none. The hub
dedupes the label across clusters, gives it an ID and imports a LabelIdentity to every
member.

Churn is debounced twice: changes are gathered for ``debounce`` seconds before they reach
the session, and a label whose last Pod went is withdrawn only once it has had no Pod for
``withdraw_after`` seconds. Both are one key of a work queue: a change adds it after the
debounce (changes meanwhile join the same pass), and a pass that leaves withdrawals waiting
looks again when the next one is due. A Deployment replacing its Pods, or a label flipped and flipped
back, therefore neither withdraws nor re-exports the identity, and the hub keeps its ID
(an identity withdrawn everywhere may come back with another one).

Its sink is the hub session, given at construction: ``start()`` (informers synced, index
built) hands it every identity before the session's first sync bracket, so a restarted member
does not churn (the same as the other exporters).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge

from kube.client import KubeClient, WatchEvent
from kube.informer import Informer
from kube.manager import Watches
from kube.metrics import once_per_registry
from kube.queue_worker import QueueWorker
from kube.resources import NAMESPACES, PODS, name_of
from kube.workqueue import WorkQueue
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient.sink import ExportSink
from member.identities.index import IdentityIndex, pod_key

log = logging.getLogger(__name__)

# Seconds to gather Pod churn before it reaches the hub session.
DEFAULT_DEBOUNCE = 0.1
# Seconds a label must stay without Pods before its identity is withdrawn.
DEFAULT_WITHDRAW_AFTER = 3.0
# The work queue's one key: hand the session what changed, withdraw what is due.
_FLUSH = "flush"


class _Metrics:
    """On the member's registry, created once per registry (a member joins again after a leave)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        # registry None: kept, not registered (a controller built outside a member).
        self.exported = Gauge(
            "mchub_member_label_identities", "Label identities this member exports.", registry=registry
        )
        self.changes = Counter(
            "mchub_member_label_identity_changes",
            "Label identity exports handed to the hub session, by operation.",
            ["operation"],
            registry=registry,
        )

    @classmethod
    def for_registry(cls, registry: CollectorRegistry | None) -> _Metrics:
        return cls(None) if registry is None else once_per_registry(cls, registry)


def label_identity_export(cluster_id: str, label: str) -> pb.ResourceExport:
    """The ResourceExport of one label identity, as Antrea's member writes it."""
    return pb.ResourceExport(
        export_name=names.label_identity_export_name(cluster_id, label),
        cluster_id=cluster_id,
        label_identity=pb.LabelIdentityExport(normalized_label=label),
    )


class LabelIdentityController:
    def __init__(
        self,
        client: KubeClient,
        cluster_id: str,
        sink: ExportSink,
        *,
        debounce: float = DEFAULT_DEBOUNCE,
        withdraw_after: float = DEFAULT_WITHDRAW_AFTER,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] | None = None,
        sync_timeout: float | None = None,
    ) -> None:
        """``sink``: the hub session. ``debounce``, ``withdraw_after``: seconds (see the module
        doc). ``sync_timeout``: seconds start() waits for the informers' first lists."""
        if debounce < 0 or withdraw_after < 0:
            raise ValueError("debounce and withdraw_after must not be negative")
        self._client = client
        self._cluster_id = cluster_id
        self._sink = sink
        self._sync_timeout = sync_timeout
        self._debounce = debounce
        self._withdraw_after = withdraw_after
        self._clock = clock
        self._metrics = _Metrics.for_registry(registry)
        self.index = IdentityIndex()
        self._watches = Watches()
        self._exported: set[str] = set()  # labels the session holds
        self._dirty: set[str] = set()  # labels whose count crossed zero since the last flush
        self._idle_since: dict[str, float] = {}  # exported labels without Pods, since when
        self._queue: WorkQueue[str] = WorkQueue(f"label-identities-{cluster_id}")
        self._worker: QueueWorker[str] = QueueWorker(self._queue, self._reconcile)
        # Exports handed to the session after start (the benchmark counts them).
        self.sets = 0

    # ---- what the member and tests look at -------------------------------------

    @property
    def exported(self) -> frozenset[str]:
        """The labels whose identities the session holds now."""
        return frozenset(self._exported)

    def export_name(self, label: str) -> str:
        return names.label_identity_export_name(self._cluster_id, label)

    # ---- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Watch every Pod and Namespace; once both are listed and indexed, hand the sink every
        identity they make and follow their changes."""
        namespaces = Informer(self._client, NAMESPACES, handler=self._on_namespace)
        pods = Informer(self._client, PODS, handler=self._on_pod)
        self._watches = Watches(namespaces, pods, sync_timeout=self._sync_timeout)
        await self._watches.start()
        for export in self.desired_exports():
            self._sink.set_export(export)
        self._worker.start()
        log.info("label identities indexed", extra={"clusterID": self._cluster_id, "identities": len(self.index)})

    def desired_exports(self) -> list[pb.ResourceExport]:
        """Every identity the Pods make now (what start() hands the sink)."""
        self._exported = self.index.labels()
        self._dirty.clear()
        self._idle_since.clear()
        self._metrics.exported.set(len(self._exported))
        return [label_identity_export(self._cluster_id, label) for label in sorted(self._exported)]

    async def stop(self) -> None:
        """Stop watching; what was exported stays exported (a stop is not a leave)."""
        await self._worker.close()
        await self._watches.stop()

    async def settled(self) -> None:
        """Until every change seen so far reached the session (withdrawals waiting out their
        delay included)."""
        await self._queue.wait_idle()

    # ---- events ----------------------------------------------------------------

    async def _on_namespace(self, event: WatchEvent) -> None:
        if event.type == "DELETED":
            self._touch(self.index.remove_namespace(name_of(event.object)))
        else:
            self._touch(self.index.set_namespace(event.object))

    async def _on_pod(self, event: WatchEvent) -> None:
        if event.type == "DELETED":
            self._touch(self.index.remove_pod(pod_key(event.object)))
        else:
            self._touch(self.index.set_pod(event.object))

    def _touch(self, labels: set[str]) -> None:
        if labels:
            self._dirty |= labels
            self._queue.add_after(_FLUSH, self._debounce)  # churn arriving meanwhile joins this pass

    # ---- handing changes to the session ---------------------------------------

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    async def _reconcile(self, key: str) -> float | None:
        return self._flush(self._sink)

    def _flush(self, sink: ExportSink) -> float | None:
        """Export what appeared, withdraw what stayed gone long enough; the seconds until the
        next withdrawal is due (None: none waiting)."""
        now = self._now()
        dirty, self._dirty = self._dirty, set()
        for label in sorted(dirty):
            if self.index.count(label) > 0:
                self._idle_since.pop(label, None)
                if label not in self._exported:
                    sink.set_export(label_identity_export(self._cluster_id, label))
                    self._exported.add(label)
                    self.sets += 1
                    self._metrics.changes.labels("set").inc()
            elif label in self._exported:
                self._idle_since.setdefault(label, now)
        for label, since in sorted(self._idle_since.items()):
            if now - since >= self._withdraw_after:
                del self._idle_since[label]
                sink.remove_export(self.export_name(label))
                self._exported.discard(label)
                self._metrics.changes.labels("remove").inc()
        self._metrics.exported.set(len(self._exported))
        if not self._idle_since:
            return None
        return min(self._idle_since.values()) + self._withdraw_after - now

"""ResourceExports a person writes into the leader Namespace: the user guide's admin exports.

The guide's "ClusterNetworkPolicy Replication": a ClusterSet admin runs ``kubectl apply`` of a
ResourceExport of kind AntreaClusterNetworkPolicy in the leader Namespace, and every member
gets the policy. This watches ResourceExports there (the kube store's Namespace, or the
mirror's, hub.mirror) and tells the hub's own writes from a person's by their digest
(hub.store.kube_authorship). What a person created or changed:

- **AntreaClusterNetworkPolicy**: an admin export (hub.merge.ownership), upserted through the
  engine like the REST facade's POST: merged, imported to every member as
  ``<name>-antreaclusternetworkpolicy``, and the CR rewritten in the hub's shape with its
  status (Succeeded, or Failure with the reason). One the hub refuses (an invalid policy, a
  clusterID naming a member) keeps its body and gets ``Failure`` with the refusal; the policy
  in force, if any, stays. Deleting the CR withdraws the policy from every member.
- **any other kind** (Service, Endpoints, ClusterInfo, LabelIdentity): members export those
  through the hub's gRPC API, under names derived from their cluster ID; one created here is
  never imported. Its status says so (``Failure``, reason ``ExportThroughHub``).
- a member's export the hub wrote and a person changed: the mirror puts it back
  (hub.mirror); with the kube store it stays until the hub writes it again, and an Event says so.

Who may do any of this is the leader cluster's RBAC, as in Antrea: the member Role is read-only.

The watch's events go through kube's keyed work queue: each CR's latest state only (a CR
changed many times while waiting is decided on once), one CR never decided on by two workers at
once, and a write the store or the API server could not make is tried again after a delay that
doubles for that CR alone while the others go on. `claimed` names the policies being taken in or
withdrawn (waiting out a retry too), which the mirror leaves alone meanwhile. After `close`
nothing is decided on or written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hub import COMPONENT
from hub.auth.identity import ADMIN
from hub.errors import ClusterSetEnded, Forbidden, HubError, InvalidRequest, quote
from hub.merge.ownership import ADMIN_OWNER
from hub.store.base import StoreError
from hub.store.kube_authorship import Authorship, authorship, spec_kind
from kube.backoff import Backoff
from kube.client import KubeClient, PatchType, WatchEvent
from kube.conditions import format_time
from kube.errors import KubeError, NotFound, TemporaryError
from kube.events import EventRecorder
from kube.informer import Informer
from kube.queue_worker import QueueWorker
from kube.resources import Obj, name_of
from kube.waiting import cancel_and_wait
from kube.workqueue import WorkQueue
from mcapi import names
from mcapi.convert import ConversionError, resource_export_from_cr
from mcapi.crds.exchange import RESOURCE_EXPORT_FAILURE
from mcapi.resources import RESOURCE_EXPORTS

if TYPE_CHECKING:
    from hub.engine import Engine

log = logging.getLogger(__name__)

REASON_EXPORT_THROUGH_HUB = "ExportThroughHub"
REASON_INVALID = "InvalidExport"
REASON_FORBIDDEN = "Forbidden"
REASON_CLUSTERSET_DELETED = "ClusterSetDeleted"
REASON_REFUSED = "Refused"
REASON_CHANGED_OUTSIDE_HUB = "ChangedOutsideHub"
# A store that failed (the API server restarting) is tried again after this long, doubling to the cap.
_RETRY = Backoff(initial=0.5, maximum=10.0, jitter=0.0)
# Decisions on different CRs overlap (status writes, Events); the engine serialises its own writes.
_WORKERS = 4


def _through_hub(kind: str) -> str:
    return (
        f"a {kind} ResourceExport is written by the hub for the member cluster that exports through it "
        "(gRPC); one created in the leader Namespace is never imported. Export from the member cluster "
        "(a ServiceExport), or export an AntreaClusterNetworkPolicy here"
    )


def _reason_of(refusal: HubError) -> str:
    if isinstance(refusal, ClusterSetEnded):
        return REASON_CLUSTERSET_DELETED
    if isinstance(refusal, InvalidRequest):
        return REASON_INVALID
    if isinstance(refusal, Forbidden):
        return REASON_FORBIDDEN
    return REASON_REFUSED


def failure_status(reason: str, message: str, now: datetime) -> dict[str, Any]:
    """A ResourceExport's status as Antrea writes a failed one: one Failure condition."""
    condition = {
        "type": RESOURCE_EXPORT_FAILURE,
        "status": "True",
        "lastTransitionTime": format_time(now),
        "reason": reason,
        "message": message,
    }
    return {"conditions": [condition]}


def _same_conditions(current: Obj, wanted: dict[str, Any]) -> bool:
    def essence(status: Any) -> list[tuple[str, str, str, str]]:
        conditions = (status or {}).get("conditions") or [] if isinstance(status, dict) else []
        return [(c.get("type"), c.get("status"), c.get("reason", ""), c.get("message", "")) for c in conditions]

    return essence(current.get("status")) == essence(wanted)


class KubectlExports:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        engine: Callable[[], Engine],
        *,
        mirrored: bool,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """``mirrored``: a mirror (hub.mirror) keeps the CRs and puts back what a person
        changed; without it (kube store) a changed member export only gets an Event."""
        self._client = client
        self._namespace = namespace
        self._engine = engine
        self._mirrored = mirrored
        self._clock = clock
        self._recorder = EventRecorder(client, COMPONENT)
        # The latest event of each CR waiting for a decision (or being decided on): the queue
        # holds names only, so however many events came, the worker acts on the last one.
        self._latest: dict[str, WatchEvent] = {}
        self._work: QueueWorker[str] = QueueWorker(
            WorkQueue("hub-kubectl-exports", backoff=_RETRY), self._reconcile, workers=_WORKERS
        )
        # (uid, generation) last decided on, by name: status writes and repeats change nothing.
        self._handled: dict[str, tuple[str, int]] = {}
        self.claimed: set[str] = set()

    # ---- intake --------------------------------------------------------------

    async def on_event(self, event: WatchEvent) -> None:
        """An informer handler: note what needs a decision (never waits on the hub); after close,
        nothing."""
        if self._work.closed:
            return
        obj = event.object
        name = name_of(obj)
        held = False
        if event.type == "DELETED":
            held = self._holds_policy(name)
            if not held and name not in self._latest:
                self._handled.pop(name, None)
                return  # the hub deleted it, or a member's export (the mirror puts those back)
            # else a policy, or a CR still waiting (or being taken in): its deletion is what counts now
        elif event.type == "BOOKMARK" or authorship(obj) is Authorship.HUB:
            return
        if spec_kind(obj) == names.KIND_ACNP or held:
            self.claimed.add(name)
        self._latest[name] = event
        self._work.add(name)

    async def settled(self) -> None:
        """Until every event noted so far was decided on, retries included (tests)."""
        await self._work.settled()

    async def close(self) -> None:
        """Stop deciding: queued CRs and pending retries are dropped, later events ignored."""
        await self._work.close()
        self._latest.clear()
        self.claimed.clear()

    async def _reconcile(self, name: str) -> None:
        """A worker's turn at one CR: decide on its latest event. A store or API failure is
        raised as temporary, so the queue tries this CR again with its own backoff."""
        event = self._latest.get(name)
        if event is None:
            return  # decided on since this retry was scheduled
        try:
            await self._decide(name, event)
        except (StoreError, KubeError) as exc:
            delay = exc.delay if isinstance(exc, TemporaryError) else None  # the server's Retry-After
            raise TemporaryError(f"kubectl export {quote(name)}: {exc}", delay=delay) from exc
        except Exception:
            log.exception("kubectl export not decided", extra={"object": name})
        if self._latest.get(name) is event:  # nothing newer came meanwhile
            del self._latest[name]
            self.claimed.discard(name)

    # ---- decisions -----------------------------------------------------------

    async def _decide(self, name: str, event: WatchEvent) -> None:
        obj = event.object
        if event.type == "DELETED":
            self._handled.pop(name, None)
            await self._withdraw(name)
            return
        meta = obj.get("metadata") or {}
        seen = (str(meta.get("uid", "")), int(meta.get("generation") or 0))
        if self._handled.get(name) == seen:
            return  # a status write (ours) or a repeat: the content was decided on
        kind = spec_kind(obj)
        if kind == names.KIND_ACNP:
            await self._take_in(name, obj)
        elif authorship(obj) is Authorship.PERSON:
            await self._refuse(obj, REASON_EXPORT_THROUGH_HUB, _through_hub(kind or "kind-less"))
        elif not self._mirrored:
            message = (
                f"this {kind} ResourceExport is the hub's record of a member's export; a change made with the "
                "Kubernetes API is not the member's and the hub does not read it (it writes the record again "
                "when the member's export changes)"
            )
            await self._recorder.warning(obj, REASON_CHANGED_OUTSIDE_HUB, message, RESOURCE_EXPORTS)
        self._handled[name] = seen

    async def _take_in(self, name: str, obj: Obj) -> None:
        try:
            export = resource_export_from_cr(obj)
        except ConversionError as exc:
            await self._refuse(obj, REASON_INVALID, str(exc))
            return
        export.ClearField("status")
        export.ClearField("create_time")
        if not export.name:
            export.name = name
        try:
            answer = await self._engine().upsert(ADMIN, export)
        except HubError as refusal:
            log.warning(
                "admin export from the leader Namespace refused", extra={"object": quote(name), "error": str(refusal)}
            )
            await self._refuse(obj, _reason_of(refusal), str(refusal))
            return
        log.info(
            "admin export taken in from the leader Namespace",
            extra={"object": quote(name), "revision": answer.revision, "verdict": answer.status.verdict},
        )

    def _holds_policy(self, name: str) -> bool:
        """The hub holds an admin export (a policy) of this name (read from the index's facets)."""
        exports = self._engine().index.exports
        return name in exports and exports.facet(name)[1] == ADMIN_OWNER

    async def _withdraw(self, name: str) -> None:
        if not self._holds_policy(name):
            return
        answer = await self._engine().delete(ADMIN, name)
        log.info(
            "admin export withdrawn: its ResourceExport was deleted",
            extra={"object": quote(name), "revision": answer.revision},
        )

    async def _refuse(self, obj: Obj, reason: str, message: str) -> None:
        status = failure_status(reason, message, self._clock())
        if _same_conditions(obj, status):
            return
        name = name_of(obj)
        try:
            written = await self._client.patch_status(
                RESOURCE_EXPORTS, name, {"status": status}, self._namespace, patch_type=PatchType.MERGE
            )
        except NotFound:
            return  # deleted meanwhile
        await self._recorder.warning(written, reason, message, RESOURCE_EXPORTS)
        log.info("kubectl export refused", extra={"object": quote(name), "reason": reason})


class LeaderExportsWatch:
    """With the kube store: the leading replica's watch of its Namespace's ResourceExports,
    feeding a KubectlExports (the hub's own writes pass by, recognised by their digest)."""

    def __init__(self, client: KubeClient, namespace: str, engine: Callable[[], Engine]) -> None:
        self.intake = KubectlExports(client, namespace, engine, mirrored=False)
        self._informer = Informer(client, RESOURCE_EXPORTS, namespace=namespace, handler=self.intake.on_event)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        # The CRD removed, access refused: the hub keeps serving, says so and watches again.
        self._task = asyncio.create_task(self._informer.run_forever(), name="hub-kubectl-exports-watch")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self.intake.close()

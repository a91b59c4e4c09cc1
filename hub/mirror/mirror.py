"""The mirror: the SQLite hub's state, written one way into CRs of a leader cluster's Namespace.

SQLite stays the source of truth; the leader cluster shows it to kubectl as Antrea's leader
would (ResourceExports, ResourceImports, MemberClusterAnnounces). The mirror is a
reconciler, not a log shipper:

- **what should be** is the hub's index at the moment a pass runs; **what is** comes from
  list+watch of the three kinds (no GET per object). A pass takes every name the hub's
  commits touched since the last one (hub.mirror.feed) and writes only the CRs that differ:
  a merge patch (one request; a ResourceExport's status is a second), a create, a delete.
- **batched and revision-ordered**: a pass starts a moment after the first change it serves,
  so a burst of commits costs one write per object at its newest state; writes go out oldest
  revision first, a few at a time, under the client's QPS limit; the revision a pass
  brought the leader to is the gauge ``mchub_mirror_revision``.
- **resumable**: on start every object is compared, and only those that differ are written.
- **a leader cluster that is down never blocks the hub**: commits only note names; a pass
  that cannot reach the API server stops at the first failure, keeps what it did not write,
  and tries again with capped backoff while the hub keeps serving members.
- **a person's change is put back**: a mirrored CR whose content no longer matches its digest
  (hub.mirror.shapes), or one deleted by someone else, is written again with an Event saying
  so. Two exceptions, which are the interface the user guide describes: AntreaClusterNetworkPolicy
  ResourceExports (hub.leader_cluster.kubectl_exports takes them in, or withdraws them when deleted), and CRs
  a person created (never mirrored, so never deleted by the mirror).

A ResourceExport deleted while no hub runs cannot be told from one not mirrored yet: the
mirror writes it again when the hub starts.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from hub import COMPONENT
from hub.mirror.feed import ChangeFeed, Kind, Pending
from hub.mirror.shapes import (
    RESOURCES,
    Desired,
    desired_export,
    desired_import,
    desired_member,
    is_managed,
    is_ours,
    main_in_sync,
    replacing_patch,
    status_in_sync,
)
from hub.store.kube_authorship import Authorship, authorship, cr_digest, spec_kind
from hub.store.kube_codec import InvalidRecord
from kube.backoff import Backoff
from kube.client import KubeClient, PatchType, WatchEvent
from kube.conditions import format_time
from kube.errors import AlreadyExists, KubeError, NotFound
from kube.events import EventRecorder
from kube.informer import Handler, Informer
from kube.resources import Obj, name_of
from kube.waiting import cancel_and_wait
from mcapi import names

if TYPE_CHECKING:
    from hub.engine import Engine
    from hub.leader_cluster.kubectl_exports import KubectlExports

log = logging.getLogger(__name__)

REASON_RESTORED = "RestoredByHub"
_ANNOUNCE_PREFIX = names.member_announce_name("")
# Informers of a leader cluster that comes back are not kept waiting long.
_INFORMER_BACKOFF = Backoff(initial=0.2, maximum=5.0)
_PASS_BACKOFF = Backoff(initial=0.2, maximum=5.0)


class MirrorMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.revision = Gauge(
            "mchub_mirror_revision", "Hub revision the leader cluster's CRs were brought to", registry=registry
        )
        self.pending = Gauge(
            "mchub_mirror_pending_objects", "Objects the mirror has still to compare", registry=registry
        )
        self.writes = Counter(
            "mchub_mirror_writes_total", "Writes the mirror made, by kind and verb", ["kind", "verb"], registry=registry
        )
        self.restored = Counter(
            "mchub_mirror_restored_total",
            "Mirrored CRs a person changed or deleted, put back",
            ["kind"],
            registry=registry,
        )


class LeaderMirror:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        engine: Callable[[], Engine],
        feed: ChangeFeed,
        *,
        intake: KubectlExports | None = None,
        concurrency: int = 8,
        batch_delay: float = 0.05,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        on_import_created: Callable[[str], None] = lambda _: None,
    ) -> None:
        """`on_import_created(name)`: a ResourceImport CR was created (again); members' reports
        that came before it existed are written into it then (hub.leader_cluster.import_outcomes)."""
        self.client = client
        self._on_import_created = on_import_created
        self.namespace = namespace
        self._engine = engine
        self._feed = feed
        self._intake = intake
        self._concurrency = concurrency
        self._batch_delay = batch_delay
        self._clock = clock
        self._recorder = EventRecorder(client, COMPONENT)
        self.metrics = MirrorMetrics(registry)
        self.informers: dict[Kind, Informer] = {}
        for kind, resource in RESOURCES.items():
            handlers: list[Handler] = []
            if kind is Kind.EXPORT and intake is not None:
                handlers.append(intake.on_event)  # first: it claims the policies it takes in
            handlers.append(self._handler(kind))
            informer = Informer(client, resource, namespace=namespace, backoff=_INFORMER_BACKOFF)
            for handler in handlers:
                informer.add_handler(handler)
            self.informers[kind] = informer
        # CRs the mirror deleted and has not seen go yet: their DELETED event is no person's.
        self._deleting: set[tuple[Kind, str]] = set()
        # Why a CR is being written again: a person "changed" or "deleted" it.
        self._restoring: dict[tuple[Kind, str], str] = {}
        self.revision = 0
        self.passes = 0
        self._idle = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # ---- lifecycle -----------------------------------------------------------

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(informer.run_forever(), name=f"hub-mirror-{kind.name.lower()}s")
            for kind, informer in self.informers.items()
        ]
        self._tasks.append(asyncio.create_task(self._run(), name="hub-mirror"))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)

    async def caught_up(self) -> None:
        """Until the leader's CRs say what the hub holds now (the tests wait on it)."""
        while True:
            await self._idle.wait()
            if not len(self._feed.pending) and not self._feed.changed.is_set():
                return
            await asyncio.sleep(0)  # another pass is due: wait for it

    # ---- what happens in the leader ------------------------------------------

    def _handler(self, kind: Kind) -> Handler:
        async def observed(event: WatchEvent) -> None:
            self._observed(kind, event)

        return observed

    def _observed(self, kind: Kind, event: WatchEvent) -> None:
        """A CR changed in the leader: one the mirror did not write is compared again."""
        if event.type == "BOOKMARK":
            return
        obj = event.object
        key = (kind, name_of(obj))
        policy = kind is Kind.EXPORT and spec_kind(obj) == names.KIND_ACNP
        if event.type == "DELETED":
            if key in self._deleting:
                self._deleting.discard(key)
                return
            if not is_managed(obj) or policy:
                return  # a person's CR went; a policy's deletion is hub.leader_cluster.kubectl_exports'
            self._restoring[key] = "deleted"
        else:
            if is_ours(kind, obj) or policy or (kind is Kind.EXPORT and not is_managed(obj)):
                return
            self._restoring[key] = "changed"
        self._feed.note_name(*key)

    # ---- passes --------------------------------------------------------------

    async def _run(self) -> None:
        for informer in self.informers.values():
            await informer.synced.wait()
        self._sweep_stale()
        failures = 0
        while True:
            self.metrics.pending.set(len(self._feed.pending))
            if not self._feed.changed.is_set():
                self._idle.set()
            await self._feed.changed.wait()
            self._idle.clear()
            await asyncio.sleep(self._batch_delay)
            through, pending = self._feed.take()
            if await self._pass(pending):
                failures = 0
                self.revision = max(self.revision, through)
                self.metrics.revision.set(self.revision)
                continue
            delay = _PASS_BACKOFF.delay(failures)
            failures += 1
            log.warning(
                "mirror pass incomplete; retrying",
                extra={"pending": len(self._feed.pending), "delaySeconds": round(delay, 3)},
            )
            await asyncio.sleep(delay)
            self._feed.changed.set()

    def _sweep_stale(self) -> None:
        """CRs the mirror wrote that the hub no longer holds (it changed while the mirror was off)."""
        for kind, informer in self.informers.items():
            for obj in informer.list(self.namespace):
                name = name_of(obj)
                if is_managed(obj) and not self._holds(kind, name):
                    self._feed.give_back(kind, name, 0)
        self._feed.changed.set()

    async def _pass(self, pending: Pending) -> bool:
        """Write what differs, oldest revision first; False if something is left for later."""
        self.passes += 1
        queue = collections.deque(pending.in_order())
        left: list[tuple[int, Kind, str]] = []
        broken = asyncio.Event()

        async def worker() -> None:
            while queue and not broken.is_set():
                revision, kind, name = queue.popleft()
                try:
                    done = await self._mirror_one(kind, name)
                except KubeError as exc:
                    log.info("mirror write failed", extra={"object": name, "error": str(exc)})
                    broken.set()  # the API server is likely down: stop, keep the rest for later
                    done = False
                except Exception:
                    log.exception("mirror write failed", extra={"object": name})
                    done = False
                if not done:
                    left.append((revision, kind, name))

        await asyncio.gather(*(worker() for _ in range(min(self._concurrency, max(1, len(queue))))))
        for revision, kind, name in [*left, *queue]:
            self._feed.give_back(kind, name, revision)
        return not left and not queue

    def _holds(self, kind: Kind, name: str) -> bool:
        index = self._engine().index
        if kind is Kind.EXPORT:
            return name in index.exports
        if kind is Kind.IMPORT:
            return name in index.imports
        return name.startswith(_ANNOUNCE_PREFIX) and name.removeprefix(_ANNOUNCE_PREFIX) in index.members

    def _desired(self, kind: Kind, name: str) -> Desired | None:
        index = self._engine().index
        try:
            if kind is Kind.EXPORT:
                export = index.exports.get(name)
                return desired_export(export, self.namespace) if export is not None else None
            if kind is Kind.IMPORT:
                imp = index.imports.get(name)
                return desired_import(imp, self.namespace) if imp is not None else None
            member = (
                index.members.get(name.removeprefix(_ANNOUNCE_PREFIX)) if name.startswith(_ANNOUNCE_PREFIX) else None
            )
            return desired_member(member, self.namespace) if member is not None else None
        except InvalidRecord as exc:
            log.error("mirror cannot write a record", extra={"object": name, "error": str(exc)})
            return None

    async def _mirror_one(self, kind: Kind, name: str) -> bool:
        """Make one CR say what the hub holds; False when it must wait (a policy being taken in)."""
        if kind is Kind.EXPORT and self._intake is not None and name in self._intake.claimed:
            return False
        key = (kind, name)
        desired = self._desired(kind, name)
        actual = self.informers[kind].get(name, self.namespace)
        resource = RESOURCES[kind]
        if desired is None:
            self._restoring.pop(key, None)
            if actual is not None and is_managed(actual):
                self._deleting.add(key)
                with contextlib.suppress(NotFound):
                    await self.client.delete(resource, name, self.namespace)
                self.metrics.writes.labels(kind.name, "delete").inc()
            return True
        if actual is not None and kind is Kind.EXPORT and not self._may_overwrite(actual, desired):
            return True  # a person's change of a policy: hub.leader_cluster.kubectl_exports decides
        written = False
        if actual is None:
            written = await self._create(kind, name, desired)
            if kind is Kind.IMPORT:
                self._on_import_created(name)
        else:
            if not main_in_sync(kind, actual, desired):
                try:
                    await self.client.patch(
                        resource, name, replacing_patch(actual, desired.obj), self.namespace, patch_type=PatchType.MERGE
                    )
                    self.metrics.writes.labels(kind.name, "patch").inc()
                except NotFound:
                    await self._create(kind, name, desired)
                written = True
            if not status_in_sync(actual, desired):
                await self._write_status(kind, name, desired)
                written = True
        why = self._restoring.pop(key, None)
        if why is not None and written:
            await self._say_restored(kind, name, why)
        return True

    def _may_overwrite(self, actual: Obj, desired: Desired) -> bool:
        """A policy ResourceExport a person changed is the intake's until the hub holds what it says."""
        if spec_kind(actual) != names.KIND_ACNP or authorship(actual) is Authorship.HUB:
            return True
        taken = copy.deepcopy(actual)
        spec = taken.setdefault("spec", {})
        spec["clusterID"] = spec.get("clusterID") or desired.obj["spec"].get("clusterID", "")
        spec["name"] = spec.get("name") or name_of(actual)
        return cr_digest(taken) == cr_digest(desired.obj)

    async def _create(self, kind: Kind, name: str, desired: Desired) -> bool:
        resource = RESOURCES[kind]
        try:
            await self.client.create(resource, desired.obj, self.namespace)
            self.metrics.writes.labels(kind.name, "create").inc()
        except AlreadyExists:  # the cache had not seen it yet
            await self.client.patch(resource, name, desired.obj, self.namespace, patch_type=PatchType.MERGE)
            self.metrics.writes.labels(kind.name, "patch").inc()
        if desired.status is not None:
            await self._write_status(kind, name, desired)
        return True

    async def _write_status(self, kind: Kind, name: str, desired: Desired) -> None:
        assert desired.status is not None
        now = format_time(self._clock())
        status: dict[str, Any] = {
            **desired.status,
            "conditions": [{**c, "lastTransitionTime": now} for c in desired.status.get("conditions") or []],
        }
        await self.client.patch_status(
            RESOURCES[kind], name, {"status": status}, self.namespace, patch_type=PatchType.MERGE
        )
        self.metrics.writes.labels(kind.name, "status").inc()

    async def _say_restored(self, kind: Kind, name: str, why: str) -> None:
        resource = RESOURCES[kind]
        self.metrics.restored.labels(kind.name).inc()
        message = (
            f"this {resource.kind} mirrors the hub's state, which its SQLite store keeps: it was {why} with "
            "the Kubernetes API and the hub put it back. Change it through the hub (its members, REST, mcctl); "
            "AntreaClusterNetworkPolicy ResourceExports are the exception: apply or delete those here."
        )
        log.warning("mirror put back a CR a person changed", extra={"kind": resource.kind, "object": name, "why": why})
        try:
            current = await self.client.get(resource, name, self.namespace)
        except KubeError:
            return
        await self._recorder.warning(current, REASON_RESTORED, message, resource)

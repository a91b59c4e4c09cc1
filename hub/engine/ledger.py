"""Commit and publish: what the hub has committed, and the one way it changes.

The ledger holds the index (the store's state in memory), the revision, the epoch, and the
buses watchers and Export streams listen on. A write is committed to the store, then the index
and the revision follow it, then, once the store says it is durable, what it changed is
published: its import changes to every watcher, the verdicts it changed to their owners. A
verdict or an import is therefore never sent for a write that a crash could lose, and watchers
see revisions in commit order. One writer at a time: the deciding parts hold `lock` from what
they read to what they commit.

A store that stages (sqlite: Store.stages) commits at once and makes commits durable in groups:
`write` then returns as soon as the write is committed and in the index, and the caller gives
the lock up before it waits for `published`, so the next write is decided and committed while
this one syncs, and one fsync makes many writes durable. Until then the index holds a write
nobody has been told of: what reads the index to tell someone (a watch's snapshot) waits for
`published` of the revision it read.

A replica that follows the leader writes nothing: it moves the ledger to the leader's
history instead (`rebase`, `advance`), and publishes the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hub.engine.index import Index
from hub.engine.reports import ImportStatusBook
from hub.errors import bounded
from hub.merge.ownership import owner_of
from hub.store.base import ImportChange, MemberRecord, Snapshot, Store, WriteBatch
from hub.watch.batches import ImportBatch
from hub.watch.bus import Bus
from mcapi import trace
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)

T = TypeVar("T")


async def _to_the_end(work: Coroutine[Any, Any, T]) -> T:
    """Run a commit to its end even if the caller is cancelled meanwhile.

    A batch handed to the store may become durable whatever its caller does
    (the sqlite writer finishes what it took). The index, the revision and the
    watchers must then follow it, and the engine lock (held by the caller)
    must stay taken until they did; only then does the cancellation go on.
    """
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = cancelled or not task.done()
        except Exception:  # read from the task below
            pass
    if cancelled:
        if not task.cancelled() and task.exception() is not None:
            log.error("hub commit failed after its caller went away", extra={"error": bounded(str(task.exception()))})
        raise asyncio.CancelledError
    return task.result()


@dataclass
class Advance:
    """One whole revision of the leader, as a follower learns it: its import changes, and the
    exports and members (puts, and deletes as None, by name) learned beside them for the REST views.
    """

    revision: int
    changes: list[ImportChange] = field(default_factory=list)
    exports: dict[str, pb.ResourceExport | None] = field(default_factory=dict)
    members: dict[str, MemberRecord | None] = field(default_factory=dict)


@dataclass(frozen=True)
class _Publication:
    """What a staged write publishes once durable."""

    revision: int
    # The store's watch revision once it was committed (Store.watch_revision).
    watch_revision: int
    batch: WriteBatch
    # The exports it puts as they were before it, those not `answered` (their owners hear of
    # verdicts that changed).
    previous: dict[str, pb.ResourceExport | None]
    answered: frozenset[str] | set[str]


class Ledger:
    """The engine's committed state. Its fields are read by the engine's parts (outside the
    engine, through Engine's read-only attributes) and changed only by the methods below."""

    def __init__(self, store: Store, watch_queue_limit: int, reports: ImportStatusBook) -> None:
        self.store = store
        self._reports = reports
        self.lock = asyncio.Lock()
        self.index = Index()
        self.revision = 0
        # The revision of a snapshot of the index (Store.watch_revision), kept with it.
        self.watch_revision = 0
        self.epoch = ""
        self.imports_bus: Bus[ImportBatch] = Bus(watch_queue_limit, lambda batch: len(batch.changes) or 1)
        # Topic: the owner key (a cluster ID, ADMIN_OWNER for the admin); items: unsolicited verdicts.
        self.verdicts_bus: Bus[pb.ExportResponse] = Bus(watch_queue_limit)
        # The watch revision (as watch_revision) of the last write published: every change up to
        # it was published, so a watcher may be told it holds it (bookmarks).
        self.published_revision = 0
        # Staged writes not durable yet, oldest first (a store that stages).
        self._unpublished: deque[_Publication] = deque()
        store.watch_durable(self._durable)

    async def load(self) -> None:
        """Open the store and hold what it holds."""
        snap = await self.store.open()
        self.index = Index.from_snapshot(snap)
        self.revision = self.watch_revision = self.published_revision = snap.revision
        self.epoch = snap.epoch
        log.info(
            "hub index loaded",
            extra={"epoch": self.epoch, "revision": self.revision, "exports": len(self.index.exports)},
        )

    def close(self) -> None:
        """End every watch and Export stream's subscription (shutdown, or this replica stepped down)."""
        self.imports_bus.close()
        self.verdicts_bus.close()

    # ---- the leader's writes -------------------------------------------------

    async def commit(self, batch: WriteBatch) -> int:
        """Commit a write nobody watches (an announce), durably; the revision it took."""
        return await self.commit_and_publish(batch)

    async def commit_and_publish(self, batch: WriteBatch, answered: frozenset[str] | set[str] = frozenset()) -> int:
        """Commit a write and publish what it changed, once durable; `answered`: exports whose
        verdict the caller is told in its answer (their owners are not told again)."""
        revision = await self.write(batch, answered)
        await self.published(revision)
        return revision

    async def write(self, batch: WriteBatch, answered: frozenset[str] | set[str] = frozenset()) -> int:
        """Commit a write (the caller holds `lock`) and have the index follow it; what it changed
        is published once it is durable. Returns its revision: tell no one of the write (answer,
        verdict) before `published(revision)` returned."""
        # Only the exports whose owners are not answered are told of a verdict that changed.
        exports = self.index.exports
        previous = {
            e.export_name: exports.get(e.export_name) for e in batch.put_exports if e.export_name not in answered
        }
        if not self.store.stages:
            revision = await _to_the_end(self._commit_now(batch))
            trace.mark_imports(trace.Hop.HUB_STAGED, batch.put_imports)
            self._publish(_Publication(revision, self.watch_revision, batch, previous, answered))
            return revision
        revision = self.store.stage(batch)
        self._follow(batch, revision)
        trace.mark_imports(trace.Hop.HUB_STAGED, batch.put_imports)
        self._unpublished.append(_Publication(revision, self.watch_revision, batch, previous, answered))
        return revision

    async def published(self, revision: int) -> None:
        """Until the write of `revision` (and every one before) is durable and published."""
        await self.store.synced(revision)
        self._durable(self.store.durable_revision)

    async def _commit_now(self, batch: WriteBatch) -> int:
        revision = await self.store.commit(batch)
        self._follow(batch, revision)
        return revision

    def _follow(self, batch: WriteBatch, revision: int) -> None:
        """The index and the revision follow a committed write."""
        self.index.apply(batch)
        self.revision, self.watch_revision = revision, self.store.watch_revision
        self._reports.forget(batch)

    def _durable(self, revision: int) -> None:
        """The store made every write up to `revision` durable: publish them, in order."""
        while self._unpublished and self._unpublished[0].revision <= revision:
            self._publish(self._unpublished.popleft())

    def _publish(self, write: _Publication) -> None:
        revision, batch = write.revision, write.batch
        changes = [ImportChange(revision, imp.import_name, imp) for imp in batch.put_imports]
        changes += [ImportChange(revision, name, None) for name in batch.delete_imports]
        if changes:
            trace.mark_imports(trace.Hop.HUB_DURABLE, batch.put_imports)
            self.imports_bus.publish(ImportBatch(revision, changes, self.epoch))
        exports = (e for e in batch.put_exports if e.export_name not in write.answered)
        self._announce_verdicts(exports, write.previous, revision)
        self.published_revision = max(self.published_revision, write.watch_revision)

    def _announce_verdicts(
        self,
        exports: Iterable[pb.ResourceExport],
        previous: dict[str, pb.ResourceExport | None],
        revision: int,
    ) -> None:
        """Tell owners whose verdict changed although they asked nothing."""
        for export in exports:
            before = previous.get(export.export_name)
            if before is None or before.status == export.status:
                continue
            self.verdicts_bus.publish(
                pb.ExportResponse(export_name=export.export_name, status=export.status, revision=revision),
                owner_of(export),
            )

    # ---- a follower's history ------------------------------------------------

    def rebase(self, snap: Snapshot) -> None:
        """From here on the ledger holds `snap` (its epoch at its revision); open watches resume."""
        self.index = Index.from_snapshot(snap)
        self.revision = self.watch_revision = self.published_revision = snap.revision
        self.epoch = snap.epoch
        # Watchers of the former history resume; a revision before the base answers with a snapshot.
        self.imports_bus.overflow_all()

    def advance(self, step: Advance) -> None:
        """The leader's revision `step.revision`, whole; one not newer than the ledger's brings
        exports and members only."""
        index = self.index
        revision, changes = step.revision, step.changes
        for name, export in step.exports.items():
            index.delete_export(name)
            if export is not None:
                index.put_export(export)
        for cluster_id, member in step.members.items():
            if member is None:
                index.members.pop(cluster_id, None)
            else:
                index.members[cluster_id] = member
        if revision <= self.revision:
            return
        for change in changes:
            if change.resource is None:
                index.imports.pop(change.import_name, None)
            else:
                index.imports[change.import_name] = change.resource
        self.revision = self.watch_revision = self.published_revision = revision
        if changes:
            self.imports_bus.publish(ImportBatch(revision, list(changes), self.epoch))

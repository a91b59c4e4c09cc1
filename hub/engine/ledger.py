"""Commit and publish: what the hub has committed, and the one way it changes.

The ledger holds the index (the store's state in memory), the revision, the epoch, and the
buses watchers and Export streams listen on. A write is committed to the store (which fsyncs
before `commit` returns), then the index and the revision follow it, then what it changed is
published: its import changes to every watcher, the verdicts it changed to their owners. A
verdict is therefore never sent for a write that a crash could lose, and watchers see
revisions in commit order. One writer at a time: the deciding parts hold `lock` from what
they read to what they commit.

A replica that follows the leader writes nothing: it moves the ledger to the leader's
history instead (`rebase`, `advance`), and publishes the same way.
"""

from __future__ import annotations

import asyncio
import logging
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


class Ledger:
    """The engine's committed state. Its fields are read by the engine's parts (outside the
    engine, through Engine's read-only attributes) and changed only by the methods below."""

    def __init__(self, store: Store, watch_queue_limit: int, reports: ImportStatusBook) -> None:
        self.store = store
        self._reports = reports
        self.lock = asyncio.Lock()
        self.index = Index()
        self.revision = 0
        # What watchers are told (snapshots, bookmarks): Store.watch_revision, kept with the index.
        self.watch_revision = 0
        self.epoch = ""
        self.imports_bus: Bus[ImportBatch] = Bus(watch_queue_limit, lambda batch: len(batch.changes) or 1)
        # Topic: the owner key (a cluster ID, ADMIN_OWNER for the admin); items: unsolicited verdicts.
        self.verdicts_bus: Bus[pb.ExportResponse] = Bus(watch_queue_limit)

    async def load(self) -> None:
        """Open the store and hold what it holds."""
        snap = await self.store.open()
        self.index = Index.from_snapshot(snap)
        self.revision = self.watch_revision = snap.revision
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
        """Commit a write nobody watches (an announce); the revision it took."""
        return await _to_the_end(self._commit_now(batch))

    async def commit_and_publish(self, batch: WriteBatch, answered: frozenset[str] | set[str] = frozenset()) -> int:
        """Commit a write, then publish what it changed; `answered`: exports whose verdict the
        caller is told in its answer (their owners are not told again)."""
        return await _to_the_end(self._commit_and_publish_now(batch, answered))

    async def _commit_now(self, batch: WriteBatch) -> int:
        revision = await self.store.commit(batch)
        self.index.apply(batch)
        self.revision, self.watch_revision = revision, self.store.watch_revision
        self._reports.forget(batch)
        return revision

    async def _commit_and_publish_now(self, batch: WriteBatch, answered: frozenset[str] | set[str]) -> int:
        previous = {e.export_name: self.index.exports.get(e.export_name) for e in batch.put_exports}
        revision = await self._commit_now(batch)
        changes = [ImportChange(revision, imp.import_name, imp) for imp in batch.put_imports]
        changes += [ImportChange(revision, name, None) for name in batch.delete_imports]
        if changes:
            self.imports_bus.publish(ImportBatch(revision, changes, self.epoch))
        self._announce_verdicts((e for e in batch.put_exports if e.export_name not in answered), previous, revision)
        return revision

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
        self.revision = self.watch_revision = snap.revision
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
        self.revision = self.watch_revision = revision
        if changes:
            self.imports_bus.publish(ImportBatch(revision, list(changes), self.epoch))

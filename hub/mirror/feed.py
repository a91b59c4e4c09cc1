"""What the mirror has still to write: the names the hub's commits touched, by kind.

`FeedingStore` wraps the hub's store (SQLite, the source of truth) and, once a batch is
durable, notes every name it put or deleted with the batch's revision. It never waits on the
mirror: noting is a dict update, so a leader cluster that is down never slows a commit. A name
changed by several commits before the mirror got to it is written once, at its newest state
(the mirror reads the hub's index, which the engine updates right after the commit returns).
At `open` every name the store holds is noted: the mirror's first pass compares them all with
the leader's CRs and writes only the ones that differ, so a restart rewrites nothing unchanged.

Memory is bounded by the number of objects, not by how long the mirror lags.
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from hub.store.base import ImportChange, Snapshot, Store, StoreCounts, WriteBatch
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb


class Kind(enum.IntEnum):
    """The mirrored kinds, in the order a pass writes them within one revision."""

    EXPORT = 0
    IMPORT = 1
    MEMBER = 2


@dataclass
class Pending:
    """Names to mirror by kind, each with the revision that last changed it."""

    names: dict[Kind, dict[str, int]] = field(default_factory=lambda: {k: {} for k in Kind})

    def note(self, kind: Kind, name: str, revision: int) -> None:
        known = self.names[kind]
        known[name] = max(revision, known.get(name, 0))

    def __len__(self) -> int:
        return sum(len(n) for n in self.names.values())

    def in_order(self) -> list[tuple[int, Kind, str]]:
        """(revision, kind, name), oldest revision first."""
        return sorted((revision, kind, name) for kind, known in self.names.items() for name, revision in known.items())


class ChangeFeed:
    def __init__(self) -> None:
        self.pending = Pending()
        # The newest revision noted (the store's, once opened).
        self.revision = 0
        self.changed = asyncio.Event()

    def note_batch(self, batch: WriteBatch, revision: int) -> None:
        p = self.pending
        for export in batch.put_exports:
            p.note(Kind.EXPORT, export.export_name, revision)
        for name in batch.delete_exports:
            p.note(Kind.EXPORT, name, revision)
        for imp in batch.put_imports:
            p.note(Kind.IMPORT, imp.import_name, revision)
        for name in batch.delete_imports:
            p.note(Kind.IMPORT, name, revision)
        for member in batch.put_members:
            p.note(Kind.MEMBER, names.member_announce_name(member.cluster_id), revision)
        for cluster_id in batch.delete_members:
            p.note(Kind.MEMBER, names.member_announce_name(cluster_id), revision)
        self.revision = max(self.revision, revision)
        self.changed.set()

    def note_all(self, snap: Snapshot) -> None:
        for name in snap.exports:
            self.pending.note(Kind.EXPORT, name, snap.revision)
        for name in snap.imports:
            self.pending.note(Kind.IMPORT, name, snap.revision)
        for cluster_id in snap.members:
            self.pending.note(Kind.MEMBER, names.member_announce_name(cluster_id), snap.revision)
        self.revision = max(self.revision, snap.revision)
        self.changed.set()

    def note_name(self, kind: Kind, name: str) -> None:
        """A CR of the leader changed under the mirror (a person): compare it again."""
        self.pending.note(kind, name, self.revision)
        self.changed.set()

    def take(self) -> tuple[int, Pending]:
        """Everything pending, and the revision it brings the leader to once written."""
        taken, self.pending = self.pending, Pending()
        self.changed.clear()
        return self.revision, taken

    def give_back(self, kind: Kind, name: str, revision: int) -> None:
        self.pending.note(kind, name, revision)


class FeedingStore(Store):
    """A store that tells a ChangeFeed what each durable commit changed (see the module doc)."""

    def __init__(self, inner: Store, feed: ChangeFeed) -> None:
        self.inner = inner
        self.feed = feed
        # Staged commits not durable yet, oldest first: noted once they are.
        self._staged: deque[tuple[int, WriteBatch]] = deque()
        inner.watch_durable(self._durable)

    @property
    def stages(self) -> bool:
        return self.inner.stages

    def stage(self, batch: WriteBatch) -> int:
        revision = self.inner.stage(batch)
        if not batch.is_empty():
            self._staged.append((revision, batch))
        return revision

    async def synced(self, revision: int) -> None:
        await self.inner.synced(revision)

    @property
    def durable_revision(self) -> int:
        return self.inner.durable_revision

    def watch_durable(self, listener: Callable[[int], None]) -> None:
        self.inner.watch_durable(listener)

    def counts(self) -> StoreCounts | None:
        return self.inner.counts()

    def _durable(self, revision: int) -> None:
        while self._staged and self._staged[0][0] <= revision:
            staged_revision, batch = self._staged.popleft()
            self.feed.note_batch(batch, staged_revision)

    @property
    def epoch(self) -> str:
        return self.inner.epoch

    @property
    def revision(self) -> int:
        return self.inner.revision

    @property
    def watch_revision(self) -> int:
        return self.inner.watch_revision

    @property
    def max_record_bytes(self) -> int | None:
        """The wrapped store's: the hub refuses what it cannot hold (hub.engine.fit)."""
        return self.inner.max_record_bytes

    def record_bytes(self, record: pb.ResourceExport | pb.ResourceImport) -> int:
        return self.inner.record_bytes(record)

    async def open(self) -> Snapshot:
        snap = await self.inner.open()
        self.feed.note_all(snap)
        return snap

    async def close(self) -> None:
        await self.inner.close()

    async def commit(self, batch: WriteBatch) -> int:
        if self.inner.stages:
            revision = self.stage(batch)
            await self.synced(revision)
            return revision
        revision = await self.inner.commit(batch)
        if not batch.is_empty():
            self.feed.note_batch(batch, revision)
        return revision

    async def snapshot(self) -> Snapshot:
        return await self.inner.snapshot()

    async def import_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        return await self.inner.import_changes_since(epoch, revision)

    async def compact(self, keep_after: int) -> None:
        await self.inner.compact(keep_after)

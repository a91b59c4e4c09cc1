"""Following a SQLite hub from another process: its data dir's change log, read-only.

The leader owns the data dir (its lock, its writer); a follower opens a second, query-only
connection to `hub.db` (WAL: readers never wait for the writer) and polls the change log. The
database keeps the epoch and the revision, so the follower serves the leader's own history:
a member resumes across the two with exactly the changes it missed. The leader commits before it
fsyncs (hub.store.sqlite_sync), so the follower fsyncs the log itself before it serves what it read.

Members and exports (only the REST views show them) are re-read after the revision moved,
at most every `refresh_interval` seconds and at most a twentieth of the time (a re-read of 100,000
exports takes a while): those views lag the leader by a few seconds, imports do not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

from hub.engine.ledger import Advance
from hub.replicas.follower import FollowStep, Rebase
from hub.store.base import EpochMismatch, ImportChange, MemberRecord, RevisionCompacted, RevisionInFuture, Snapshot
from hub.store.sqlite import DB_FILE
from hub.store.sqlite_codec import export_body
from hub.store.sqlite_reader import SnapshotReader
from hub.store.sqlite_sync import sync_log
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)


class SqliteFollowSource:
    def __init__(self, data_dir: Path, *, poll_interval: float = 0.02, refresh_interval: float = 2.0) -> None:
        self._path = data_dir / DB_FILE
        self._poll = poll_interval
        self._refresh = refresh_interval
        self._reader = SnapshotReader(str(self._path))
        # What the REST views were last given: exports as stored (serialized), members.
        self._bodies: dict[str, bytes] = {}
        self._members: dict[str, MemberRecord] = {}

    async def close(self) -> None:
        await self._reader.close()

    async def durable_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        """The data dir's change log after ``revision``: the leader's, as long as it keeps it."""
        return await self._reader.import_changes_since(epoch, revision)

    async def follow(self) -> AsyncIterator[FollowStep]:
        if not self._path.exists():
            raise FileNotFoundError(f"no hub database at {self._path} yet")
        await self._reader.open()  # the leader's database must exist: the follower retries until it does
        snap = await self._reader.snapshot()
        self._bodies, self._members = _stored_bodies(snap), snap.members
        yield Rebase(snap)
        epoch, revision = snap.epoch, snap.revision
        refreshed_at, refreshed_revision, refresh_took = time.monotonic(), revision, 0.0
        while True:
            try:
                current, changes = await self._reader.changes_and_revision(epoch, revision)
            except (EpochMismatch, RevisionCompacted, RevisionInFuture) as exc:
                # Another database under the same path, or we fell behind the leader's compaction.
                log.warning("hub follower lost the change log; taking a snapshot", extra={"error": str(exc)})
                snap = await self._reader.snapshot()
                self._bodies = _stored_bodies(snap)
                self._members = snap.members
                yield Rebase(snap)
                epoch, revision = snap.epoch, snap.revision
                continue
            if current > revision:
                # The leader tells nobody of a commit before it is durable; its log may hold one
                # that is not yet, so the follower makes what it read durable before serving it.
                await asyncio.to_thread(sync_log, str(self._path))
            by_revision: dict[int, list[ImportChange]] = {}
            for change in changes:
                by_revision.setdefault(change.revision, []).append(change)
            for rev, group in sorted(by_revision.items()):
                yield Advance(rev, group)
            if current > revision:
                if not by_revision or max(by_revision) < current:
                    yield Advance(current)  # revisions that changed no import (announces, verdicts)
                revision = current
            now = time.monotonic()
            if revision != refreshed_revision and now - refreshed_at >= max(self._refresh, 20 * refresh_took):
                yield await self._refresh_views(revision)
                refreshed_at, refreshed_revision = time.monotonic(), revision
                refresh_took = refreshed_at - now
            await asyncio.sleep(self._poll)

    async def _refresh_views(self, revision: int) -> Advance:
        bodies, members = await self._reader.export_bodies_and_members()
        step = Advance(revision)
        changed = [n for n, body in bodies.items() if self._bodies.get(n) != body]
        step.exports = {n: pb.ResourceExport.FromString(bodies[n]) for n in changed}
        step.exports.update({n: None for n in self._bodies.keys() - bodies.keys()})
        step.members = {c: m for c, m in members.items() if self._members.get(c) != m}
        step.members.update({c: None for c in self._members.keys() - members.keys()})
        self._bodies, self._members = bodies, members
        return step


def _stored_bodies(snap: Snapshot) -> dict[str, bytes]:
    """The snapshot's exports as their rows hold them, to compare with the bodies read later."""
    return {name: export_body(export) for name, export in snap.exports.items()}

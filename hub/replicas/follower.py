"""A replica that does not lead still serves watches: it follows the leader's history.

The follower keeps an Engine (index, revision, epoch, watchers' bus) in step with what a
`FollowSource` reads of the leader's durable state — the SQLite change log of the data dir
(`hub.replicas.sqlite_source`), or the ResourceImport CRs the kube store stamps with the epoch and
revision that wrote them (`hub.replicas.kube_source`). WatchImports and the REST read views then run
unchanged on this engine: snapshots, SYNCED, bookmarks and resumption all behave as on the
leader, with the leader's epoch and revisions, so a member resumes on any replica.

The rule that keeps that honest: the follower publishes a revision only whole, in order, and
only under the epoch it belongs to. When it cannot tell (its source was reset, the leader
changed, a revision went missing), it `rebase`s: the state it holds becomes revision N of
epoch E, its change log starts there, and every open watch is ended to resume — which,
asked of a revision it no longer has, answers with a fresh snapshot, never with a gap. A watch
that resumes from before the follower's own log began (it just started: a rolling update of the
replicas) is given the changes from the source's durable log where it keeps one (the SQLite data
dir's), so it resumes with no snapshot there too.

A follower never writes: its store refuses every commit (NotLeaderStore), and the service
refuses write calls before they reach it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from hub.config import HubConfig
from hub.engine import Clock, Engine, utc_now
from hub.engine.ledger import Advance
from hub.store.base import (
    ImportChange,
    RevisionCompacted,
    Snapshot,
    Store,
    StoreError,
    WriteBatch,
)
from hub.store.changelog import ChangeLog
from kube.waiting import cancel_and_wait, until_set_or_done

log = logging.getLogger(__name__)


class NotLeaderStore(StoreError):
    """A write reached a follower's store (the service refuses writes first; this is the backstop)."""


@dataclass
class Rebase:
    """From here on the follower's history is `snapshot` (its epoch at its revision)."""

    snapshot: Snapshot


FollowStep = Advance | Rebase


class FollowSource(Protocol):
    """Where a follower reads the leader's history."""

    def follow(self) -> AsyncIterator[FollowStep]:
        """A Rebase first, then steps in order; ends only by cancellation (or an error)."""
        ...

    async def durable_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        """The leader's own import changes after ``revision``, from its durable change log, for a
        watcher resuming from before this replica's history began; raises as
        Store.import_changes_since does (RevisionCompacted when the source keeps no such log)."""
        ...

    async def close(self) -> None: ...


class FollowedStore(Store):
    """The follower's read side: its own change log of the leader's revisions, and before it the
    source's durable one (a replica that just started or rebased has no history of its own, and
    the members that watched the replica it replaces resume from before it); no writes."""

    def __init__(self, source: FollowSource, compact_keep: int = 10_000) -> None:
        self._source = source
        self._log = ChangeLog(compact_keep)
        self._state = Snapshot("", 0, {}, {}, {})

    @property
    def epoch(self) -> str:
        return self._log.epoch

    @property
    def revision(self) -> int:
        return self._log.revision

    async def open(self) -> Snapshot:
        return self._state

    async def close(self) -> None:
        """Nothing to release: the source owns the connection."""

    async def commit(self, batch: WriteBatch) -> int:
        if batch.is_empty():
            return self._log.revision
        raise NotLeaderStore("this hub replica follows the leader and does not write")

    async def snapshot(self) -> Snapshot:
        """The state the follower was last rebased on (the engine's index holds what came since)."""
        return self._state

    def rebase(self, snapshot: Snapshot) -> None:
        # Nothing before the base can be given exactly: resuming there means a snapshot.
        self._log.start(snapshot.epoch, snapshot.revision)
        self._state = snapshot

    def append(self, revision: int, changes: list[ImportChange]) -> None:
        self._log.append(revision, changes)

    async def import_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        try:
            return self._log.since(epoch, revision)
        except RevisionCompacted:
            through = self._log.compacted_through
            older = await self._source.durable_changes_since(epoch, revision)
            # Our own log from where it begins (it may have moved on meanwhile: then a snapshot).
            return [c for c in older if c.revision <= through] + self._log.since(epoch, through)

    async def compact(self, keep_after: int) -> None:
        self._log.compact(keep_after)


class Follower:
    """Drives `engine` from `source`. `await start()` returns once the first state is loaded."""

    def __init__(self, source: FollowSource, config: HubConfig, clock: Clock = utc_now) -> None:
        self._source = source
        self.store = FollowedStore(source)
        self.engine = Engine(self.store, config, clock)
        self.synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="hub-follower")
        await until_set_or_done(self.synced, self._task)
        if self._task.done() and not self.synced.is_set():
            self._task.result()  # raises what stopped it

    async def stop(self) -> None:
        """Stop following; open watches end (UNAVAILABLE) and resume wherever they reconnect."""
        await cancel_and_wait(self._task)
        self._task = None
        self.engine.close_watches()
        await self._source.close()

    async def _run(self) -> None:
        try:
            async for step in self._source.follow():
                if isinstance(step, Rebase):
                    self._rebase(step.snapshot)
                else:
                    self._advance(step)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("hub follower stopped", extra={"error": str(exc)})
            raise

    def _rebase(self, snap: Snapshot) -> None:
        had_watchers = self.engine.imports_bus.count()
        self.store.rebase(snap)
        self.engine.rebase(snap)
        self.synced.set()
        log.info(
            "hub follower rebased",
            extra={
                "epoch": snap.epoch,
                "revision": snap.revision,
                "imports": len(snap.imports),
                "watchersResumed": had_watchers,
            },
        )

    def _advance(self, step: Advance) -> None:
        if step.revision > self.engine.revision:  # else exports/members only (the kube source learns them beside)
            self.store.append(step.revision, step.changes)
        self.engine.advance(step)

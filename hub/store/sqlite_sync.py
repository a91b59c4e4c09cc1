"""Making the sqlite store's commits durable: one fsync of the WAL for every commit made since the last.

The writer (sqlite_writer) commits without fsync. The syncer's thread fsyncs the WAL file, then
tells the event loop which revision is durable now: the last one committed before that fsync
began. Everyone waiting for it or an older one wakes together (group commit): one fsync per
round, however many batches, streams and callers share it. A round starts when a commit asks
for one and none is under way; what is staged meanwhile is committed, and synced, when it ends
(the store's `on_round_end`), so a lone write waits for one fsync, as it did with
``synchronous=FULL``, and a burst for about two.

The first round also fsyncs the data directory, so that the WAL file's own entry is durable
(sqlite does that for the files it syncs itself). About once a second while commits come, a
passive checkpoint copies the WAL into the database file, from a connection of its own on a
thread of its own (``synchronous=NORMAL``: sqlite syncs the WAL before and the database after):
the WAL stays small and neither the loop nor the next fsync waits for it.

An fsync that fails leaves every commit since the last good one in doubt (the kernel may have
dropped the pages it could not write): the syncer stops, every waiter fails with SyncFailed, and
so does every later commit, until the hub is restarted and reads what the disk holds (PostgreSQL
does the same after a failed fsync).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from hub.store.base import StoreError
from hub.store.sqlite_schema import connect

log = logging.getLogger(__name__)

# Seconds between two checkpoints at most as often, while commits come.
CHECKPOINT_INTERVAL: Final = 1.0


class SyncFailed(StoreError):
    """The store could not make its commits durable; restart the hub."""


class WalSyncer:
    """Group fsync of one database's WAL (see the module doc)."""

    def __init__(self, path: str, committed: Callable[[], int], on_round_end: Callable[[], None]) -> None:
        """``committed``: the revision of the last commit (read from the syncer's thread);
        ``on_round_end``: called on the loop when a round ended (before the listeners)."""
        self._path = path
        self._committed = committed
        self._on_round_end = on_round_end
        # A round was asked for and has not ended (loop side).
        self._busy = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._checkpointer: threading.Thread | None = None
        self._wake = threading.Event()
        self._checkpoint_due = threading.Event()
        self._stopped = threading.Event()
        self._stopping = False
        self._durable = 0
        self._failed: StoreError | None = None
        # (revision, future) of the callers waiting; loop thread only.
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._listeners: list[Callable[[int], None]] = []
        # fsync rounds done: one per group of commits, a count that does not vary with load.
        self.syncs = 0

    @property
    def durable(self) -> int:
        """The newest revision known durable."""
        return self._durable

    @property
    def failed(self) -> StoreError | None:
        return self._failed

    @property
    def busy(self) -> bool:
        """Whether a round is under way (a commit made now is synced when it ends)."""
        return self._busy

    def listen(self, listener: Callable[[int], None]) -> None:
        """Call ``listener(revision)`` on the loop each time the durable revision moves."""
        self._listeners.append(listener)

    def start(self, durable: int) -> None:
        """Start the threads; ``durable``: the revision the database held when opened."""
        self._loop = asyncio.get_running_loop()
        self._durable = durable
        self._thread = threading.Thread(target=self._run, name="hub-store-sync", daemon=True)
        self._checkpointer = threading.Thread(target=self._checkpoints, name="hub-store-checkpoint", daemon=True)
        self._thread.start()
        self._checkpointer.start()

    def request(self) -> None:
        """A commit was made: fsync it (call when no round is under way, or at a round's end)."""
        self._busy = True
        self._wake.set()

    def fail(self, error: StoreError) -> None:
        """The store broke (loop side): every waiter, and every later wait, fails with ``error``."""
        if self._failed is None:
            self._failed = error
        waiters, self._waiters = self._waiters, []
        for _, future in waiters:
            if not future.done():
                future.set_exception(self._failed)

    async def wait(self, revision: int) -> None:
        """Until ``revision`` is durable; SyncFailed if it never will be."""
        if self._failed is not None:
            raise self._failed
        if revision <= self._durable:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((revision, future))
        await future

    def stop(self) -> None:
        """Make what was committed durable, then end the threads (blocking)."""
        self._stopping = True
        self._stopped.set()
        self._wake.set()
        self._checkpoint_due.set()
        for thread in (self._thread, self._checkpointer):
            if thread is not None:
                thread.join()
        self._thread = self._checkpointer = None

    # ---- the syncer's thread ---------------------------------------------------------------

    def _run(self) -> None:
        synced, directory_synced = self._durable, False
        while True:
            self._wake.wait()
            self._wake.clear()
            target = self._committed()  # every commit up to here has written the WAL
            if target > synced:
                try:
                    sync_log(self._path)
                    if not directory_synced:
                        _fsync(str(Path(self._path).parent))
                        directory_synced = True
                except OSError as err:
                    log.error("store fsync failed: restart the hub", extra={"error": str(err)})
                    self._tell(self.fail, SyncFailed(f"the store could not fsync its log: {err}; restart the hub"))
                    return
                synced = target
                self.syncs += 1
                self._checkpoint_due.set()
            self._tell(self._done, synced)
            if self._stopping:
                return

    def _checkpoints(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while not self._stopping:
                self._checkpoint_due.wait()
                self._checkpoint_due.clear()
                if self._stopping:
                    return
                try:
                    conn = conn or connect(self._path, query_only=False, synchronous="NORMAL")
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error as err:  # the next one tries again
                    log.warning("store checkpoint failed", extra={"error": str(err)})
                self._stopped.wait(CHECKPOINT_INTERVAL)
        finally:
            if conn is not None:
                conn.close()

    def _tell(self, call: Callable[..., None], *args: object) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            loop.call_soon_threadsafe(call, *args)

    # ---- the loop's side ---------------------------------------------------------------------

    def _done(self, revision: int) -> None:
        """A round ended with ``revision`` durable."""
        self._busy = False
        moved = revision > self._durable
        if moved:
            self._durable = revision
            waiting = []
            for wanted, future in self._waiters:
                if wanted <= revision:
                    if not future.done():
                        future.set_result(None)
                else:
                    waiting.append((wanted, future))
            self._waiters = waiting
        if self._failed is None:
            self._on_round_end()
        if moved:
            for listener in self._listeners:
                listener(revision)


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_log(path: str) -> None:
    """fsync the WAL of the database at ``path``: every commit it holds is durable then (any
    process may: a follower reading another's commits makes them durable before it serves them)."""
    _fsync(path + "-wal")

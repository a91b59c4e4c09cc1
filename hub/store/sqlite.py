"""The embedded store: one sqlite file, `<data_dir>/hub.db`.

- Durability: WAL journal; `commit` returns after the WAL holding the batch is fsynced, so an
  acknowledged batch survives a SIGKILL (and a power loss, as far as sqlite and the disk
  promise). The store stages: `stage` writes a batch at once on the caller's thread
  (sqlite_writer), committed at once when no fsync is under way and else when it ends, and
  `synced` waits for the syncer's thread, which fsyncs the WAL once per round (sqlite_sync):
  group commit across batches, streams and callers.
- Reads use a second connection on a reader thread (sqlite_reader); they see what is
  committed, durable or not yet.
- History: the epoch is made with the database and kept in it, like the
  change log, so watchers resume across hub restarts; a new data dir is a new
  epoch. The change log keeps at most `compact_keep` entries.
- One hub per data dir (sqlite_lock).

A batch is written before `stage` (or `commit`) gives the loop back: a caller cancelled while
it waits for durability leaves it in place, and it becomes durable all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Final

from hub.store.base import ImportChange, Snapshot, Store, StoreCounts, StoreError, WriteBatch
from hub.store.sqlite_codec import InvalidRecord
from hub.store.sqlite_lock import DataDirLock, DataDirLocked
from hub.store.sqlite_reader import SnapshotReader
from hub.store.sqlite_schema import DatabaseUnreadable, SchemaVersionTooNew
from hub.store.sqlite_sync import SyncFailed, WalSyncer
from hub.store.sqlite_writer import BatchWriter, CommitFailed

__all__ = [
    "DB_FILE",
    "CommitFailed",
    "DataDirLocked",
    "DatabaseUnreadable",
    "InvalidRecord",
    "SchemaVersionTooNew",
    "SqliteStore",
    "StoreClosed",
    "SyncFailed",
]

log = logging.getLogger(__name__)

DB_FILE: Final = "hub.db"


class StoreClosed(StoreError):
    """The store is not open (never opened, or closed)."""


class SqliteStore(Store):
    """Store backed by one sqlite database under `data_dir`. See the module doc."""

    def __init__(self, data_dir: Path, *, compact_keep: int = 10_000) -> None:
        if compact_keep < 0:
            raise ValueError("compact_keep must be >= 0")
        self._data_dir = data_dir
        self._compact_keep = compact_keep
        self._path = str(data_dir / DB_FILE)
        self._lock = DataDirLock(data_dir)
        self._writer: BatchWriter | None = None
        self._syncer: WalSyncer | None = None
        self._reader: SnapshotReader | None = None
        self._listeners: list[Callable[[int], None]] = []
        self._epoch: str | None = None

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    @property
    def epoch(self) -> str:
        if self._epoch is None:
            raise StoreClosed("the store's epoch is known only after open")
        return self._epoch

    @property
    def revision(self) -> int:
        return 0 if self._writer is None else self._writer.revision

    @property
    def stages(self) -> bool:
        return True

    @property
    def durable_revision(self) -> int:
        return 0 if self._syncer is None else self._syncer.durable

    def watch_durable(self, listener: Callable[[int], None]) -> None:
        self._listeners.append(listener)
        if self._syncer is not None:
            self._syncer.listen(listener)

    def counts(self) -> StoreCounts | None:
        writer, syncer = self._writer, self._syncer
        if writer is None or syncer is None:
            return None
        return StoreCounts(writer.transactions, writer.statements, syncer.syncs)

    async def open(self) -> Snapshot:
        if self._writer is not None:
            return await self.snapshot()
        await asyncio.to_thread(self._prepare_dir)
        writer = BatchWriter(self._path, compact_keep=self._compact_keep)
        syncer = WalSyncer(self._path, lambda: writer.committed_revision, self._round_ended)
        reader = SnapshotReader(self._path)
        try:
            meta = await asyncio.to_thread(writer.open)
            syncer.start(meta.revision)
            await reader.open()
        except BaseException:
            await reader.close()
            await asyncio.to_thread(syncer.stop)
            writer.close()
            self._lock.release()
            raise
        for listener in self._listeners:
            syncer.listen(listener)
        self._writer, self._syncer, self._reader, self._epoch = writer, syncer, reader, meta.epoch
        snapshot = await self.snapshot()
        log.info(
            "store opened",
            extra={
                "dataDir": str(self._data_dir),
                "epoch": snapshot.epoch,
                "revision": snapshot.revision,
                "exports": len(snapshot.exports),
                "imports": len(snapshot.imports),
                "members": len(snapshot.members),
            },
        )
        return snapshot

    def _prepare_dir(self) -> None:
        self._data_dir.mkdir(parents=True, exist_ok=True)
        self._lock.acquire()

    async def close(self) -> None:
        writer, syncer, reader = self._writer, self._syncer, self._reader
        self._writer, self._syncer, self._reader = None, None, None
        if writer is None or syncer is None or reader is None:
            return
        revision = writer.revision
        await reader.close()
        # What was staged is committed and fsynced before the syncer's thread ends.
        with contextlib.suppress(StoreError):  # a broken store keeps what it had
            writer.commit()
        syncer.request()
        await asyncio.to_thread(syncer.stop)
        syncer.fail(StoreClosed("the store was closed"))
        writer.close()
        self._lock.release()
        log.info("store closed", extra={"dataDir": str(self._data_dir), "revision": revision})

    async def commit(self, batch: WriteBatch) -> int:
        revision = self.stage(batch)
        await self.synced(revision)
        return revision

    def stage(self, batch: WriteBatch) -> int:
        writer, syncer = self._open_writer()
        if syncer.failed is not None:
            raise syncer.failed
        if batch.is_empty():
            return writer.revision
        revision = writer.stage(batch)
        if not syncer.busy:  # else it is committed when the fsync under way ends
            self._commit_and_sync()
        return revision

    def _round_ended(self) -> None:
        """An fsync round ended: commit and sync what was staged meanwhile."""
        if self._writer is not None and self._writer.uncommitted:
            with contextlib.suppress(StoreError):  # told to every waiter
                self._commit_and_sync()

    def _commit_and_sync(self) -> None:
        writer, syncer = self._open_writer()
        try:
            writer.commit()
        except StoreError as err:
            syncer.fail(err)
            raise
        syncer.request()

    async def synced(self, revision: int) -> None:
        _, syncer = self._open_writer()
        await syncer.wait(revision)

    async def snapshot(self) -> Snapshot:
        return await self._open_reader().snapshot()

    async def import_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        return await self._open_reader().import_changes_since(epoch, revision)

    async def compact(self, keep_after: int) -> None:
        writer, syncer = self._open_writer()
        writer.compact(keep_after)
        if not syncer.busy:
            self._commit_and_sync()

    def _open_writer(self) -> tuple[BatchWriter, WalSyncer]:
        if self._writer is None or self._syncer is None:
            raise StoreClosed("the store is not open")
        return self._writer, self._syncer

    def _open_reader(self) -> SnapshotReader:
        if self._reader is None:
            raise StoreClosed("the store is not open")
        return self._reader

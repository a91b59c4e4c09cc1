"""The embedded store: one sqlite file, `<data_dir>/hub.db`.

- Durability: WAL journal with `synchronous=FULL`; `commit` returns after the
  transaction holding the batch is fsynced, so an acknowledged batch survives
  a SIGKILL (and a power loss, as far as sqlite and the disk promise).
- Off the loop: one writer thread owns the write connection and commits
  queued batches together (sqlite_writer); reads use a second connection on
  a reader thread (sqlite_reader).
- History: the epoch is made with the database and kept in it, like the
  change log, so watchers resume across hub restarts; a new data dir is a new
  epoch. The change log keeps at most `compact_keep` entries.
- One hub per data dir (sqlite_lock).

A commit whose caller is cancelled before the writer takes it writes
nothing; once taken, it completes even if nobody awaits it any more.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Final

from hub.store.base import ImportChange, Snapshot, Store, StoreError, WriteBatch
from hub.store.sqlite_codec import InvalidRecord
from hub.store.sqlite_lock import DataDirLock, DataDirLocked
from hub.store.sqlite_reader import SnapshotReader
from hub.store.sqlite_schema import DatabaseUnreadable, SchemaVersionTooNew
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
        self._reader: SnapshotReader | None = None
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
        return 0 if self._writer is None else self._writer.committed_revision

    async def open(self) -> Snapshot:
        if self._writer is not None:
            return await self.snapshot()
        await asyncio.to_thread(self._prepare_dir)
        writer = BatchWriter(self._path, compact_keep=self._compact_keep)
        reader = SnapshotReader(self._path)
        try:
            meta = await asyncio.wrap_future(writer.start())
            await reader.open()
        except BaseException:
            await reader.close()
            await asyncio.to_thread(writer.stop)
            self._lock.release()
            raise
        self._writer, self._reader, self._epoch = writer, reader, meta.epoch
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
        writer, reader = self._writer, self._reader
        self._writer, self._reader = None, None
        if writer is None or reader is None:
            return
        revision = writer.committed_revision
        await reader.close()
        # Queued batches are committed before the writer thread ends.
        await asyncio.to_thread(writer.stop)
        self._lock.release()
        log.info("store closed", extra={"dataDir": str(self._data_dir), "revision": revision})

    async def commit(self, batch: WriteBatch) -> int:
        writer = self._open_writer()
        if batch.is_empty():
            return writer.committed_revision
        return await asyncio.wrap_future(writer.submit(batch))

    async def snapshot(self) -> Snapshot:
        return await self._open_reader().snapshot()

    async def import_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        return await self._open_reader().import_changes_since(epoch, revision)

    async def compact(self, keep_after: int) -> None:
        await asyncio.wrap_future(self._open_writer().submit_compact(keep_after))

    def _open_writer(self) -> BatchWriter:
        if self._writer is None:
            raise StoreClosed("the store is not open")
        return self._writer

    def _open_reader(self) -> SnapshotReader:
        if self._reader is None:
            raise StoreClosed("the store is not open")
        return self._reader

"""The sqlite store's reader: a second connection on its own thread.

In WAL mode a reader never waits for the writer, and a read transaction
sees one committed state, so a snapshot and its revision always agree.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from hub.store.base import ImportChange, MemberRecord, Snapshot, StoreError, check_resumable
from hub.store.sqlite_codec import MemberRow, decode_export, decode_import, decode_member
from hub.store.sqlite_schema import connect, member_columns, read_meta
from mcapi.mchub.v1 import common_area_pb2 as pb

T = TypeVar("T")


class ReaderClosed(StoreError):
    """A read was asked of a store that is not open."""


class SnapshotReader:
    """Consistent reads of the database, off the event loop."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def open(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hub-store-reader")
        self._conn = await self._in_thread(lambda: connect(self._path, query_only=True))

    async def close(self) -> None:
        executor, conn = self._executor, self._conn
        self._executor, self._conn = None, None
        if executor is None:
            return
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        executor.shutdown(wait=False)

    async def snapshot(self) -> Snapshot:
        return await self._read(_read_snapshot)

    async def import_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        return await self._read(lambda conn: _read_changes_since(conn, epoch, revision))

    async def changes_and_revision(self, epoch: str, revision: int) -> tuple[int, list[ImportChange]]:
        """The store's revision and the import changes after `revision`, read as one state
        (a follower advances to that revision with exactly those changes)."""
        return await self._read(lambda conn: (read_meta(conn).revision, _read_changes_since(conn, epoch, revision)))

    async def export_bodies_and_members(self) -> tuple[dict[str, bytes], dict[str, MemberRecord]]:
        """Every export, serialized (a follower parses only those that changed), and every member:
        what a follower's REST views show besides imports."""

        def read(conn: sqlite3.Connection) -> tuple[dict[str, bytes], dict[str, MemberRecord]]:
            bodies = {str(name): bytes(body) for name, body in conn.execute("SELECT export_name, body FROM exports")}
            return bodies, _read_snapshot(conn, with_exports=False, with_imports=False).members

        return await self._read(read)

    async def _read(self, read: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn
        if conn is None:
            raise ReaderClosed("the store is not open")

        def in_transaction() -> T:
            conn.execute("BEGIN")
            try:
                return read(conn)
            finally:
                conn.execute("COMMIT")

        return await self._in_thread(in_transaction)

    async def _in_thread(self, work: Callable[[], T]) -> T:
        if self._executor is None:
            raise ReaderClosed("the store is not open")
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)


def _read_snapshot(conn: sqlite3.Connection, *, with_exports: bool = True, with_imports: bool = True) -> Snapshot:
    meta = read_meta(conn)
    exports: dict[str, pb.ResourceExport] = {}
    if with_exports:
        exports = {name: decode_export(body) for name, body in conn.execute("SELECT export_name, body FROM exports")}
    imports: dict[str, pb.ResourceImport] = {}
    if with_imports:
        imports = {name: decode_import(body) for name, body in conn.execute("SELECT import_name, body FROM imports")}
    members: dict[str, MemberRecord] = {}
    # A database its writer has not opened since a column came has no such column yet.
    present = member_columns(conn)
    columns = ", ".join(c if c in present else "''" for c in ("inventory", "global_cidr"))
    for row in conn.execute(
        f"SELECT cluster_id, cluster_set_id, leader_cluster_id, joined, last_heartbeat, {columns} FROM members"
    ):
        members[row[0]] = decode_member(MemberRow(*row))
    return Snapshot(epoch=meta.epoch, revision=meta.revision, exports=exports, imports=imports, members=members)


def _read_changes_since(conn: sqlite3.Connection, epoch: str, revision: int) -> list[ImportChange]:
    meta = read_meta(conn)
    check_resumable(
        epoch, revision, held_epoch=meta.epoch, held_revision=meta.revision, compacted_through=meta.compacted_through
    )
    return [
        ImportChange(
            revision=change_revision,
            import_name=import_name,
            resource=None if body is None else decode_import(body),
        )
        for change_revision, import_name, body in conn.execute(
            "SELECT revision, import_name, body FROM import_changes WHERE revision > ? ORDER BY revision, seq",
            (revision,),
        )
    ]

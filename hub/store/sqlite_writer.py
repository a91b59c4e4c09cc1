"""The sqlite store's writer: one connection, batches written where they are asked, committed in groups.

A batch is written at once, with its own revision, in a savepoint of the open transaction, on the
thread that stages it (the hub's event loop): a batch that fails is undone alone. ``commit``
commits the open transaction, every batch staged since the last one; the store commits at once
when no fsync is under way and otherwise when it ends (sqlite_sync), so a burst of writes is one
transaction and one fsync, a lone write its own. The connection runs with ``synchronous=NORMAL``:
COMMIT writes the WAL but does not fsync it; the syncer does, and no one may be told of a batch
before that.

Why on the loop and not on a thread of its own: every statement releases the GIL while sqlite
works and must take it back; a writer thread beside a busy event loop waited up to the
interpreter's switch interval (5 ms) for each, so a commit of a few statements took tens of
milliseconds under load. On the loop the statements cost their CPU time only, and the one wait
the loop cannot afford, the fsync, happens elsewhere.

A COMMIT that fails loses the batches it carried although the hub already holds them: the writer
is then broken, every later batch fails (CommitFailed), and the hub must be restarted to read
what the disk holds. Checkpoints (copying the WAL into the database file) are left to the syncer
(``wal_autocheckpoint=0`` here): an automatic one would run inside a commit, fsyncing on the loop.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from hub.store.base import StoreError, WriteBatch
from hub.store.sqlite_codec import encode_export, encode_import, encode_member
from hub.store.sqlite_schema import Meta, connect, ensure_schema

log = logging.getLogger(__name__)

_PUT_EXPORT = (
    "INSERT INTO exports (export_name, cluster_id, kind, namespace, name, revision, body)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (export_name) DO UPDATE SET"
    " cluster_id = excluded.cluster_id, kind = excluded.kind, namespace = excluded.namespace,"
    " name = excluded.name, revision = excluded.revision, body = excluded.body"
)
_PUT_IMPORT = (
    "INSERT INTO imports (import_name, kind, namespace, name, revision, body)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (import_name) DO UPDATE SET"
    " kind = excluded.kind, namespace = excluded.namespace, name = excluded.name,"
    " revision = excluded.revision, body = excluded.body"
)
_PUT_MEMBER = (
    "INSERT INTO members (cluster_id, cluster_set_id, leader_cluster_id, joined,"
    " last_heartbeat, revision, inventory, global_cidr) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (cluster_id)"
    " DO UPDATE SET cluster_set_id = excluded.cluster_set_id,"
    " leader_cluster_id = excluded.leader_cluster_id, joined = excluded.joined,"
    " last_heartbeat = excluded.last_heartbeat, revision = excluded.revision,"
    " inventory = excluded.inventory, global_cidr = excluded.global_cidr"
)
_LOG_CHANGE = "INSERT INTO import_changes (revision, import_name, body) VALUES (?, ?, ?)"


# What one transaction does on the connection; it returns a revision.
_Work = Callable[[sqlite3.Connection], int]


class CommitFailed(StoreError):
    """The transaction carrying a batch could not be committed; nothing of it was written."""


@dataclass
class _Counters:
    """What the writer knows of the database; rolled back with it."""

    revision: int
    compacted_through: int
    log_length: int


class BatchWriter:
    """Commits WriteBatches and compactions, each in a transaction of its own (see the module doc)."""

    def __init__(self, path: str, *, compact_keep: int) -> None:
        self._path = path
        self._compact_keep = compact_keep
        self._conn: sqlite3.Connection | None = None
        self._counters = _Counters(revision=0, compacted_through=0, log_length=0)
        self._committed = 0
        # A transaction is open: batches were staged since the last commit.
        self._open = False
        self._broken: CommitFailed | None = None
        # Transactions committed, and the statements they ran: counts that do not vary with load.
        self.transactions = 0
        self.statements = 0

    @property
    def revision(self) -> int:
        """The revision of the last batch staged (committed or not yet)."""
        return self._counters.revision

    @property
    def committed_revision(self) -> int:
        """The revision of the last batch committed (durable or not yet)."""
        return self._committed

    @property
    def uncommitted(self) -> bool:
        """Whether a transaction is open: something was staged since the last commit."""
        return self._open

    def open(self) -> Meta:
        """Connect and check (or create) the schema; blocking."""
        conn = connect(self._path, query_only=False, synchronous="NORMAL")
        try:
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            meta = ensure_schema(conn, self._path)
            (log_length,) = conn.execute("SELECT COUNT(*) FROM import_changes").fetchone()
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._counters = _Counters(meta.revision, meta.compacted_through, log_length)
        self._committed = meta.revision
        return meta

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def stage(self, batch: WriteBatch) -> int:
        """Write the batch as the next revision in the open transaction (begun if none is) and
        return that revision; `commit` commits it. InvalidRecord or CommitFailed when it cannot be
        written: then nothing of it was, and the batches staged before it stand."""
        return self._in_savepoint(lambda conn: self._apply_batch(conn, batch))

    def compact(self, keep_after: int) -> int:
        """Drop change-log entries with revision <= keep_after (in the open transaction); return
        the compaction point."""
        return self._in_savepoint(lambda conn: self._compact(conn, keep_after))

    def commit(self) -> int:
        """Commit the open transaction, if any; return the revision committed. CommitFailed: the
        batches it carried are lost, and the writer is broken (see the module doc)."""
        conn = self._usable()
        if not self._open:
            return self._committed
        try:
            self._bound_log(conn)
            self._run(conn, "COMMIT")
        except Exception as err:
            self._rollback(conn)
            self._break(f"the store could not commit: {err}")
        self._open = False
        self._committed = self._counters.revision
        self.transactions += 1
        return self._committed

    def _in_savepoint(self, work: _Work) -> int:
        conn = self._usable()
        before = dataclasses.replace(self._counters)
        statements = self.statements
        try:
            if not self._open:
                self._run(conn, "BEGIN IMMEDIATE")
                self._open = True
            self._run(conn, "SAVEPOINT batch")
            try:
                result = work(conn)
            except BaseException:
                conn.execute("ROLLBACK TO batch")
                conn.execute("RELEASE batch")
                raise
            self._run(conn, "RELEASE batch")
        except Exception as err:
            self._counters = before
            self.statements = statements
            if self._open and not conn.in_transaction:
                # sqlite rolled the whole transaction back (disk full, I/O error): batches
                # staged before this one are gone too.
                self._break(f"the store lost its open transaction: {err}")
            if isinstance(err, StoreError):
                raise
            log.error("store write failed", extra={"error": str(err)})
            raise CommitFailed(f"the store could not write: {err}") from err
        return result

    def _usable(self) -> sqlite3.Connection:
        if self._broken is not None:
            raise self._broken
        if self._conn is None:
            raise CommitFailed("the store is not open")
        return self._conn

    def _break(self, reason: str) -> NoReturn:
        log.error("store broken: restart the hub", extra={"error": reason})
        self._open = False
        self._broken = CommitFailed(f"{reason}; restart the hub")
        raise self._broken

    def _run(self, conn: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> sqlite3.Cursor:
        self.statements += 1
        return conn.execute(sql, params)

    def _run_many(self, conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
        if rows:
            self.statements += 1
            conn.executemany(sql, rows)

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error as err:
            # sqlite rolls back by itself after some errors (e.g. disk I/O);
            # the next BEGIN starts clean either way.
            log.warning("store rollback failed", extra={"error": str(err)})

    def _apply_batch(self, conn: sqlite3.Connection, batch: WriteBatch) -> int:
        # Order inside a batch: the fields' order (puts, then deletes), so a
        # name both put and deleted in one batch ends deleted. Every row is encoded
        # (and refused, InvalidRecord) before anything is written.
        revision = self._counters.revision + 1
        exports = [encode_export(e) for e in batch.put_exports]
        imports = [encode_import(i) for i in batch.put_imports]
        members = [encode_member(m) for m in batch.put_members]
        export_rows = [(e.export_name, e.cluster_id, e.kind, e.namespace, e.name, revision, e.body) for e in exports]
        self._run_many(conn, _PUT_EXPORT, export_rows)
        self._run_many(conn, "DELETE FROM exports WHERE export_name = ?", [(n,) for n in batch.delete_exports])
        import_rows = [(i.import_name, i.kind, i.namespace, i.name, revision, i.body) for i in imports]
        self._run_many(conn, _PUT_IMPORT, import_rows)
        changes: list[tuple[object, ...]] = [(revision, i.import_name, i.body) for i in imports]
        for import_name in batch.delete_imports:
            deleted = self._run(conn, "DELETE FROM imports WHERE import_name = ?", (import_name,))
            # Deleting an absent import changes nothing a watcher could see.
            if deleted.rowcount > 0:
                changes.append((revision, import_name, None))
        self._run_many(conn, _LOG_CHANGE, changes)
        self._counters.log_length += len(changes)
        member_rows = [
            (
                m.cluster_id,
                m.cluster_set_id,
                m.leader_cluster_id,
                m.joined,
                m.last_heartbeat,
                revision,
                m.inventory,
                m.global_cidr,
            )
            for m in members
        ]
        self._run_many(conn, _PUT_MEMBER, member_rows)
        self._run_many(conn, "DELETE FROM members WHERE cluster_id = ?", [(c,) for c in batch.delete_members])
        self._run(conn, "UPDATE meta SET revision = ?", (revision,))
        self._counters.revision = revision
        return revision

    def _compact(self, conn: sqlite3.Connection, keep_after: int) -> int:
        """Drop change-log entries with revision <= keep_after; return the compaction point."""
        # Compacting past the present would let a watcher resume from a
        # revision that never was; compacting backwards cannot bring entries back.
        target = min(keep_after, self._counters.revision)
        if target <= self._counters.compacted_through:
            return self._counters.compacted_through
        dropped = self._run(conn, "DELETE FROM import_changes WHERE revision <= ?", (target,)).rowcount
        self._run(conn, "UPDATE meta SET compacted_through = ?", (target,))
        self._counters.compacted_through = target
        self._counters.log_length -= dropped
        return target

    def _bound_log(self, conn: sqlite3.Connection) -> None:
        """Keep at most `compact_keep` change-log entries, dropping whole revisions, oldest first."""
        if self._counters.log_length <= self._compact_keep:
            return
        # The newest entry that must go; every entry of its revision and older
        # goes with it, so a watcher never resumes into half a revision.
        row = self._run(
            conn,
            "SELECT revision FROM import_changes ORDER BY revision DESC, seq DESC LIMIT 1 OFFSET ?",
            (self._compact_keep,),
        ).fetchone()
        if row is not None:
            through = self._compact(conn, row[0])
            log.debug(
                "store change log compacted",
                extra={"compactedThrough": through, "logLength": self._counters.log_length},
            )

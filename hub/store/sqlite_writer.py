"""The sqlite store's writer: one thread owns the write connection.

Batches queue up while a commit is being fsynced; the thread then commits
every queued batch in one sqlite transaction (group commit), each batch in
its own savepoint and with its own revision. One fsync thus acknowledges
many batches, and a batch that fails rolls back alone. Callers get a
concurrent Future resolved only after the transaction is durable.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import queue
import sqlite3
import threading
from dataclasses import dataclass
from typing import Final

from hub.store.base import StoreError, WriteBatch
from hub.store.sqlite_codec import encode_export, encode_import, encode_member
from hub.store.sqlite_schema import Meta, connect, ensure_schema

log = logging.getLogger(__name__)

# How many queued requests one transaction may carry; bounds the latency a
# large group adds to its first request.
MAX_GROUP: Final = 256


class CommitFailed(StoreError):
    """The transaction carrying a batch could not be committed; nothing of it was written."""


@dataclass
class _Commit:
    batch: WriteBatch
    future: concurrent.futures.Future[int]


@dataclass
class _Compact:
    keep_after: int
    future: concurrent.futures.Future[int]


_Request = _Commit | _Compact


@dataclass
class _Counters:
    """What the writer thread knows of the database; rolled back with it."""

    revision: int
    compacted_through: int
    log_length: int


class _Stop:
    """Sentinel asking the writer thread to finish."""


_STOP: Final = _Stop()


class BatchWriter:
    """Commits WriteBatches and compactions on a dedicated thread."""

    def __init__(self, path: str, *, compact_keep: int) -> None:
        self._path = path
        self._compact_keep = compact_keep
        self._queue: queue.SimpleQueue[_Request | _Stop] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._counters = _Counters(revision=0, compacted_through=0, log_length=0)
        # Read by the event loop; only ever moves forward, after a durable commit.
        self._committed_revision = 0

    @property
    def committed_revision(self) -> int:
        return self._committed_revision

    def start(self) -> concurrent.futures.Future[Meta]:
        """Start the thread; the future resolves once the schema is checked."""
        ready: concurrent.futures.Future[Meta] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="hub-store-writer", daemon=True)
        self._thread.start()
        return ready

    def submit(self, batch: WriteBatch) -> concurrent.futures.Future[int]:
        future: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._queue.put(_Commit(batch, future))
        return future

    def submit_compact(self, keep_after: int) -> concurrent.futures.Future[int]:
        future: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._queue.put(_Compact(keep_after, future))
        return future

    def stop(self) -> None:
        """Finish the queued requests, close the connection, join the thread (blocking)."""
        if self._thread is None:
            return
        self._queue.put(_STOP)
        self._thread.join()
        self._thread = None

    def _run(self, ready: concurrent.futures.Future[Meta]) -> None:
        try:
            conn = connect(self._path, query_only=False)
        except BaseException as err:
            ready.set_exception(err)
            return
        try:
            try:
                meta = ensure_schema(conn, self._path)
                (log_length,) = conn.execute("SELECT COUNT(*) FROM import_changes").fetchone()
            except BaseException as err:
                ready.set_exception(err)
                return
            self._counters = _Counters(meta.revision, meta.compacted_through, log_length)
            self._committed_revision = meta.revision
            ready.set_result(meta)
            self._serve(conn)
        finally:
            conn.close()
            self._refuse_leftovers()

    def _refuse_leftovers(self) -> None:
        """Fail requests queued behind the stop sentinel, so no caller waits forever."""
        while True:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                return
            if not isinstance(request, _Stop) and request.future.set_running_or_notify_cancel():
                request.future.set_exception(CommitFailed("the store was closed before this request ran"))

    def _serve(self, conn: sqlite3.Connection) -> None:
        while True:
            first = self._queue.get()
            if isinstance(first, _Stop):
                return
            group: list[_Request] = [first]
            stopping = False
            while len(group) < MAX_GROUP:
                try:
                    queued = self._queue.get_nowait()
                except queue.Empty:
                    break
                if isinstance(queued, _Stop):
                    stopping = True
                    break
                group.append(queued)
            self._commit_group(conn, group)
            if stopping:
                return

    def _commit_group(self, conn: sqlite3.Connection, group: list[_Request]) -> None:
        # A caller cancelled before its turn gets nothing written.
        live = [request for request in group if request.future.set_running_or_notify_cancel()]
        if not live:
            return
        before = dataclasses.replace(self._counters)
        applied: list[tuple[_Request, int]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for request in live:
                result = self._apply_alone(conn, request)
                if result is not None:
                    applied.append((request, result))
            self._bound_log(conn)
            conn.execute("COMMIT")
        except Exception as err:
            self._rollback(conn)
            self._counters = before
            log.error("store commit failed", extra={"batches": len(applied), "error": str(err)})
            failure = CommitFailed(f"the store could not commit: {err}")
            # Requests that failed alone already carry their own error.
            for request in live:
                if not request.future.done():
                    request.future.set_exception(failure)
            return
        self._committed_revision = self._counters.revision
        for request, result in applied:
            request.future.set_result(result)

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error as err:
            # sqlite rolls back by itself after some errors (e.g. disk I/O);
            # the next BEGIN starts clean either way.
            log.warning("store rollback failed", extra={"error": str(err)})

    def _apply_alone(self, conn: sqlite3.Connection, request: _Request) -> int | None:
        """Apply one request in a savepoint; on failure undo it alone and fail its future."""
        before = dataclasses.replace(self._counters)
        conn.execute("SAVEPOINT request")
        try:
            if isinstance(request, _Commit):
                result = self._apply_batch(conn, request.batch)
            else:
                result = self._compact(conn, request.keep_after)
        except Exception as err:
            conn.execute("ROLLBACK TO request")
            conn.execute("RELEASE request")
            self._counters = before
            request.future.set_exception(err)
            return None
        conn.execute("RELEASE request")
        return result

    def _apply_batch(self, conn: sqlite3.Connection, batch: WriteBatch) -> int:
        # Order inside a batch: the fields' order (puts, then deletes), so a
        # name both put and deleted in one batch ends deleted.
        revision = self._counters.revision + 1
        for export in batch.put_exports:
            e = encode_export(export)
            conn.execute(
                "INSERT INTO exports (export_name, cluster_id, kind, namespace, name, revision, body)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (export_name) DO UPDATE SET"
                " cluster_id = excluded.cluster_id, kind = excluded.kind, namespace = excluded.namespace,"
                " name = excluded.name, revision = excluded.revision, body = excluded.body",
                (e.export_name, e.cluster_id, e.kind, e.namespace, e.name, revision, e.body),
            )
        for export_name in batch.delete_exports:
            conn.execute("DELETE FROM exports WHERE export_name = ?", (export_name,))
        for resource in batch.put_imports:
            i = encode_import(resource)
            conn.execute(
                "INSERT INTO imports (import_name, kind, namespace, name, revision, body)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (import_name) DO UPDATE SET"
                " kind = excluded.kind, namespace = excluded.namespace, name = excluded.name,"
                " revision = excluded.revision, body = excluded.body",
                (i.import_name, i.kind, i.namespace, i.name, revision, i.body),
            )
            self._log_change(conn, revision, i.import_name, i.body)
        for import_name in batch.delete_imports:
            deleted = conn.execute("DELETE FROM imports WHERE import_name = ?", (import_name,))
            # Deleting an absent import changes nothing a watcher could see.
            if deleted.rowcount > 0:
                self._log_change(conn, revision, import_name, None)
        for member in batch.put_members:
            m = encode_member(member)
            conn.execute(
                "INSERT INTO members (cluster_id, cluster_set_id, leader_cluster_id, joined,"
                " last_heartbeat, global_cidr, revision) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (cluster_id)"
                " DO UPDATE SET cluster_set_id = excluded.cluster_set_id,"
                " leader_cluster_id = excluded.leader_cluster_id, joined = excluded.joined,"
                " last_heartbeat = excluded.last_heartbeat, global_cidr = excluded.global_cidr,"
                " revision = excluded.revision",
                (
                    m.cluster_id,
                    m.cluster_set_id,
                    m.leader_cluster_id,
                    m.joined,
                    m.last_heartbeat,
                    m.global_cidr,
                    revision,
                ),
            )
        for cluster_id in batch.delete_members:
            conn.execute("DELETE FROM members WHERE cluster_id = ?", (cluster_id,))
        conn.execute("UPDATE meta SET revision = ?", (revision,))
        self._counters.revision = revision
        return revision

    def _log_change(self, conn: sqlite3.Connection, revision: int, import_name: str, body: bytes | None) -> None:
        conn.execute(
            "INSERT INTO import_changes (revision, import_name, body) VALUES (?, ?, ?)",
            (revision, import_name, body),
        )
        self._counters.log_length += 1

    def _compact(self, conn: sqlite3.Connection, keep_after: int) -> int:
        """Drop change-log entries with revision <= keep_after; return the compaction point."""
        # Compacting past the present would let a watcher resume from a
        # revision that never was; compacting backwards cannot bring entries back.
        target = min(keep_after, self._counters.revision)
        if target <= self._counters.compacted_through:
            return self._counters.compacted_through
        dropped = conn.execute("DELETE FROM import_changes WHERE revision <= ?", (target,)).rowcount
        conn.execute("UPDATE meta SET compacted_through = ?", (target,))
        self._counters.compacted_through = target
        self._counters.log_length -= dropped
        return target

    def _bound_log(self, conn: sqlite3.Connection) -> None:
        """Keep at most `compact_keep` change-log entries, dropping whole revisions, oldest first."""
        if self._counters.log_length <= self._compact_keep:
            return
        # The newest entry that must go; every entry of its revision and older
        # goes with it, so a watcher never resumes into half a revision.
        row = conn.execute(
            "SELECT revision FROM import_changes ORDER BY revision DESC, seq DESC LIMIT 1 OFFSET ?",
            (self._compact_keep,),
        ).fetchone()
        if row is not None:
            through = self._compact(conn, row[0])
            log.debug(
                "store change log compacted",
                extra={"compactedThrough": through, "logLength": self._counters.log_length},
            )

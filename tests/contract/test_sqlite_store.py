"""The sqlite store against the store contract, plus what only sqlite promises.

Fixtures:
- `store_factory`: makes SqliteStores in fresh directories under tmp_path and
  reopens one on its own directory; closes every store it made at teardown.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from google.protobuf import timestamp_pb2

from hub.store.base import MemberRecord, RevisionCompacted, Store, WriteBatch
from hub.store.sqlite import DB_FILE, DataDirLocked, InvalidRecord, SchemaVersionTooNew, SqliteStore, SyncFailed
from hub.store.sqlite_schema import DatabaseUnreadable
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.contract import samples
from tests.contract.fsync_gate import FsyncGate, fsyncs_fixture  # noqa: F401 (the fixture `fsyncs`)
from tests.contract.sqlite_crash_writer import batch_number
from tests.contract.store_contract import StoreContract

REPO_ROOT = Path(__file__).resolve().parents[2]


def _db(store: SqliteStore) -> Path:
    return store.data_dir / DB_FILE


def _rows(store: SqliteStore, table: str) -> int:
    """How many rows a table of the store's database holds (read beside the store, read-only)."""
    with sqlite3.connect(f"file:{_db(store)}?mode=ro", uri=True) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


class SqliteStoreFactory:
    keeps_epoch_across_restart = True

    def __init__(self, root: Path, *, compact_keep: int = 10_000) -> None:
        self._root = root
        self._compact_keep = compact_keep
        self._made: list[SqliteStore] = []

    async def open_new(self) -> Store:
        return self._make(self._root / f"store-{len(self._made)}")

    async def reopen(self, store: Store) -> Store:
        assert isinstance(store, SqliteStore)
        await store.close()
        return self._make(store.data_dir)

    def _make(self, data_dir: Path) -> SqliteStore:
        store = SqliteStore(data_dir, compact_keep=self._compact_keep)
        self._made.append(store)
        return store

    async def close_all(self) -> None:
        for store in self._made:
            await store.close()


@pytest.fixture
async def store_factory(tmp_path: Path) -> AsyncIterator[SqliteStoreFactory]:
    factory = SqliteStoreFactory(tmp_path)
    yield factory
    await factory.close_all()


@pytest.fixture
async def sqlite_store(store_factory: SqliteStoreFactory) -> SqliteStore:
    store = await store_factory.open_new()
    assert isinstance(store, SqliteStore)
    await store.open()
    return store


class TestSqliteStore(StoreContract):
    async def test_the_database_file_is_in_wal_mode(self, sqlite_store: SqliteStore) -> None:
        with sqlite3.connect(_db(sqlite_store)) as conn:
            (mode,) = conn.execute("PRAGMA journal_mode").fetchone()

        assert mode == "wal"

    async def test_the_epoch_survives_a_reopen_and_a_new_data_dir_gets_a_new_one(
        self, store_factory: SqliteStoreFactory, sqlite_store: SqliteStore
    ) -> None:
        epoch = sqlite_store.epoch

        reopened = await store_factory.reopen(sqlite_store)
        await reopened.open()
        elsewhere = await store_factory.open_new()
        await elsewhere.open()

        assert reopened.epoch == epoch
        assert elsewhere.epoch != epoch

    async def test_nanoseconds_and_microseconds_round_trip_exactly(self, sqlite_store: SqliteStore) -> None:
        export = samples.service_export("east", "default", "web")
        export.create_time.CopyFrom(timestamp_pb2.Timestamp(seconds=1_740_000_000, nanos=123_456_789))
        member = MemberRecord(
            cluster_id="east",
            cluster_set_id="clusterset1",
            leader_cluster_id="leader",
            joined=datetime(2025, 3, 1, 12, 0, 0, 123_456, tzinfo=UTC),
            last_heartbeat=datetime(2025, 3, 1, 12, 0, 10, 654_321, tzinfo=UTC),
        )

        await sqlite_store.commit(WriteBatch(put_exports=[export], put_members=[member]))
        snapshot = await sqlite_store.snapshot()

        assert snapshot.exports[export.export_name] == export
        assert snapshot.members["east"] == member

    async def test_indexed_columns_describe_the_stored_objects(self, sqlite_store: SqliteStore) -> None:
        await sqlite_store.commit(
            WriteBatch(
                put_exports=[
                    samples.service_export("east", "default", "web"),
                    samples.cluster_info_export("east"),
                ],
                put_imports=[samples.endpoints_import("default", "web")],
            )
        )

        with sqlite3.connect(_db(sqlite_store)) as conn:
            exports = conn.execute(
                "SELECT export_name, cluster_id, kind, namespace, name FROM exports ORDER BY export_name"
            ).fetchall()
            imports = conn.execute("SELECT import_name, kind, namespace, name FROM imports").fetchall()

        assert exports == [
            ("east-clusterinfo", "east", names.KIND_CLUSTER_INFO, "kube-system", "east"),
            ("east-default-web-service", "east", names.KIND_SERVICE, "default", "web"),
        ]
        assert imports == [("default-web-endpoints", names.KIND_ENDPOINTS, "default", "web")]
        assert _rows(sqlite_store, "exports") == 2
        assert _rows(sqlite_store, "imports") == 1

    async def test_automatic_compaction_keeps_at_most_compact_keep_changes(self, tmp_path: Path) -> None:
        factory = SqliteStoreFactory(tmp_path, compact_keep=5)
        store = await factory.open_new()
        assert isinstance(store, SqliteStore)
        await store.open()
        try:
            revisions = [
                await store.commit(WriteBatch(put_imports=[samples.service_import("default", f"svc-{n}")]))
                for n in range(20)
            ]
            # A batch of three changes is dropped whole, never split.
            revisions.append(
                await store.commit(
                    WriteBatch(put_imports=[samples.service_import("default", f"bulk-{n}") for n in range(3)])
                )
            )

            assert _rows(store, "import_changes") <= 5
            oldest_resumable = revisions[-4]
            with pytest.raises(RevisionCompacted) as raised:
                await store.import_changes_since(store.epoch, oldest_resumable - 1)
            assert raised.value.oldest == oldest_resumable
            kept = await store.import_changes_since(store.epoch, oldest_resumable)
            assert [change.revision for change in kept] == [*revisions[-3:-1], *[revisions[-1]] * 3]
        finally:
            await factory.close_all()

    async def test_compaction_survives_a_reopen(
        self, store_factory: SqliteStoreFactory, sqlite_store: SqliteStore
    ) -> None:
        for n in range(3):
            await sqlite_store.commit(WriteBatch(put_imports=[samples.service_import("default", f"svc-{n}")]))
        await sqlite_store.compact(2)

        reopened = await store_factory.reopen(sqlite_store)
        await reopened.open()

        with pytest.raises(RevisionCompacted):
            await reopened.import_changes_since(reopened.epoch, 1)
        assert [change.revision for change in await reopened.import_changes_since(reopened.epoch, 2)] == [3]

    async def test_a_database_with_a_newer_schema_version_is_refused(
        self, store_factory: SqliteStoreFactory, sqlite_store: SqliteStore
    ) -> None:
        await sqlite_store.close()
        with sqlite3.connect(_db(sqlite_store)) as conn:
            conn.execute("UPDATE meta SET schema_version = schema_version + 1")

        newer = await store_factory.reopen(sqlite_store)
        with pytest.raises(SchemaVersionTooNew) as raised:
            await newer.open()

        assert raised.value.found == raised.value.supported + 1

    async def test_a_version_1_database_gains_the_members_inventory_and_keeps_its_members(
        self, store_factory: SqliteStoreFactory, sqlite_store: SqliteStore
    ) -> None:
        await sqlite_store.commit(WriteBatch(put_members=[samples.member("east")]))
        epoch, revision = sqlite_store.epoch, sqlite_store.revision
        await sqlite_store.close()
        with sqlite3.connect(_db(sqlite_store)) as conn:  # as mchub wrote it before inventories
            conn.execute("ALTER TABLE members DROP COLUMN inventory")
            conn.execute("UPDATE meta SET schema_version = 1")

        upgraded = await store_factory.reopen(sqlite_store)
        snapshot = await upgraded.open()

        assert (snapshot.epoch, snapshot.revision) == (epoch, revision)
        assert snapshot.members["east"] == samples.member("east")
        with sqlite3.connect(_db(sqlite_store)) as conn:
            assert conn.execute("SELECT schema_version FROM meta").fetchone() == (2,)

    async def test_a_database_keeps_only_the_indexes_its_queries_read_and_older_ones_lose_the_rest(
        self, store_factory: SqliteStoreFactory, sqlite_store: SqliteStore
    ) -> None:
        def indexes() -> set[str]:
            with sqlite3.connect(_db(sqlite_store)) as conn:
                rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
                return {str(name) for (name,) in rows}

        await sqlite_store.commit(WriteBatch(put_exports=[samples.service_export("east", "default", "web")]))
        assert indexes() == {"import_changes_by_revision"}
        await sqlite_store.close()
        with sqlite3.connect(_db(sqlite_store)) as conn:  # as earlier versions made it
            conn.execute("CREATE INDEX exports_by_cluster ON exports (cluster_id)")
            conn.execute("CREATE INDEX exports_by_source ON exports (kind, namespace, name)")
            conn.execute("CREATE INDEX imports_by_source ON imports (kind, namespace, name)")

        reopened = await store_factory.reopen(sqlite_store)
        snapshot = await reopened.open()

        assert indexes() == {"import_changes_by_revision"}
        assert list(snapshot.exports) == ["east-default-web-service"]

    async def test_a_file_that_is_not_a_database_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / DB_FILE).write_bytes(b"this is not sqlite, it is a text file of forty bytes and more")
        store = SqliteStore(tmp_path)

        with pytest.raises(DatabaseUnreadable):
            await store.open()
        await store.close()

    async def test_a_second_store_on_the_same_data_dir_is_refused(self, sqlite_store: SqliteStore) -> None:
        second = SqliteStore(sqlite_store.data_dir)

        with pytest.raises(DataDirLocked):
            await second.open()

    async def test_every_acknowledged_batch_survives_a_sigkill(self, tmp_path: Path) -> None:
        acknowledged_wanted = 25
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.contract.sqlite_crash_writer",
            str(tmp_path),
            cwd=REPO_ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        assert child.stdout is not None
        acknowledged: list[tuple[int, int]] = []
        try:
            async with asyncio.timeout(30):
                while len(acknowledged) < acknowledged_wanted:
                    line = await child.stdout.readline()
                    assert line, "the crash writer exited before it was killed"
                    number, revision = line.split()
                    acknowledged.append((int(number), int(revision)))
        finally:
            # Killed mid-stream: the child is committing the next batch right now.
            child.kill()
            await child.wait()

        store = SqliteStore(tmp_path)
        snapshot = await store.open()
        try:
            assert [revision for _, revision in acknowledged] == list(range(1, acknowledged_wanted + 1))
            assert snapshot.revision >= acknowledged_wanted
            for n, _ in acknowledged:
                expected = batch_number(n)
                assert snapshot.exports[expected.put_exports[0].export_name] == expected.put_exports[0]
                assert snapshot.imports[expected.put_imports[0].import_name] == expected.put_imports[0]
            changes = await store.import_changes_since(snapshot.epoch, 0)
            assert [change.revision for change in changes] == list(range(1, snapshot.revision + 1))
        finally:
            await store.close()


class TestGroupCommit:
    """A staged batch is told durable only after an fsync that began after it was committed,
    and batches staged while an fsync is under way share the next one."""

    async def test_a_batch_is_durable_only_once_its_fsync_returned(
        self, sqlite_store: SqliteStore, fsyncs: FsyncGate
    ) -> None:
        told: list[int] = []
        sqlite_store.watch_durable(told.append)
        fsyncs.held = True
        revision = sqlite_store.stage(batch_number(1))
        synced = asyncio.create_task(sqlite_store.synced(revision))
        await asyncio.sleep(0.1)
        assert fsyncs.started == 1
        assert not synced.done() and told == [] and sqlite_store.durable_revision < revision
        # Committed already: readers see it before it is durable.
        assert (await sqlite_store.snapshot()).revision == revision

        fsyncs.release.set()
        await asyncio.wait_for(synced, 5)
        assert told == [revision] and sqlite_store.durable_revision == revision

    async def test_batches_staged_during_an_fsync_are_one_transaction_and_one_fsync(
        self, sqlite_store: SqliteStore, fsyncs: FsyncGate
    ) -> None:
        before = sqlite_store.counts()
        assert before is not None
        fsyncs.held = True
        first = sqlite_store.stage(batch_number(0))
        await asyncio.wait_for(fsyncs.holding.wait(), 5)  # the first batch's fsync is under way
        revisions = [sqlite_store.stage(batch_number(n)) for n in range(1, 51)]
        assert revisions == list(range(first + 1, first + 51))
        fsyncs.release.set()
        await asyncio.wait_for(sqlite_store.synced(revisions[-1]), 5)

        after = sqlite_store.counts()
        assert after is not None
        assert after.transactions - before.transactions == 2
        assert after.syncs - before.syncs == 2
        snapshot = await sqlite_store.snapshot()
        assert snapshot.revision == revisions[-1] and len(snapshot.exports) == 51

    async def test_a_failed_fsync_fails_the_waiters_and_every_later_write(
        self, sqlite_store: SqliteStore, fsyncs: FsyncGate
    ) -> None:
        fsyncs.failing = True
        revision = sqlite_store.stage(batch_number(1))
        with pytest.raises(SyncFailed):
            await asyncio.wait_for(sqlite_store.synced(revision), 5)
        with pytest.raises(SyncFailed):
            sqlite_store.stage(batch_number(2))
        with pytest.raises(SyncFailed):
            await sqlite_store.commit(batch_number(3))

    async def test_a_batch_that_cannot_be_stored_fails_alone(self, sqlite_store: SqliteStore) -> None:
        good = sqlite_store.stage(batch_number(1))
        nameless = pb.ResourceExport(cluster_id="east")  # no export name: refused by the codec
        with pytest.raises(InvalidRecord):
            sqlite_store.stage(WriteBatch(put_exports=[nameless]))
        after = sqlite_store.stage(batch_number(2))
        await sqlite_store.synced(after)
        snapshot = await sqlite_store.snapshot()
        assert after == good + 1 and snapshot.revision == after and len(snapshot.exports) == 2

"""The contract's half about state: writes, reads, restarts, atomicity, concurrency."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from hub.store.base import ClusterInventory, MemberRecord, Snapshot, Store, StoreError, WriteBatch
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.contract import samples
from tests.contract.samples import puts_one_import
from tests.contract.store_factory import StoreFactory, open_new

# What a backend may raise for an object it cannot store.
UNSTORABLE = (StoreError, ValueError, TypeError)


class StateContract:
    """What is committed is what is read back, whole or not at all, and it lasts."""

    async def test_an_empty_store_opens_at_revision_zero_with_an_epoch(self, store_factory: StoreFactory) -> None:
        store, opened = await open_new(store_factory)

        assert opened.revision == 0
        assert opened.epoch
        assert opened.epoch == store.epoch
        assert store.revision == 0
        assert (opened.exports, opened.imports, opened.members) == ({}, {}, {})
        assert await store.import_changes_since(store.epoch, 0) == []

    async def test_two_new_stores_have_different_epochs(self, store_factory: StoreFactory) -> None:
        first, _ = await open_new(store_factory)
        second, _ = await open_new(store_factory)

        assert first.epoch != second.epoch

    async def test_commit_returns_increasing_revisions_one_per_batch(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)

        revisions = [await store.commit(puts_one_import(n)) for n in range(5)]

        assert revisions == [1, 2, 3, 4, 5]
        assert store.revision == 5
        assert (await store.snapshot()).revision == 5

    async def test_a_batch_without_imports_still_gets_a_revision(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)

        first = await store.commit(WriteBatch(put_exports=[samples.service_export("east", "default", "web")]))
        second = await store.commit(WriteBatch(put_members=[samples.member("east")]))

        assert (first, second) == (1, 2)

    async def test_an_empty_batch_writes_nothing_and_returns_the_current_revision(
        self, store_factory: StoreFactory
    ) -> None:
        store, _ = await open_new(store_factory)
        await store.commit(puts_one_import(1))
        before = await store.snapshot()

        assert await store.commit(WriteBatch()) == 1
        assert await store.snapshot() == before
        assert await store.commit(puts_one_import(2)) == 2

    async def test_exports_imports_and_members_round_trip_exactly(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        exports = [
            samples.service_export("east", "default", "web"),
            samples.endpoints_export("east", "default", "web"),
            samples.cluster_info_export("east"),
            samples.acnp_export("deny-all"),
            samples.label_identity_export("east", "ns:kubernetes.io/metadata.name=default&pod:app=web"),
        ]
        imports = [
            samples.service_import("default", "web", clusters=("west", "east")),
            samples.endpoints_import("default", "web"),
            samples.cluster_info_import("east", targets=("west",)),
            samples.label_identity_import("ns:kubernetes.io/metadata.name=default&pod:app=web", 7),
        ]
        members = [samples.member("east"), samples.member("west", heartbeat_after=timedelta(minutes=3))]

        revision = await store.commit(WriteBatch(put_exports=exports, put_imports=imports, put_members=members))
        snapshot = await store.snapshot()

        assert snapshot.revision == revision
        assert snapshot.epoch == store.epoch
        assert snapshot.exports == {export.export_name: export for export in exports}
        assert snapshot.imports == {resource.import_name: resource for resource in imports}
        assert snapshot.members == {record.cluster_id: record for record in members}
        web = snapshot.exports[names.service_export_name("east", "default", "web")]
        assert web.create_time == exports[0].create_time
        assert web.status.verdict == pb.VERDICT_CONFLICT
        assert web.status.reason == "PortConflict"

    async def test_member_times_come_back_as_the_same_instant_in_utc(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        plus_two = timezone(timedelta(hours=2))
        record = MemberRecord(
            cluster_id="east",
            cluster_set_id="clusterset1",
            leader_cluster_id="leader",
            joined=datetime(2025, 3, 1, 14, 0, 0, tzinfo=plus_two),
            last_heartbeat=datetime(2025, 3, 1, 14, 0, 30, tzinfo=plus_two),
        )

        await store.commit(WriteBatch(put_members=[record]))
        stored = (await store.snapshot()).members["east"]

        assert stored == record
        assert stored.joined.utcoffset() == timedelta(0)
        assert stored.last_heartbeat.utcoffset() == timedelta(0)
        assert stored.joined == datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)

    async def test_what_a_member_says_of_its_cluster_comes_back_whole(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        inventory = ClusterInventory(
            cluster_uid="0b7d6c1e-5a0a-4c1e-9d57-3f2a1c9e8b11",
            kubernetes_version="v1.28.7",
            properties=(("cluster.clusterset.k8s.io", "east"), ("region.topology.k8s.io", "eu-west-1 ✓")),
            control_plane_healthy=False,
            control_plane_message="readyz: [-]etcd failed",
        )
        record = replace(samples.member("east"), inventory=inventory)

        await store.commit(WriteBatch(put_members=[record, samples.member("west")]))
        members = (await store.snapshot()).members

        assert members["east"] == record
        assert members["west"].inventory == ClusterInventory()

    async def test_a_put_replaces_the_object_of_the_same_name(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        await store.commit(
            WriteBatch(
                put_exports=[samples.service_export("east", "default", "web", port=80)],
                put_imports=[samples.service_import("default", "web", clusters=("east",))],
                put_members=[samples.member("east")],
            )
        )
        newer_export = samples.service_export("east", "default", "web", port=8080)
        newer_import = samples.service_import("default", "web", clusters=("east", "west"))
        newer_member = samples.member("east", heartbeat_after=timedelta(seconds=40))

        await store.commit(
            WriteBatch(put_exports=[newer_export], put_imports=[newer_import], put_members=[newer_member])
        )
        snapshot = await store.snapshot()

        assert list(snapshot.exports.values()) == [newer_export]
        assert list(snapshot.imports.values()) == [newer_import]
        assert list(snapshot.members.values()) == [newer_member]

    async def test_deletes_remove_exports_imports_and_members(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        kept_export = samples.service_export("west", "default", "web")
        gone_export = samples.service_export("east", "default", "web")
        kept_import = samples.cluster_info_import("west")
        gone_import = samples.cluster_info_import("east")
        await store.commit(
            WriteBatch(
                put_exports=[kept_export, gone_export],
                put_imports=[kept_import, gone_import],
                put_members=[samples.member("east"), samples.member("west")],
            )
        )

        await store.commit(
            WriteBatch(
                delete_exports=[gone_export.export_name],
                delete_imports=[gone_import.import_name],
                delete_members=["east"],
            )
        )
        snapshot = await store.snapshot()

        assert snapshot.exports == {kept_export.export_name: kept_export}
        assert snapshot.imports == {kept_import.import_name: kept_import}
        assert set(snapshot.members) == {"west"}

    async def test_deleting_an_absent_name_is_not_an_error(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        present = samples.service_import("default", "web")
        await store.commit(WriteBatch(put_imports=[present]))

        revision = await store.commit(
            WriteBatch(
                delete_exports=["east-default-nothing-service"],
                delete_imports=["default-nothing-service"],
                delete_members=["nobody"],
            )
        )

        assert revision == 2
        assert (await store.snapshot()).imports == {present.import_name: present}

    async def test_every_acknowledged_write_survives_a_restart(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        await store.commit(
            WriteBatch(
                put_exports=[
                    samples.service_export("east", "default", "web"),
                    samples.cluster_info_export("east"),
                ],
                put_imports=[samples.service_import("default", "web")],
                put_members=[samples.member("east")],
            )
        )
        await store.commit(
            WriteBatch(
                put_exports=[samples.endpoints_export("east", "default", "web")],
                put_imports=[samples.endpoints_import("default", "web"), samples.cluster_info_import("east")],
                delete_exports=[names.cluster_info_export_name("east")],
            )
        )
        before = await store.snapshot()

        reopened = await store_factory.reopen(store)
        after = await reopened.open()

        assert (after.exports, after.imports, after.members) == (
            before.exports,
            before.imports,
            before.members,
        )
        assert await reopened.snapshot() == after

    async def test_many_batches_committed_concurrently_by_several_tasks_all_land_with_distinct_revisions(
        self, store_factory: StoreFactory
    ) -> None:
        store, _ = await open_new(store_factory)
        tasks, batches_per_task = 8, 10

        async def commit_from(task: int) -> list[int]:
            return [
                await store.commit(
                    WriteBatch(
                        put_exports=[samples.service_export(f"c{task}", "default", f"svc-{n}")],
                        put_imports=[samples.service_import(f"ns-{task}", f"svc-{n}")],
                    )
                )
                for n in range(batches_per_task)
            ]

        per_task = await asyncio.gather(*(commit_from(task) for task in range(tasks)))
        revisions = list(itertools.chain.from_iterable(per_task))
        snapshot = await store.snapshot()
        changes = await store.import_changes_since(store.epoch, 0)

        assert sorted(revisions) == list(range(1, tasks * batches_per_task + 1))
        assert all(mine == sorted(mine) for mine in per_task)
        assert snapshot.revision == tasks * batches_per_task
        assert len(snapshot.exports) == len(snapshot.imports) == tasks * batches_per_task
        assert sorted(change.revision for change in changes) == sorted(revisions)

    async def test_a_batch_with_a_naive_member_time_fails_whole_and_leaves_nothing_half_applied(
        self, store_factory: StoreFactory
    ) -> None:
        store, _ = await open_new(store_factory)
        old_export = samples.service_export("east", "default", "old")
        old_import = samples.service_import("default", "old")
        await store.commit(WriteBatch(put_exports=[old_export], put_imports=[old_import]))
        before = await store.snapshot()
        naive = MemberRecord(
            cluster_id="west",
            cluster_set_id="clusterset1",
            leader_cluster_id="leader",
            joined=datetime(2025, 3, 1, 12, 0, 0),
            last_heartbeat=datetime(2025, 3, 1, 12, 0, 10),
        )
        # Every kind of write comes before the bad record, so a backend that
        # writes as it goes must undo them.
        doomed = WriteBatch(
            put_exports=[samples.service_export("east", "default", "new")],
            delete_exports=[old_export.export_name],
            put_imports=[samples.service_import("default", "new")],
            delete_imports=[old_import.import_name],
            put_members=[samples.member("east"), naive],
        )

        with pytest.raises(UNSTORABLE):
            await store.commit(doomed)

        await self._assert_untouched(store, before)

    async def test_a_batch_holding_an_object_of_the_wrong_type_fails_whole(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        await store.commit(puts_one_import(1))
        before = await store.snapshot()
        misfiled: pb.ResourceImport = samples.service_export("east", "default", "web")  # type: ignore[assignment]
        doomed = WriteBatch(
            put_exports=[samples.service_export("east", "default", "db")],
            put_imports=[samples.service_import("default", "db"), misfiled],
            put_members=[samples.member("east")],
        )

        with pytest.raises(UNSTORABLE):
            await store.commit(doomed)

        await self._assert_untouched(store, before)

    async def test_a_failed_batch_does_not_disturb_batches_committed_beside_it(
        self, store_factory: StoreFactory
    ) -> None:
        store, _ = await open_new(store_factory)
        misfiled: pb.ResourceExport = samples.member("east")  # type: ignore[assignment]
        good = [puts_one_import(n) for n in range(3)]

        results = await asyncio.gather(
            store.commit(good[0]),
            store.commit(WriteBatch(put_exports=[misfiled])),
            store.commit(good[1]),
            store.commit(good[2]),
            return_exceptions=True,
        )

        assert isinstance(results[1], UNSTORABLE)
        assert sorted(result for result in results if isinstance(result, int)) == [1, 2, 3]
        assert len((await store.snapshot()).imports) == 3

    async def test_close_is_idempotent(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)

        await store.close()
        await store.close()

    async def _assert_untouched(self, store: Store, before: Snapshot) -> None:
        assert await store.snapshot() == before
        assert store.revision == before.revision
        assert await store.import_changes_since(store.epoch, before.revision) == []
        # The failed batch consumed no revision.
        assert await store.commit(puts_one_import(99)) == before.revision + 1

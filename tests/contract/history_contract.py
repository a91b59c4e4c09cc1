"""The contract's half about history: epochs, the import change log, compaction."""

from __future__ import annotations

import pytest

from hub.store.base import EpochMismatch, ImportChange, RevisionCompacted, RevisionInFuture, WriteBatch
from tests.contract import samples
from tests.contract.samples import puts_one_import
from tests.contract.store_factory import StoreFactory, open_new


def by_revision_then_name(changes: list[ImportChange]) -> list[ImportChange]:
    """Changes in a canonical order: revision order is contractual, order inside one is not."""
    return sorted(changes, key=lambda change: (change.revision, change.import_name))


class HistoryContract:
    """Watchers resume exactly, or are told precisely why they cannot."""

    async def test_a_restart_keeps_epoch_revision_and_change_log_when_the_backend_keeps_its_epoch(
        self, store_factory: StoreFactory
    ) -> None:
        if not store_factory.keeps_epoch_across_restart:
            pytest.skip("this backend starts a new epoch on every restart")
        store, _ = await open_new(store_factory)
        first = await store.commit(puts_one_import(1))
        await store.commit(puts_one_import(2))
        before = await store.snapshot()

        reopened = await store_factory.reopen(store)
        after = await reopened.open()

        assert (after.epoch, after.revision) == (before.epoch, before.revision)
        assert reopened.revision == before.revision
        assert await reopened.import_changes_since(before.epoch, before.revision) == []
        missed = await reopened.import_changes_since(before.epoch, first)
        assert [(change.revision, change.resource) for change in missed] == [
            (before.revision, samples.service_import("default", "svc-2"))
        ]
        assert await reopened.commit(puts_one_import(3)) == before.revision + 1

    async def test_a_restart_starts_a_new_epoch_when_the_backend_does_not_keep_it(
        self, store_factory: StoreFactory
    ) -> None:
        if store_factory.keeps_epoch_across_restart:
            pytest.skip("this backend keeps its epoch across restarts")
        store, _ = await open_new(store_factory)
        await store.commit(puts_one_import(1))
        before = await store.snapshot()

        reopened = await store_factory.reopen(store)
        after = await reopened.open()

        assert after.epoch != before.epoch
        with pytest.raises(EpochMismatch):
            await reopened.import_changes_since(before.epoch, before.revision)
        assert await reopened.import_changes_since(after.epoch, after.revision) == []

    async def test_import_changes_since_gives_exactly_the_missed_changes_in_order(
        self, store_factory: StoreFactory
    ) -> None:
        store, _ = await open_new(store_factory)
        web = samples.service_import("default", "web")
        db = samples.service_import("default", "db")
        web_two_clusters = samples.service_import("default", "web", clusters=("east", "west"))
        first = await store.commit(WriteBatch(put_imports=[web, db]))
        exports_only = await store.commit(WriteBatch(put_exports=[samples.service_export("east", "default", "web")]))
        third = await store.commit(WriteBatch(put_imports=[web_two_clusters], delete_imports=[db.import_name]))

        everything = await store.import_changes_since(store.epoch, 0)
        after_first = await store.import_changes_since(store.epoch, first)
        after_exports_only = await store.import_changes_since(store.epoch, exports_only)

        third_changes = [
            ImportChange(third, db.import_name, None),
            ImportChange(third, web.import_name, web_two_clusters),
        ]
        assert [change.revision for change in everything] == sorted(change.revision for change in everything)
        assert by_revision_then_name(everything) == [
            ImportChange(first, db.import_name, db),
            ImportChange(first, web.import_name, web),
            *third_changes,
        ]
        assert by_revision_then_name(after_first) == third_changes
        assert by_revision_then_name(after_exports_only) == third_changes

    async def test_import_changes_since_the_current_revision_are_none(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        current = await store.commit(puts_one_import(1))

        assert await store.import_changes_since(store.epoch, current) == []

    async def test_import_changes_since_a_future_revision_raise_revision_in_future(
        self, store_factory: StoreFactory
    ) -> None:
        store, _ = await open_new(store_factory)
        current = await store.commit(puts_one_import(1))

        with pytest.raises(RevisionInFuture) as raised:
            await store.import_changes_since(store.epoch, current + 1)

        assert (raised.value.asked, raised.value.current) == (current + 1, current)

    async def test_import_changes_since_a_foreign_epoch_raise_epoch_mismatch(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        other, _ = await open_new(store_factory)
        await store.commit(puts_one_import(1))

        with pytest.raises(EpochMismatch) as raised:
            await store.import_changes_since(other.epoch, 0)

        assert (raised.value.asked, raised.value.current) == (other.epoch, store.epoch)

    async def test_compact_makes_older_revisions_raise_revision_compacted_naming_the_oldest_resumable_one(
        self, store_factory: StoreFactory
    ) -> None:
        store, _ = await open_new(store_factory)
        revisions = [await store.commit(puts_one_import(n)) for n in range(4)]
        keep_after = revisions[1]

        await store.compact(keep_after)

        for too_old in (0, revisions[0]):
            with pytest.raises(RevisionCompacted) as raised:
                await store.import_changes_since(store.epoch, too_old)
            assert (raised.value.asked, raised.value.oldest) == (too_old, keep_after)
        kept = await store.import_changes_since(store.epoch, keep_after)
        assert [change.revision for change in kept] == revisions[2:]

    async def test_compact_forgets_history_but_not_state(self, store_factory: StoreFactory) -> None:
        store, _ = await open_new(store_factory)
        for n in range(3):
            await store.commit(puts_one_import(n))
        before = await store.snapshot()

        await store.compact(store.revision)

        assert await store.snapshot() == before
        assert await store.import_changes_since(store.epoch, store.revision) == []
        assert await store.commit(puts_one_import(9)) == before.revision + 1

    async def test_compacting_backwards_brings_nothing_back_and_breaks_nothing(
        self, store_factory: StoreFactory
    ) -> None:
        store, _ = await open_new(store_factory)
        revisions = [await store.commit(puts_one_import(n)) for n in range(3)]
        await store.compact(revisions[1])

        await store.compact(revisions[0])

        with pytest.raises(RevisionCompacted):
            await store.import_changes_since(store.epoch, revisions[0])
        assert len(await store.import_changes_since(store.epoch, revisions[1])) == 1

"""The hub's fan-out bus: what a slow watcher may hold is bounded by what its items weigh."""

from __future__ import annotations

from hub.store.base import ImportChange
from hub.watch.batches import ImportBatch
from hub.watch.bus import Bus


def _batch(revision: int, changes: int) -> ImportBatch:
    return ImportBatch(revision, [ImportChange(revision, f"imp-{revision}-{n}", None) for n in range(changes)])


async def test_a_watcher_is_cut_off_by_the_changes_it_holds_not_by_its_batches() -> None:
    bus: Bus[ImportBatch] = Bus(10, lambda batch: len(batch.changes) or 1)
    with bus.subscribe() as slow:
        bus.publish(_batch(1, 6))
        bus.publish(_batch(2, 4))  # 10 changes held: at the limit
        bus.publish(_batch(3, 1))  # one more: cut off
        bus.publish(_batch(4, 1))  # dropped, the watcher resumes from revision 2
        assert [await slow.get(), await slow.get(), await slow.get()] == [_batch(1, 6), _batch(2, 4), None]
        assert slow.overflowed


async def test_a_batch_larger_than_the_limit_still_reaches_a_watcher_that_keeps_up() -> None:
    bus: Bus[ImportBatch] = Bus(10, lambda batch: len(batch.changes) or 1)
    with bus.subscribe() as watcher:
        bus.publish(_batch(1, 25))
        assert await watcher.get() == _batch(1, 25)
        bus.publish(_batch(2, 3))
        assert await watcher.get() == _batch(2, 3)
        assert not watcher.overflowed and watcher.held == 0


async def test_ready_takes_what_is_queued_up_to_a_weight_without_waiting_and_releases_it() -> None:
    bus: Bus[ImportBatch] = Bus(10, lambda batch: len(batch.changes) or 1)
    with bus.subscribe() as watcher:
        assert watcher.ready(100) == []
        bus.publish(_batch(1, 2))
        bus.publish(_batch(2, 3))
        bus.publish(_batch(3, 1))
        assert watcher.ready(4) == [_batch(1, 2), _batch(2, 3)]  # taken until it weighs 4 or more
        assert watcher.held == 1
        assert watcher.ready(100) == [_batch(3, 1)]
        assert watcher.held == 0
        bus.publish(_batch(4, 6))
        bus.publish(_batch(5, 6))  # over the limit: the end marker comes last
        assert watcher.ready(100) == [_batch(4, 6), None]

"""What a SQLite follower (`mchub hub --follow`, hub.replicas.sqlite_source) reads of the leader's data dir.

A watch resuming from before the follower's own history began (it started after the revision:
a rolling update of the replicas) gets the changes from the data dir's change log, then from
its own, each once; from before what the leader compacted, it cannot (a snapshot then).

The follower re-reads every export after the revision moved and hands on only those whose
stored body changed. Bodies are compared as the store keeps them (deterministic protobuf): an
AntreaClusterNetworkPolicy export holds a Struct, whose map a plain serialization writes in
another order, so comparing against that would report every policy as changed after a Rebase.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hub.engine.ledger import Advance
from hub.replicas.follower import FollowedStore, FollowStep, Rebase
from hub.replicas.sqlite_source import SqliteFollowSource
from hub.store.base import ImportChange, MemberRecord, RevisionCompacted, WriteBatch
from hub.store.sqlite import SqliteStore
from tests.contract import samples


def _member(cluster_id: str) -> MemberRecord:
    now = datetime.now(UTC)
    return MemberRecord(cluster_id, "clusterset", "leader", joined=now, last_heartbeat=now)


async def _next_view_refresh(steps: AsyncIterator[FollowStep]) -> Advance:
    """The next step that re-read the REST views (the test's commits each put a member)."""
    async with asyncio.timeout(10):
        async for step in steps:
            assert not isinstance(step, Rebase), "the follower took a snapshot again"
            if step.members:
                return step
    raise AssertionError("the follow ended")


async def test_a_follower_sees_no_export_changed_after_a_rebase_when_none_did(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    await store.open()
    source = SqliteFollowSource(tmp_path, poll_interval=0.005, refresh_interval=0.0)
    steps = source.follow()
    try:
        policy, service = samples.acnp_export("isolation"), samples.service_export("east", "default", "web")
        await store.commit(WriteBatch(put_exports=[policy, service]))
        first = await anext(steps)
        assert isinstance(first, Rebase) and set(first.snapshot.exports) == {policy.export_name, service.export_name}
        await store.commit(WriteBatch(put_members=[_member("east")]))
        step = await _next_view_refresh(steps)
        assert step.exports == {}, f"exports reported changed: {sorted(step.exports)}"
        # A Rebase after the follower fell behind the change log's compaction: the same holds.
        for cluster_id in ("west", "north"):
            await store.commit(
                WriteBatch(
                    put_members=[_member(cluster_id)], put_imports=[samples.service_import("default", cluster_id)]
                )
            )
        await store.compact(store.revision)
        again = await anext(steps)
        assert isinstance(again, Rebase) and again.snapshot.revision == store.revision
        await store.commit(WriteBatch(put_members=[_member("south")]))
        step = await _next_view_refresh(steps)
        assert step.exports == {}, f"exports reported changed: {sorted(step.exports)}"
        # A real change is still seen.
        policy.cluster_network_policy.update({"priority": 11})
        await store.commit(WriteBatch(put_exports=[policy], put_members=[_member("east")]))
        step = await _next_view_refresh(steps)
        assert list(step.exports) == [policy.export_name]
    finally:
        assert isinstance(steps, AsyncGenerator)
        await steps.aclose()
        await source.close()
        await store.close()


async def test_a_watch_resumes_on_a_follower_from_before_its_history_began(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    await store.open()
    source = SqliteFollowSource(tmp_path, poll_interval=0.005)
    steps = source.follow()
    try:
        first = await store.commit(WriteBatch(put_imports=[samples.service_import("default", "a")]))
        await store.commit(WriteBatch(put_imports=[samples.service_import("default", "b")]))
        followed = FollowedStore(source)
        base = await anext(steps)  # the follower starts here, after both
        assert isinstance(base, Rebase)
        followed.rebase(base.snapshot)
        later = await store.commit(WriteBatch(delete_imports=[samples.service_import("default", "a").import_name]))
        step = await anext(steps)
        assert isinstance(step, Advance) and step.revision == later
        followed.append(step.revision, step.changes)

        def seen(changes: list[ImportChange]) -> list[tuple[int, str, bool]]:
            return [(c.revision, c.import_name, c.resource is None) for c in changes]

        assert seen(await followed.import_changes_since(store.epoch, first)) == [
            (first + 1, samples.service_import("default", "b").import_name, False),
            (later, samples.service_import("default", "a").import_name, True),
        ]
        await store.compact(later)
        with pytest.raises(RevisionCompacted):
            await followed.import_changes_since(store.epoch, first)
    finally:
        assert isinstance(steps, AsyncGenerator)
        await steps.aclose()
        await source.close()
        await store.close()

"""Imports: snapshot then Synced with stale names, deltas, resumption across hub and member restarts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hub.app import HubApp
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import Delete, HubSession, Resumed, Synced, Upsert
from tests.integration.hubclient import service_export
from tests.member_hubclient.conftest import HubRunner, SessionFactory
from tests.member_hubclient.recorders import WAIT, ImportRecorder


def _service_imports(recorder: ImportRecorder) -> set[str]:
    return {n for n, i in recorder.applied.items() if i.WhichOneof("payload") == "service_import"}


def _kinds(events: Sequence[object]) -> list[str]:
    return [type(e).__name__ for e in events]


async def _exporter(sessions: SessionFactory, *services: str) -> HubSession:
    east = await sessions.open("east")
    east.replace_all(service_export("east", "default", s) for s in services)
    async with asyncio.timeout(WAIT):
        await east.wait_exports_settled()
    return east


async def _synced(recorder: ImportRecorder, count: int = 1) -> Synced:
    await recorder.wait_for(lambda: sum(isinstance(e, Synced) for e in recorder.events) >= count)
    return [e for e in recorder.events if isinstance(e, Synced)][count - 1]


async def _caught_up(session: HubSession, hub: HubApp) -> None:
    """Until the session has applied everything up to the hub's revision (bookmarks bring it there)."""
    async with asyncio.timeout(WAIT):
        await session.wait_imports_applied(hub.engine.revision)


async def test_a_first_watch_delivers_the_snapshot_then_synced_with_the_stale_names_then_deltas(
    sessions: SessionFactory, hub: HubApp
) -> None:
    east = await _exporter(sessions, "one")
    recorder = ImportRecorder()
    one, ghost = names.service_import_name("default", "one"), "default-ghost-service"
    # The member says it holds "ghost" (e.g. from a previous life): the snapshot will not have it.
    await sessions.open("west", on_import_event=recorder, known_imports=[ghost])
    synced = await _synced(recorder)
    assert synced.reason == pb.SYNCED_REASON_INITIAL
    assert one in synced.names
    assert synced.stale_names == {ghost}
    assert _kinds(recorder.events) == ["Upsert"] * len(synced.names) + ["Synced"]

    mark = len(recorder.events)
    east.set_export(service_export("east", "default", "two"))
    east.remove_export(names.service_export_name("east", "default", "one"))
    two = names.service_import_name("default", "two")
    await recorder.wait_for(lambda: two in recorder.applied and one not in recorder.applied)
    changes = [(type(e).__name__, getattr(e, "import_name", "")) for e in recorder.since(mark)]
    assert ("Upsert", two) in changes and ("Delete", one) in changes
    assert not any(isinstance(e, Synced | Resumed) for e in recorder.since(mark))


async def test_deletes_of_imports_the_member_never_had_are_not_delivered(sessions: SessionFactory, hub: HubApp) -> None:
    recorder = ImportRecorder()
    west = await sessions.open("west", on_import_event=recorder)
    await _synced(recorder)
    # west's own ClusterInfo import goes to every member but west: west hears nothing of it.
    west.set_export(
        pb.ResourceExport(
            export_name=names.cluster_info_export_name("west"),
            cluster_id="west",
            cluster_info=pb.ClusterInfo(cluster_id="west", service_cidr="10.96.0.0/12"),
        )
    )
    async with asyncio.timeout(WAIT):
        await west.wait_exports_settled()
    east = await _exporter(sessions, "after")
    await recorder.wait_for(lambda: names.service_import_name("default", "after") in recorder.applied)
    assert not any(isinstance(e, Delete) for e in recorder.events)
    await east.stop()


async def test_a_watch_resumes_after_a_hub_restart_with_exactly_the_missed_changes(
    sessions: SessionFactory, hubs: HubRunner, hub: HubApp
) -> None:
    east = await _exporter(sessions, "before")
    recorder = ImportRecorder()
    west = await sessions.open("west", on_import_event=recorder)
    await _synced(recorder)
    await _caught_up(west, hub)
    mark = len(recorder.events)

    await hubs.restart()
    east.set_export(service_export("east", "default", "after"))
    after = names.service_import_name("default", "after")
    await recorder.wait_for(lambda: after in recorder.applied)
    await _caught_up(west, hubs.hub)
    tail = [e for e in recorder.since(mark) if not getattr(e, "import_name", "").endswith("-endpoints")]
    assert _kinds(tail) == ["Resumed", "Upsert"]
    assert isinstance(tail[1], Upsert) and tail[1].import_name == after


async def test_a_restarted_member_resumes_from_its_persisted_position_with_no_snapshot(
    sessions: SessionFactory, hubs: HubRunner, hub: HubApp
) -> None:
    east = await _exporter(sessions, "kept", "dropped")
    first = ImportRecorder()
    west = await sessions.open("west", on_import_event=first)
    await _synced(first)
    await _caught_up(west, hub)
    position, known = west.import_position, west.known_imports
    await west.stop()

    # While west is away: one import added, one removed, and the hub restarts.
    east.set_export(service_export("east", "default", "added"))
    east.remove_export(names.service_export_name("east", "default", "dropped"))
    async with asyncio.timeout(WAIT):
        await east.wait_exports_settled()
    await hubs.restart()

    second = ImportRecorder()
    await sessions.open("west", on_import_event=second, watch_from=position, known_imports=known)
    added, dropped = names.service_import_name("default", "added"), names.service_import_name("default", "dropped")
    await second.wait_for(lambda: added in second.applied and dropped not in second.applied)
    await _caught_up(sessions.opened[-1], hubs.hub)
    changes = [(type(e).__name__, getattr(e, "import_name", "")) for e in second.events]
    # Each Service import comes with its Endpoints import; the Services tell the story.
    assert [c for c in changes if not c[1].endswith("-endpoints")] == [
        ("Resumed", ""),
        ("Upsert", added),
        ("Delete", dropped),
    ]


async def test_a_replaced_hub_store_gives_a_snapshot_and_synced_with_the_stale_names(
    sessions: SessionFactory, hubs: HubRunner, hub: HubApp
) -> None:
    east = await _exporter(sessions, "gone")
    recorder = ImportRecorder()
    west = await sessions.open("west", on_import_event=recorder)
    await _synced(recorder)
    gone = names.service_import_name("default", "gone")
    assert gone in recorder.applied
    await east.stop()  # nobody will export it again

    replaced = await hubs.replace_data_dir()
    synced = await _synced(recorder, 2)
    assert synced.reason == pb.SYNCED_REASON_EPOCH_CHANGED
    assert gone in synced.stale_names
    assert gone not in recorder.applied
    assert west.import_position.epoch == replaced.engine.epoch != hub.engine.epoch


async def test_a_consumer_that_fails_gets_the_event_again(sessions: SessionFactory, hub: HubApp) -> None:
    await _exporter(sessions, "flaky")
    recorder = ImportRecorder()
    failures = [RuntimeError("the API server is down")]

    async def consumer(event: object) -> None:
        if failures and isinstance(event, Upsert):
            raise failures.pop()
        await recorder(event)  # type: ignore[arg-type]

    west = await sessions.open("west", on_import_event=consumer)
    await _synced(recorder)
    assert names.service_import_name("default", "flaky") in recorder.applied
    assert west.watch_streams_opened == 2


async def test_a_watch_that_fell_behind_resumes_without_a_snapshot(sessions: SessionFactory, hub: HubApp) -> None:
    east = await _exporter(sessions, "before")
    recorder = ImportRecorder()
    west = await sessions.open("west", on_import_event=recorder)
    await _synced(recorder)
    await _caught_up(west, hub)
    mark = len(recorder.events)

    # What the hub's bus does to a subscriber whose queue overflowed: later items are dropped
    # and the stream ends with ABORTED ("resume from your last revision").
    for subscribers in hub.engine.imports_bus._subs.values():
        for subscription in subscribers:
            subscription.overflow()
    east.set_export(service_export("east", "default", "during"))
    during = names.service_import_name("default", "during")
    await recorder.wait_for(lambda: during in recorder.applied)
    await _caught_up(west, hub)
    tail = [e for e in recorder.since(mark) if not getattr(e, "import_name", "").endswith("-endpoints")]
    assert _kinds(tail) == ["Resumed", "Upsert"]
    assert west.watch_streams_opened == 2


async def test_a_member_whose_channel_takes_small_messages_gets_batches_that_fit_it(
    sessions: SessionFactory, hub: HubApp
) -> None:
    # 1,500 Services' imports are about 250 KB: more than the member's 64 KiB messages, so its
    # snapshot comes in several batches, each under its limit (not one it would refuse forever).
    await _exporter(sessions, *(f"svc-{i}" for i in range(1500)))
    recorder = ImportRecorder()
    west = await sessions.open("west", on_import_event=recorder, config={"max_message_bytes": 64 * 1024})
    synced = await _synced(recorder)
    assert len(synced.names) == 3000
    assert west._watch is not None and west._watch.streams_opened == 1

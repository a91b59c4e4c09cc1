"""WatchImports: snapshot + SYNCED, deltas, resumption, bookmarks, delivery scope."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hub.app import HubApp
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import MemberFactory, read_until_synced, service_export


def _services(view: dict[str, pb.ResourceImport]) -> set[str]:
    return {n for n, i in view.items() if i.WhichOneof("payload") == "service_import"}


async def _next_service_change(stream: AsyncIterator[pb.WatchImportsResponse]) -> tuple[str, str]:
    """(event kind, import name) of the next change to a ServiceImport."""
    while True:
        event = await _next_change(stream)
        name = event.upsert.import_name or event.delete.import_name
        if name.endswith("-service"):
            return event.WhichOneof("event") or "", name


async def _next_change(stream: AsyncIterator[pb.WatchImportsResponse]) -> pb.WatchImportsResponse:
    """The next upsert or delete, skipping bookmarks."""
    while True:
        event = await asyncio.wait_for(anext(stream), 5)
        if event.WhichOneof("event") in ("upsert", "delete"):
            return event


async def test_a_first_watch_gets_a_snapshot_then_synced_then_deltas(connect: MemberFactory) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "one"))
    stream = west.watch()
    snapshot, synced = await read_until_synced(stream)
    assert _services(snapshot) == {names.service_import_name("default", "one")}
    assert synced.synced.reason == pb.SYNCED_REASON_INITIAL

    await east.export(service_export("east", "default", "two"))
    event = await _next_change(stream)
    assert event.upsert.import_name.startswith("default-two-")
    assert event.revision > synced.revision


async def test_a_watcher_resuming_from_an_old_revision_gets_exactly_the_missed_changes(
    connect: MemberFactory,
) -> None:
    east, west = await connect("east"), await connect("west")
    session = east.export_session()
    await session.upsert(service_export("east", "default", "kept"))
    _, synced = await read_until_synced(west.watch())

    await session.upsert(service_export("east", "default", "added"))
    await session.delete(names.service_export_name("east", "default", "kept"))

    stream = west.watch(epoch=synced.epoch, revision=synced.revision)
    first = await anext(stream)
    assert first.WhichOneof("event") == "resumed"
    seen = [await _next_service_change(stream), await _next_service_change(stream)]
    assert seen == [
        ("upsert", names.service_import_name("default", "added")),
        ("delete", names.service_import_name("default", "kept")),
    ]


async def test_a_watcher_with_a_foreign_epoch_gets_a_snapshot_and_synced(connect: MemberFactory) -> None:
    east = await connect("east")
    await east.export(service_export("east", "default", "one"))
    west = await connect("west")
    snapshot, synced = await read_until_synced(west.watch(epoch="not-this-hub", revision=3))
    assert synced.synced.reason == pb.SYNCED_REASON_EPOCH_CHANGED
    assert _services(snapshot) == {names.service_import_name("default", "one")}


async def test_an_idle_watcher_gets_bookmarks_with_the_current_revision(connect: MemberFactory, hub: HubApp) -> None:
    east = await connect("east")
    stream = east.watch()
    _, synced = await read_until_synced(stream)
    await east.announce()  # a write that changes no import
    while True:
        event = await asyncio.wait_for(anext(stream), 5)
        if event.WhichOneof("event") == "bookmark":
            break
    assert event.revision == hub.engine.revision > synced.revision


async def test_a_cluster_info_import_is_not_delivered_to_the_cluster_it_describes(
    connect: MemberFactory,
) -> None:
    east, west = await connect("east"), await connect("west")
    info = pb.ResourceExport(
        export_name=names.cluster_info_export_name("east"),
        cluster_id="east",
        cluster_info=pb.ClusterInfo(
            cluster_id="east",
            service_cidr="10.96.0.0/12",
            gateway_infos=[pb.GatewayInfo(gateway_ip="192.0.2.10")],
        ),
    )
    [answer] = await east.export(info)
    assert answer.status.verdict == pb.VERDICT_ACCEPTED
    east_view, _ = await read_until_synced(east.watch())
    west_view, _ = await read_until_synced(west.watch())
    assert names.cluster_info_import_name("east") not in east_view
    assert west_view[names.cluster_info_import_name("east")].cluster_info.service_cidr == "10.96.0.0/12"


def _flattened(response: pb.WatchImportsResponse) -> list[tuple[str, int, str]]:
    """(kind, revision, import name) of each change a message carries, in either form."""
    kind = response.WhichOneof("event")
    if kind == "changes":
        return [
            (c.WhichOneof("change") or "", c.revision, c.upsert.import_name or c.delete.import_name)
            for c in response.changes.changes
        ]
    if kind in ("upsert", "delete"):
        return [(kind, response.revision, response.upsert.import_name or response.delete.import_name)]
    return []


async def _read_changes(
    stream: AsyncIterator[pb.WatchImportsResponse], count: int
) -> tuple[list[tuple[str, int, str]], list[pb.WatchImportsResponse]]:
    """The next ``count`` changes (bookmarks skipped) and the messages that carried them."""
    changes: list[tuple[str, int, str]] = []
    messages = []
    while len(changes) < count:
        response = await asyncio.wait_for(anext(stream), 5)
        if _flattened(response):
            messages.append(response)
            changes += _flattened(response)
    return changes, messages


async def test_a_batched_watcher_gets_the_snapshot_in_one_message_and_the_same_changes_as_one_per_message(
    connect: MemberFactory,
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(*(service_export("east", "default", f"svc-{i}") for i in range(40)))
    plain, batched = west.watch(), west.watch(batched=True)
    plain_snapshot, plain_synced = await read_until_synced(plain)
    first = await asyncio.wait_for(anext(batched), 5)
    assert first.WhichOneof("event") == "changes"
    assert len(first.changes.changes) == 80  # a ServiceImport and an Endpoints import each
    assert {c.revision for c in first.changes.changes} == {first.revision}
    batched_snapshot, batched_synced = await read_until_synced(batched)
    assert batched_snapshot == {}  # all of it came in the first message
    assert {c.upsert.import_name for c in first.changes.changes} == set(plain_snapshot)
    assert batched_synced.revision == plain_synced.revision == first.revision

    session = east.export_session()
    for i in range(10):
        await session.upsert(service_export("east", "default", f"more-{i}"))
    await session.delete(names.service_export_name("east", "default", "svc-0"))
    plain_changes, _ = await _read_changes(plain, 22)
    batched_changes, messages = await _read_changes(batched, 22)
    assert batched_changes == plain_changes
    assert [kind for kind, _, _ in batched_changes] == ["upsert"] * 20 + ["delete"] * 2
    assert all(m.WhichOneof("event") == "changes" for m in messages)
    # Each message's revision is complete: the last change it carries is of that revision.
    assert all(m.revision == m.changes.changes[-1].revision for m in messages)


async def test_a_batched_watcher_resumes_from_a_message_revision_with_exactly_what_came_after_it(
    connect: MemberFactory,
) -> None:
    east, west = await connect("east"), await connect("west")
    session = east.export_session()
    await session.upsert(service_export("east", "default", "first"))
    stream = west.watch(batched=True)
    _, synced = await read_until_synced(stream)
    await session.upsert(service_export("east", "default", "second"))
    _, [applied] = await _read_changes(stream, 1)

    await session.upsert(service_export("east", "default", "third"))
    await session.delete(names.service_export_name("east", "default", "first"))
    resumed = west.watch(synced.epoch, applied.revision, batched=True)
    assert (await anext(resumed)).WhichOneof("event") == "resumed"
    changes, messages = await _read_changes(resumed, 4)
    assert [(kind, name) for kind, _, name in changes if name.endswith("-service")] == [
        ("upsert", names.service_import_name("default", "third")),
        ("delete", names.service_import_name("default", "first")),
    ]
    assert len(messages) == 1  # the missed changes are ready together: one message

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

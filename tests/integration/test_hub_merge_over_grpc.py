"""Two members exporting through a real hub (TLS, tokens, SQLite) on port 0."""

from __future__ import annotations

import asyncio

from hub.app import HubApp
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import (
    Member,
    MemberFactory,
    endpoints_export,
    read_until_synced,
    service_export,
)


def hub_status(member: Member, cluster: str) -> tuple[int, str]:
    """The verdict the hub holds for a member's default/nginx export."""
    stored = member.hub.engine.index.exports[names.service_export_name(cluster, "default", "nginx")]
    return stored.status.verdict, stored.status.reason


async def test_two_members_with_different_port_names_get_one_import_with_the_union(
    connect: MemberFactory,
) -> None:
    east, west = await connect("east"), await connect("west")
    [a] = await east.export(service_export("east", "default", "nginx", [("http", 80)]))
    await asyncio.sleep(0.01)
    [b] = await west.export(service_export("west", "default", "nginx", [("metrics", 9090)]))
    assert a.revision > 0 and b.revision > a.revision
    # As the newest mcs-api conformance suite expects: the union, and Conflict on both.
    assert (b.status.verdict, b.status.reason) == (pb.VERDICT_CONFLICT, "PortConflict")
    assert hub_status(east, "east") == (pb.VERDICT_CONFLICT, "PortConflict")

    snapshot, _ = await read_until_synced(east.watch())
    imp = snapshot[names.service_import_name("default", "nginx")]
    assert sorted((p.name, p.port) for p in imp.service_import.ports) == [("http", 80), ("metrics", 9090)]
    assert list(imp.service_import.clusters) == ["east", "west"]


async def test_same_port_name_with_another_number_is_won_by_the_oldest_and_both_hear_of_the_conflict(
    connect: MemberFactory,
) -> None:
    east, west = await connect("east"), await connect("west")
    east_session = east.export_session()
    first = await east_session.upsert(service_export("east", "default", "nginx", [("http", 80)]))
    assert first.status.verdict == pb.VERDICT_ACCEPTED
    await asyncio.sleep(0.01)
    [second] = await west.export(service_export("west", "default", "nginx", [("http", 8080)]))
    assert second.status.verdict == pb.VERDICT_CONFLICT
    assert second.status.reason == "PortConflict"

    # The older exporter learns of the conflict without asking.
    change = await east_session.next_unsolicited()
    assert change.export_name == names.service_export_name("east", "default", "nginx")
    assert change.status.verdict == pb.VERDICT_CONFLICT
    assert change.status.reason == "PortConflict"

    snapshot, _ = await read_until_synced(west.watch())
    imp = snapshot[names.service_import_name("default", "nginx")]
    assert [(p.name, p.port) for p in imp.service_import.ports] == [("http", 80)]


async def test_the_import_lives_until_the_last_exporter_unexports(connect: MemberFactory, hub: HubApp) -> None:
    east, west = await connect("east"), await connect("west")
    east_s, west_s = east.export_session(), west.export_session()
    for session, cluster, ip in ((east_s, "east", "10.96.0.1"), (west_s, "west", "10.112.0.1")):
        await session.upsert(service_export(cluster, "prod", "web", cluster_ip=ip))
        await session.upsert(endpoints_export(cluster, "prod", "web", [ip]))
    service_import = names.service_import_name("prod", "web")
    endpoints_import = names.endpoints_import_name("prod", "web")
    eps = hub.engine.index.imports[endpoints_import].endpoints
    assert sorted(a.ip for s in eps.subsets for a in s.addresses) == ["10.112.0.1", "10.96.0.1"]

    await east_s.delete(names.service_export_name("east", "prod", "web"))
    await east_s.delete(names.endpoints_export_name("east", "prod", "web"))
    assert service_import in hub.engine.index.imports
    eps = hub.engine.index.imports[endpoints_import].endpoints
    assert [a.ip for s in eps.subsets for a in s.addresses] == ["10.112.0.1"]

    answer = await west_s.delete(names.service_export_name("west", "prod", "web"))
    assert answer.status.verdict == pb.VERDICT_DELETED
    await west_s.delete(names.endpoints_export_name("west", "prod", "web"))
    assert service_import not in hub.engine.index.imports
    assert endpoints_import not in hub.engine.index.imports


async def test_an_unchanged_re_export_writes_nothing(connect: MemberFactory, hub: HubApp) -> None:
    east = await connect("east")
    session = east.export_session()
    export = service_export("east", "default", "nginx")
    first = await session.upsert(export)
    revision = hub.engine.revision
    again = await session.upsert(export)
    assert again.revision == 0
    assert again.status == first.status
    assert hub.engine.revision == revision


async def test_the_sync_bracket_deletes_exports_the_member_no_longer_has(connect: MemberFactory, hub: HubApp) -> None:
    east = await connect("east")
    await east.export(
        service_export("east", "default", "a"),
        service_export("east", "default", "b"),
    )
    session = east.export_session()
    begun = await session.send(pb.ExportRequest(sync_begin=pb.SyncBegin()))
    assert begun.sync_begun
    await session.upsert(service_export("east", "default", "a"))
    ended = await session.send(pb.ExportRequest(sync_end=pb.SyncEnd()))
    assert list(ended.sync_end.deleted) == [names.service_export_name("east", "default", "b")]
    assert names.service_import_name("default", "b") not in hub.engine.index.imports
    assert names.service_import_name("default", "a") in hub.engine.index.imports

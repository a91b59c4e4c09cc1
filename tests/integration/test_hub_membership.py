"""Membership over the wire and REST: leaving (rpc Leave), the operator removing a member, rejoining.

A member that leaves takes its announce, its exports and what was merged from them with it,
and the ClusterSet counts only the members that remain; a member that just stops stays,
Disconnected. The operator removes a member with DELETE /api/v1/members/CLUSTER_ID (a dry run
lists what goes; `revokeTokens=true` revokes its hub tokens); a removed member that is still
running hears it on its Export stream and joins again with a fresh sync bracket.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import grpc
import pytest

from hub.app import HubApp
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import Member, MemberFactory, endpoints_export, service_export
from tests.integration.rest_fixtures import (  # noqa: F401 (the fixtures clock, hub, http)
    FakeClock,
    bearer,
    clock_fixture,
    clocked_hub_fixture,
    http_fixture,
)


async def clusterset_status(http: aiohttp.ClientSession, token: str) -> dict[str, Any]:
    async with http.get("/api/v1/clusterset", headers=bearer(token)) as response:
        assert response.status == 200, await response.text()
        body: dict[str, Any] = await response.json()
        return body["status"]  # type: ignore[no-any-return]


async def leave(member: Member, cluster_id: str | None = None) -> pb.LeaveResponse:
    answer: pb.LeaveResponse = await member.stub.Leave(
        pb.LeaveRequest(cluster_id=member.cluster_id if cluster_id is None else cluster_id)
    )
    return answer


NGINX_IMPORT = names.service_import_name("default", "nginx")


async def test_a_member_that_leaves_takes_its_announce_exports_and_their_imports_with_it(
    hub: HubApp, connect: MemberFactory
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(
        service_export("east", "default", "nginx"), endpoints_export("east", "default", "nginx", ["1.1.1.1"])
    )
    await west.export(service_export("west", "default", "nginx"), service_export("west", "default", "only-west"))

    answer = await leave(west)

    assert answer.was_member
    assert sorted(answer.deleted_exports) == sorted(
        [names.service_export_name("west", "default", n) for n in ("nginx", "only-west")]
    )
    assert answer.revision == hub.engine.revision
    index = hub.engine.index
    assert set(index.members) == {"east"}
    assert index.owned_by("west", admin=False) == set()
    assert list(index.imports[NGINX_IMPORT].service_import.clusters) == ["east"]
    assert names.service_import_name("default", "only-west") not in index.imports


async def test_leaving_again_or_unknown_is_ok_and_writes_nothing(hub: HubApp, connect: MemberFactory) -> None:
    east = await connect("east")
    assert (await leave(east)).was_member
    revision = hub.engine.revision
    again = await leave(east)
    assert (again.was_member, list(again.deleted_exports), again.revision) == (False, [], 0)
    assert hub.engine.revision == revision


async def test_a_member_leaves_only_for_itself_and_the_admin_cannot_leave(hub: HubApp, connect: MemberFactory) -> None:
    east, west = await connect("east"), await connect("west")
    with pytest.raises(grpc.aio.AioRpcError) as other:
        await leave(east, "west")
    assert other.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as admin:
        await connect.admin().stub.Leave(pb.LeaveRequest(cluster_id="west"))
    assert admin.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as empty:
        await leave(east, "")
    assert empty.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED)
    assert set(hub.engine.index.members) == {"east", "west"}
    del west


async def test_the_clusterset_counts_only_the_members_that_remain_and_a_stopped_one_stays_disconnected(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory, clock: FakeClock
) -> None:
    east, west, north = await connect("east"), await connect("west"), await connect("north")
    clock.advance(25)
    await east.announce()
    await north.announce()
    clock.advance(6)  # west stopped without leaving: 31 s without an announce
    status = await clusterset_status(http, hub.admin_token)
    assert (status["totalClusters"], status["readyClusters"], status["conditions"][0]["status"]) == (3, 2, "False")
    assert "west" in status["conditions"][0]["message"]

    await leave(north)  # north leaves: it no longer counts; west is still there, Disconnected
    status = await clusterset_status(http, hub.admin_token)
    assert (status["totalClusters"], status["readyClusters"]) == (2, 1)
    assert {s["clusterID"] for s in status["clusterStatuses"]} == {"east", "west"}

    await west.announce()  # west comes back: every member that remains is connected
    status = await clusterset_status(http, hub.admin_token)
    assert (status["totalClusters"], status["readyClusters"]) == (2, 2)
    assert status["conditions"][0]["status"] == "True"


async def test_a_member_that_left_joins_again_with_the_same_cluster_id_and_token(
    hub: HubApp, connect: MemberFactory
) -> None:
    east = await connect("east")
    await east.export(service_export("east", "default", "nginx"))
    await leave(east)
    assert "east" not in hub.engine.index.members

    await east.announce()
    [answer] = await east.export(service_export("east", "default", "nginx"))
    assert answer.status.verdict == pb.VERDICT_ACCEPTED
    assert "east" in hub.engine.index.members
    assert list(hub.engine.index.imports[NGINX_IMPORT].service_import.clusters) == ["east"]


async def test_a_dry_run_lists_what_removing_a_member_takes_and_changes_nothing(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory, clock: FakeClock
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "nginx"))
    await west.export(service_export("west", "default", "nginx"), service_export("west", "default", "only-west"))
    clock.advance(40)
    await east.announce()
    revision = hub.engine.revision

    async with http.delete("/api/v1/members/west", params={"dryRun": "All"}, headers=bearer(hub.admin_token)) as r:
        assert r.status == 200, await r.text()
        plan = await r.json()

    assert hub.engine.revision == revision and "west" in hub.engine.index.members
    assert plan["clusterID"] == "west" and plan["dryRun"] is True
    assert plan["connected"] is False and plan["heartbeatAgeSeconds"] >= 40
    assert plan["announce"] == names.member_announce_name("west")
    assert sorted(plan["exports"]) == sorted(
        [names.service_export_name("west", "default", n) for n in ("nginx", "only-west")]
    )
    only_west = [names.endpoints_import_name("default", "only-west"), names.service_import_name("default", "only-west")]
    assert plan["importsDeleted"] == only_west
    assert NGINX_IMPORT in plan["importsChanged"]
    assert plan["tokens"] == ["member-west"]
    del east


async def test_removing_a_member_can_revoke_its_tokens_and_it_is_then_refused_with_the_reason(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    west = await connect("west")
    await west.export(service_export("west", "default", "nginx"))
    params = {"revokeTokens": "true"}
    async with http.delete("/api/v1/members/west", params=params, headers=bearer(hub.admin_token)) as r:
        assert r.status == 200, await r.text()
        removed = await r.json()
    assert removed["dryRun"] is False and removed["revokedTokens"] == ["member-west"]
    assert removed["exports"] == [names.service_export_name("west", "default", "nginx")]
    assert "west" not in hub.engine.index.members and NGINX_IMPORT not in hub.engine.index.imports
    assert [t.name for t in hub.tokens.list() if t.cluster_id == "west"] == []

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await west.announce()
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "revoked" in (refused.value.details() or "")
    assert "west" not in hub.engine.index.members


async def test_a_removed_member_still_running_is_told_and_rejoins_with_a_new_sync_bracket(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east = await connect("east")
    session = east.export_session()
    await session.send(pb.ExportRequest(sync_begin=pb.SyncBegin()))
    await session.upsert(service_export("east", "default", "nginx"))
    await session.send(pb.ExportRequest(sync_end=pb.SyncEnd()))

    async with http.delete("/api/v1/members/east", headers=bearer(hub.admin_token)) as r:
        assert r.status == 200, await r.text()

    with pytest.raises(grpc.aio.AioRpcError) as ended:
        while True:
            await session.next_unsolicited(10)
    assert ended.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "removed" in (ended.value.details() or "")
    # Its token was kept: it announces again and resends what it has in a new bracket.
    await east.announce()
    again = east.export_session()
    await again.send(pb.ExportRequest(sync_begin=pb.SyncBegin()))
    answer = await again.upsert(service_export("east", "default", "nginx"))
    assert answer.status.verdict == pb.VERDICT_ACCEPTED
    assert NGINX_IMPORT in hub.engine.index.imports

"""Ending the ClusterSet with the SQLite store: DELETE /api/v1/clusterset (what `mcctl destroy` calls).

The hub deletes every announce, export and import, watchers hear every import deleted, and
from then on members are refused with FAILED_PRECONDITION and the reason, also after a
restart on the same data dir. A hub configured with another ClusterSet ID serves that one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from hub.app import HubApp
from mcapi import names
from tests.integration.hub_fixtures import hub_config, rest_session
from tests.integration.hubclient import Member, MemberFactory, read_until_synced, service_export

NGINX_IMPORT = names.service_import_name("default", "nginx")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def http(hub: HubApp) -> AsyncIterator[aiohttp.ClientSession]:
    async with rest_session(hub) as session:
        yield session


async def delete_clusterset(http: aiohttp.ClientSession, token: str, **params: str) -> tuple[int, Any]:
    async with http.delete("/api/v1/clusterset", headers=bearer(token), params=params) as response:
        return response.status, await response.json()


async def test_deleting_the_clusterset_removes_everything_and_refuses_members_with_the_reason(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "nginx"))
    await west.export(service_export("west", "default", "nginx"))
    watch = west.watch()
    snapshot, _ = await read_until_synced(watch)
    assert NGINX_IMPORT in snapshot

    status, body = await delete_clusterset(http, hub.admin_token)

    assert status == 200, body
    assert body["deleted"] == hub.config.cluster_set_id
    assert body["members"] == ["east", "west"]
    assert sorted(body["exports"]) == sorted(
        [names.service_export_name(c, "default", "nginx") for c in ("east", "west")]
    )
    index = hub.engine.index
    assert (index.members, index.exports, index.imports) == ({}, {}, {})
    deleted = {(await asyncio.wait_for(anext(watch), 10)).delete.import_name for _ in snapshot}
    assert deleted == set(snapshot)

    with pytest.raises(grpc.aio.AioRpcError) as announce:
        await east.announce()
    assert announce.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "test-clusterset" in (announce.value.details() or "")
    assert "deleted" in (announce.value.details() or "")
    session = east.export_session()
    with pytest.raises(grpc.aio.AioRpcError) as export:
        await session.upsert(service_export("east", "default", "nginx"))
    assert export.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    async with http.get("/api/v1/clusterset", headers=bearer(hub.admin_token)) as response:
        assert response.status == 404
        assert "deleted" in (await response.json())["message"]
    assert hub.engine.index.members == {}


async def test_only_the_admin_deletes_the_clusterset_and_a_dry_run_changes_nothing(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east = await connect("east")
    await east.export(service_export("east", "default", "nginx"))
    revision = hub.engine.revision
    status, _ = await delete_clusterset(http, east.token)
    assert status == 403
    status, plan = await delete_clusterset(http, hub.admin_token, dryRun="All")
    assert status == 200 and plan["dryRun"] is True
    assert plan["members"] == ["east"]
    assert plan["imports"] == [names.endpoints_import_name("default", "nginx"), NGINX_IMPORT]
    assert hub.engine.revision == revision
    await east.announce()


async def test_a_deleted_clusterset_stays_deleted_after_a_restart_and_another_id_is_served(tmp_path: Path) -> None:
    first = HubApp(hub_config(tmp_path / "hub"))
    await first.start()
    factory = MemberFactory(first)
    try:
        await factory("east")
        async with rest_session(first) as http:
            status, _ = await delete_clusterset(http, first.admin_token)
            assert status == 200
    finally:
        await factory.close()
        await first.stop()

    again = HubApp(hub_config(tmp_path / "hub"))
    await again.start()
    east = Member(again, "east", again.tokens.create("member-east-again", cluster_id="east"))
    try:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await east.announce()
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        async with rest_session(again) as http:
            status, body = await delete_clusterset(http, again.admin_token)
            assert status == 404, body
    finally:
        await east.close()
        await again.stop()

    other = HubApp(hub_config(tmp_path / "hub", cluster_set_id="another-clusterset"))
    await other.start()
    east = Member(other, "east", other.tokens.create("member-east-other", cluster_id="east"))
    try:
        answer = await east.announce()
        assert answer.cluster_set_id == "another-clusterset"
    finally:
        await east.close()
        await other.stop()

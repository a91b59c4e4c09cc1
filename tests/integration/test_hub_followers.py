"""Replicas that do not lead serve watches: a SQLite-store follower process reading the
leader's data dir (`mchub hub --follow`), in-process here so the test can compare histories.

A member watching through a follower gets exactly what it gets from the leader (the same
epoch, revisions and events), before and after the leader restarts; a follower refuses every
write with UNAVAILABLE naming the leader and changes nothing; a watch resumes across replicas
with only the changes it missed. The kube-store replicas: test_hub_followers_kube.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from hub.app import HubApp
from hub.config import SqliteStoreConfig
from hub.engine import Engine
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import HubEndpoint, HubSession, HubSessionConfig, ImportEvent, Upsert
from tests.integration.hub_fixtures import hub_config, rest_session
from tests.integration.hubclient import (
    Member,
    endpoints_export,
    export_refused_by_a_follower,
    read_until_synced,
    service_export,
)

Event = tuple[str, int, str, str, bytes]


def _event(response: pb.WatchImportsResponse) -> Event:
    kind = response.WhichOneof("event") or ""
    name = response.upsert.import_name if kind == "upsert" else response.delete.import_name
    body = response.upsert.SerializeToString(deterministic=True) if kind == "upsert" else b""
    return (response.epoch, response.revision, kind, name, body)


async def _until_revision(stream: AsyncIterator[pb.WatchImportsResponse], revision: int) -> list[Event]:
    """Every event but bookmarks, until a bookmark or a SYNCED marker says `revision` was sent whole."""
    events: list[Event] = []
    async with asyncio.timeout(20):
        async for response in stream:
            kind = response.WhichOneof("event")
            if kind != "bookmark":
                events.append(_event(response))
            if kind in ("bookmark", "synced") and response.revision >= revision:
                return events
    raise AssertionError("watch ended")


async def _caught_up(follower: HubApp, leader: Engine) -> None:
    """Until the follower served the leader's revision (it polls the change log: no event to await)."""
    deadline = asyncio.get_running_loop().time() + 10
    while not (follower.serves_watches() and follower.engine.revision == leader.revision):
        assert asyncio.get_running_loop().time() < deadline, "the follower did not catch up"
        await asyncio.sleep(0.02)


async def _names(hub: HubApp, path: str) -> list[str]:
    async with (
        rest_session(hub, headers={"Authorization": f"Bearer {hub.admin_token}"}) as http,
        http.get(path) as response,
    ):
        assert response.status == 200, path
        return [item["metadata"]["name"] for item in (await response.json())["items"]]


@pytest.fixture
async def leader(tmp_path: Path) -> AsyncIterator[HubApp]:
    app = HubApp(hub_config(tmp_path / "hub", leader_address="leader.example:50051"))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
async def follower(leader: HubApp, tmp_path: Path) -> AsyncIterator[HubApp]:
    app = HubApp(
        hub_config(tmp_path / "hub", store=SqliteStoreConfig(follow=True), leader_address="leader.example:50051")
    )
    await app.start()
    try:
        await _caught_up(app, leader.engine)
        yield app
    finally:
        await app.stop()


def _member(hub: HubApp, cluster_id: str, token: str) -> Member:
    return Member(hub, cluster_id, token)


async def test_a_member_watching_through_a_follower_gets_what_the_leader_sends(
    leader: HubApp, follower: HubApp
) -> None:
    east_token = leader.tokens.create("member-east", cluster_id="east")
    west_token = leader.tokens.create("member-west", cluster_id="west")
    east = _member(leader, "east", east_token)
    via_leader, via_follower = _member(leader, "west", west_token), _member(follower, "west", west_token)
    try:
        await east.announce()
        await via_leader.announce()
        await east.export(service_export("east", "default", "web"))
        await _caught_up(follower, leader.engine)

        from_leader, from_follower = via_leader.watch(), via_follower.watch()
        first = leader.engine.watch_revision
        leader_events = await _until_revision(from_leader, first)
        follower_events = await _until_revision(from_follower, first)
        assert follower_events == leader_events
        assert leader_events[-1][2] == "synced"

        session = east.export_session()
        await session.upsert(service_export("east", "default", "api"))
        await session.upsert(endpoints_export("east", "default", "api", ["10.0.0.7"]))
        await session.delete("east-default-web-service")
        last = leader.engine.watch_revision
        leader_events = await _until_revision(from_leader, last)
        follower_events = await _until_revision(from_follower, last)
        assert follower_events == leader_events
        assert {e[3] for e in leader_events} >= {"default-api-service", "default-web-service"}

        # The REST read views too (exports and members of a SQLite follower lag a few seconds).
        for path in ("/api/v1/resourceimports", "/api/v1/resourceexports", "/api/v1/members"):
            deadline = asyncio.get_running_loop().time() + 10
            while (views := [await _names(hub, path) for hub in (leader, follower)])[1] != views[0]:
                assert asyncio.get_running_loop().time() < deadline, (path, views)
                await asyncio.sleep(0.1)
            assert views[0], path
    finally:
        for member in (east, via_leader, via_follower):
            await member.close()


async def test_a_follower_never_accepts_a_write(leader: HubApp, follower: HubApp) -> None:
    token = leader.tokens.create("member-east", cluster_id="east")
    east = _member(follower, "east", token)
    revision = leader.engine.revision
    try:
        calls = {
            "Announce": east.stub.Announce(pb.AnnounceRequest(cluster_id="east", cluster_set_id="test-clusterset")),
            "Leave": east.stub.Leave(pb.LeaveRequest(cluster_id="east")),
            "ReportImportStatus": east.stub.ReportImportStatus(
                pb.ReportImportStatusRequest(cluster_id="east", import_name="x", succeeded=True)
            ),
            "ReportImportStatuses": east.stub.ReportImportStatuses(
                pb.ReportImportStatusesRequest(
                    cluster_id="east", statuses=[pb.ImportStatus(import_name="x", succeeded=True)]
                )
            ),
        }
        for name, call in calls.items():
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, name
            assert "leader.example:50051" in (refused.value.details() or ""), name
            assert ("mchub-leader", "leader.example:50051") in tuple(refused.value.trailing_metadata() or ()), name
        await export_refused_by_a_follower(east.stub, service_export("east", "default", "web"), "leader.example:50051")
        async with rest_session(follower, headers={"Authorization": f"Bearer {follower.admin_token}"}) as http:
            async with http.delete("/api/v1/members/east") as response:
                assert response.status == 503
            async with http.get("/readyz") as response:
                assert response.status == 503  # takes no writes
            async with http.get("/readyz/watches") as response:
                assert response.status == 200  # serves watches
        assert leader.engine.revision == revision
        assert "east" not in leader.engine.index.members
    finally:
        await east.close()


async def test_a_watch_resumes_on_another_replica_with_only_what_it_missed(leader: HubApp, follower: HubApp) -> None:
    east_token = leader.tokens.create("member-east", cluster_id="east")
    west_token = leader.tokens.create("member-west", cluster_id="west")
    east = _member(leader, "east", east_token)
    via_leader, via_follower = _member(leader, "west", west_token), _member(follower, "west", west_token)
    try:
        await east.announce()
        await via_leader.announce()
        await east.export(service_export("east", "default", "web"))
        stream = via_leader.watch()
        _, synced = await read_until_synced(stream)
        await east.export(service_export("east", "default", "api"))
        await _caught_up(follower, leader.engine)

        resumed = via_follower.watch(synced.epoch, synced.revision)
        first = await anext(resumed)
        assert first.WhichOneof("event") == "resumed"
        assert first.epoch == synced.epoch
        missed = [await anext(resumed) for _ in range(2)]
        assert {m.upsert.import_name for m in missed} == {"default-api-service", "default-api-endpoints"}
        assert all(m.revision > synced.revision for m in missed)

        # And back: from the follower's position to a leader that restarted (same data dir, same epoch).
        position = missed[-1]
        await via_leader.close()
        await leader.stop()
        restarted = HubApp(hub_config(leader.config.data_dir))
        await restarted.start()
        again = _member(restarted, "west", west_token)
        try:
            back = again.watch(position.epoch, position.revision)
            assert (await anext(back)).WhichOneof("event") == "resumed"
        finally:
            await again.close()
            await restarted.stop()
    finally:
        for member in (east, via_follower):
            await member.close()


async def test_a_member_session_writes_to_the_leader_and_watches_through_a_follower(
    leader: HubApp, follower: HubApp
) -> None:
    assert leader.ca_cert is not None
    ca = leader.ca_cert.read_bytes()
    config = HubSessionConfig(
        cluster_id="west",
        cluster_set_id="test-clusterset",
        initial_backoff=0.05,
        max_backoff=0.3,
        watch_server=f"https://{follower.grpc_target}",
    )
    received: list[str] = []
    arrived = asyncio.Event()

    async def consume(event: ImportEvent) -> None:
        if isinstance(event, Upsert):
            received.append(event.import_name)
            if event.import_name == "default-web-service":
                arrived.set()

    west_token = leader.tokens.create("member-west", cluster_id="west")
    west = HubSession(HubEndpoint(f"https://{leader.grpc_target}", west_token, ca), config, on_import_event=consume)
    east = _member(leader, "east", leader.tokens.create("member-east", cluster_id="east"))
    await west.start()
    try:
        await east.announce()
        await east.export(service_export("east", "default", "web"))
        async with asyncio.timeout(10):
            await arrived.wait()
        assert "west" in leader.engine.index.members  # it announced to the leader
        assert follower.engine.imports_bus.count() == 1  # and watches through the follower
        assert leader.engine.imports_bus.count() == 0
    finally:
        await west.stop()
        await east.close()

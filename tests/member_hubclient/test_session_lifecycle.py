"""A session announces, reports its connection state, and stops without leaving anything running."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from hub.app import HubApp
from hub.auth.identity import Identity
from hub.grpc.service import CommonAreaService
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import ConnectionState, HubSession
from tests.integration.hubclient import service_export
from tests.member_hubclient.conftest import HubRunner, SessionFactory
from tests.member_hubclient.recorders import WAIT, ImportRecorder


async def _connected(session: HubSession) -> None:
    async with asyncio.timeout(WAIT):
        await session.wait_for_state(lambda s: s.connected)


async def test_a_session_announces_and_says_it_is_connected(sessions: SessionFactory, hub: HubApp) -> None:
    changes: list[ConnectionState] = []
    session = await sessions.open("east", on_state_change=changes.append)
    await _connected(session)
    assert session.state.last_error == ""
    assert session.state.epoch == hub.engine.epoch
    assert session.state.heartbeat_interval == 1.0
    assert "east" in hub.engine.index.members
    assert changes and changes[-1].connected


async def test_the_session_keeps_announcing_every_heartbeat(
    sessions: SessionFactory, hub: HubApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    announces: list[str] = []
    third = asyncio.Event()
    real_announce = hub.engine.announce

    async def spy(who: Identity, request: pb.AnnounceRequest) -> pb.AnnounceResponse:
        announces.append(request.cluster_id)
        if len(announces) == 3:
            third.set()
        return await real_announce(who, request)

    monkeypatch.setattr(hub.engine, "announce", spy)
    session = await sessions.open("east")
    async with asyncio.timeout(WAIT):  # the hub asks for one every second
        await third.wait()
    assert announces == ["east"] * 3
    assert session.state.connected


async def test_losing_the_hub_is_surfaced_and_the_session_reconnects_when_it_returns(
    sessions: SessionFactory, hubs: HubRunner, hub: HubApp
) -> None:
    session = await sessions.open("east")
    await _connected(session)
    await hubs.stop()
    async with asyncio.timeout(WAIT):
        state = await session.wait_for_state(lambda s: not s.connected)
    assert state.last_error and not state.needs_operator
    await hubs.start()
    await _connected(session)


async def test_a_bad_token_is_surfaced_as_needing_the_operator_and_retried_slowly(
    sessions: SessionFactory, hub: HubApp
) -> None:
    session = await sessions.open("east", token="not-a-token")
    async with asyncio.timeout(WAIT):
        state = await session.wait_for_state(lambda s: s.needs_operator)
    assert not state.connected
    assert "token" in state.last_error
    attempts = session.announce_attempts
    # A "consistently" check: over a second, a slow retry (0.5 s here) asks at most a few times.
    await asyncio.sleep(1.0)
    assert session.announce_attempts - attempts <= 3
    # Streams wait for a successful announce: they did not hammer the hub either.
    assert session.export_streams_opened == 0


async def test_a_cluster_set_mismatch_is_surfaced_as_needing_the_operator(
    sessions: SessionFactory, hub: HubApp
) -> None:
    session = await sessions.open("east", config={"cluster_set_id": "another-set"})
    async with asyncio.timeout(WAIT):
        state = await session.wait_for_state(lambda s: s.needs_operator)
    assert "another-set" in state.last_error


async def test_import_status_reports_reach_the_hub(sessions: SessionFactory, hub: HubApp) -> None:
    session = await sessions.open("east")
    await _connected(session)
    session.report_import_status("default-nginx-service", False, "ApplyFailed", "namespace missing")
    async with asyncio.timeout(WAIT):
        await session.wait_reports_sent()
    entry = hub.engine.import_status["default-nginx-service"]["east"]
    assert (entry.succeeded, entry.reason, entry.message) == (False, "ApplyFailed", "namespace missing")


async def test_stop_finishes_pending_exports_and_leaves_no_task_running(sessions: SessionFactory, hub: HubApp) -> None:
    before = asyncio.all_tasks()
    recorder = ImportRecorder()
    session = sessions.build("east", on_import_event=recorder)
    async with session:
        await _connected(session)
        async with asyncio.timeout(WAIT):
            await session.wait_for_state(lambda s: s.exports_synced and s.imports_synced)
        session.set_export(service_export("east", "default", "last-minute"))
    assert "east-default-last-minute-service" in hub.engine.index.exports
    assert not session.state.connected
    leaked = [t for t in asyncio.all_tasks() - before if _is_client_task(t)]
    assert leaked == []


async def test_stop_is_prompt_when_the_hub_is_gone(sessions: SessionFactory, hubs: HubRunner, hub: HubApp) -> None:
    session = await sessions.open("east", on_import_event=ImportRecorder())
    await _connected(session)
    await hubs.stop()
    session.set_export(service_export("east", "default", "never-sent"))
    async with asyncio.timeout(3.0):  # stop_timeout is 2 s
        await session.stop()
    assert session.verdict("east-default-never-sent-service") is None


def _is_client_task(task: asyncio.Task[object]) -> bool:
    """A task of the session or of grpc's client side (the in-process hub's own handlers aside)."""
    if task.done():
        return False
    if task.get_name().startswith("hubclient-"):
        return True
    code = getattr(task.get_coro(), "cr_code", None)
    filename = code.co_filename if code is not None else ""
    return "member/hubclient" in filename or "grpc/aio/_call" in filename or "grpc/aio/_channel" in filename


def _report_calls(hub: HubApp, method: str) -> float:
    value = hub.metrics.registry.get_sample_value("mchub_import_status_report_calls_total", {"method": method})
    return value or 0.0


async def test_a_burst_of_import_status_reports_goes_in_a_few_calls(sessions: SessionFactory, hub: HubApp) -> None:
    session = await sessions.open("east")
    await _connected(session)
    for index in range(1200):
        session.report_import_status(f"default-svc-{index}-service", index % 2 == 0, "Succeeded")
    async with asyncio.timeout(WAIT):
        await session.wait_reports_sent()
    assert len(hub.engine.import_status) == 1200
    assert hub.engine.import_status["default-svc-1199-service"]["east"].succeeded is False
    assert 3 <= _report_calls(hub, "ReportImportStatuses") <= 4  # 500 to a call at most
    assert _report_calls(hub, "ReportImportStatus") == 0


async def test_a_hub_without_batched_reports_gets_them_one_at_a_time(
    sessions: SessionFactory, hubs: HubRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an older hub answers for a method it does not have: UNIMPLEMENTED."""

    async def unimplemented(_self: object, _request: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")

    monkeypatch.setattr(CommonAreaService, "ReportImportStatuses", unimplemented)
    hub = await hubs.start()  # its service answers with the method above
    session = await sessions.open("east")
    await _connected(session)
    for index in range(3):
        session.report_import_status(f"default-svc-{index}-service", True, "Succeeded")
    async with asyncio.timeout(WAIT):
        await session.wait_reports_sent()
    assert sorted(hub.engine.import_status) == [f"default-svc-{index}-service" for index in range(3)]
    assert _report_calls(hub, "ReportImportStatus") == 3

"""Leaving the ClusterSet from a session: `stop(leave=True)` withdraws, then calls Leave, once.

A plain `stop()` is a restart or a crash, not a leave: the hub keeps the member (it turns
Disconnected). A leave the hub cannot hear in time is given up after `stop_timeout`.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from hub.app import HubApp
from hub.auth.identity import Identity
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import HubSession
from tests.integration.hubclient import service_export
from tests.member_hubclient.conftest import SESSION_CONFIG, HubRunner, SessionFactory
from tests.member_hubclient.recorders import WAIT


async def _settled(session: HubSession) -> None:
    async with asyncio.timeout(WAIT):
        await session.wait_for_state(lambda s: s.connected and s.exports_synced)
        await session.wait_exports_settled()


async def test_stopping_with_leave_sends_the_withdrawals_first_then_leaves_and_announces_no_more(
    sessions: SessionFactory, hub: HubApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_announce, real_leave = hub.engine.announce, hub.engine.leave

    async def announce(who: Identity, request: pb.AnnounceRequest) -> pb.AnnounceResponse:
        calls.append("announce")
        return await real_announce(who, request)

    async def leave(who: Identity, request: pb.LeaveRequest) -> pb.LeaveResponse:
        # When the hub hears the leave, the withdrawal has been answered already.
        calls.append(f"leave with {len(hub.engine.index.owned_by(who.cluster_id, admin=False))} exports")
        return await real_leave(who, request)

    monkeypatch.setattr(hub.engine, "announce", announce)
    monkeypatch.setattr(hub.engine, "leave", leave)
    session = await sessions.open("east")
    session.set_export(service_export("east", "default", "nginx"))
    await _settled(session)
    assert hub.engine.index.owned_by("east", admin=False)

    session.replace_all([])
    await session.stop(leave=True)

    assert calls[-1] == "leave with 0 exports"
    assert calls.count("leave with 0 exports") == 1
    assert session.left is True
    assert "east" not in hub.engine.index.members
    await asyncio.sleep(hub.config.heartbeat_interval * 1.5)  # a heartbeat would have come by now
    assert calls[-1].startswith("leave"), "announced after leaving"
    assert "east" not in hub.engine.index.members


async def test_a_plain_stop_is_not_a_leave(sessions: SessionFactory, hub: HubApp) -> None:
    session = await sessions.open("east")
    session.set_export(service_export("east", "default", "nginx"))
    await _settled(session)
    await session.stop()
    assert session.left is None
    assert "east" in hub.engine.index.members
    assert hub.engine.index.owned_by("east", admin=False)


async def test_a_leave_the_hub_cannot_hear_is_given_up_after_the_stop_timeout(
    sessions: SessionFactory, hubs: HubRunner, hub: HubApp
) -> None:
    session = await sessions.open("east")
    await _settled(session)
    await hubs.stop()
    started = time.monotonic()
    await session.stop(leave=True)
    took = time.monotonic() - started
    assert session.left is False
    assert took < SESSION_CONFIG.stop_timeout * 2 + 1, f"stop(leave=True) took {took:.1f}s"
    del hub


async def test_a_session_refused_because_the_clusterset_ended_says_so(sessions: SessionFactory, hub: HubApp) -> None:
    session = await sessions.open("east")
    await _settled(session)
    await hub.end_clusterset()
    async with asyncio.timeout(WAIT):
        state = await session.wait_for_state(lambda s: not s.connected and "deleted" in s.last_error)
    assert hub.config.cluster_set_id in state.last_error
    assert "east" not in hub.engine.index.members

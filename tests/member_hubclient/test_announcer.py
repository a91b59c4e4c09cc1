"""The announcer's schedule, against a stub that records when it is asked: at start and every
heartbeat, at once when poked (the heartbeat then follows the poke), never before a failing
hub's delay however often poked, and again right after a call that a poke came during."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc

from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient.announce import Announcer, AnnounceSettings
from member.hubclient.errors import TemporaryHubError
from member.hubclient.retry import RetryPacing
from member.hubclient.state import StateTracker

HEARTBEAT = 0.3


class Stub:
    """Announce answers after ``delay`` seconds, or fails while ``failing``."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.failing = False
        self.delay = 0.0
        self.answered = asyncio.Event()

    async def Announce(self, request: pb.AnnounceRequest, **_: Any) -> pb.AnnounceResponse:
        self.asked.append(asyncio.get_running_loop().time())
        if self.delay:
            await asyncio.sleep(self.delay)
        self.answered.set()
        if self.failing:
            raise TemporaryHubError(grpc.StatusCode.UNAVAILABLE, "the hub is away")
        return pb.AnnounceResponse(epoch="e1")


@asynccontextmanager
async def announcing(stub: Stub, retry: float = 0.5) -> AsyncIterator[Announcer]:
    settings = AnnounceSettings(RetryPacing(retry, retry, retry), 1.0, heartbeat_interval=HEARTBEAT)
    announcer = Announcer(stub, lambda: pb.AnnounceRequest(cluster_id="east"), StateTracker(), settings)  # type: ignore[arg-type]
    task = asyncio.create_task(announcer.run())
    try:
        yield announcer
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_it_announces_at_start_and_every_heartbeat() -> None:
    stub = Stub()
    async with announcing(stub) as announcer:
        await asyncio.sleep(HEARTBEAT * 2.5)
    assert announcer.attempts == len(stub.asked) == 3
    gaps = [later - earlier for earlier, later in zip(stub.asked, stub.asked[1:], strict=False)]
    assert all(HEARTBEAT * 0.9 <= gap <= HEARTBEAT * 2 for gap in gaps)


async def test_a_poke_announces_at_once_and_the_next_heartbeat_follows_it() -> None:
    stub = Stub()
    async with announcing(stub) as announcer:
        await stub.answered.wait()
        await asyncio.sleep(HEARTBEAT / 3)
        announcer.poke()
        await asyncio.sleep(HEARTBEAT * 0.2)
        assert len(stub.asked) == 2
        poked = stub.asked[1]
        await asyncio.sleep(HEARTBEAT * 1.6)
    # Nothing at the schedule the poke overtook; the heartbeat after the poke.
    assert len(stub.asked) == 3
    assert HEARTBEAT * 0.9 <= stub.asked[2] - poked <= HEARTBEAT * 2


async def test_a_failing_hub_is_not_asked_again_before_its_delay_however_often_poked() -> None:
    stub = Stub()
    stub.failing = True
    async with announcing(stub, retry=0.5) as announcer:
        await stub.answered.wait()
        for _ in range(10):
            announcer.poke()
            await asyncio.sleep(0.03)
        assert len(stub.asked) == 1
        await asyncio.sleep(0.4)
    # The backoff's delay is 0.5 s +-20%: never before 0.4 s.
    assert len(stub.asked) == 2 and stub.asked[1] - stub.asked[0] >= 0.39


async def test_a_poke_during_an_announce_asks_again_right_after_it() -> None:
    stub = Stub()
    stub.delay = 0.1
    async with announcing(stub) as announcer:
        await asyncio.sleep(0.05)  # the first announce is under way
        announcer.poke()
        await asyncio.sleep(0.2)
    assert len(stub.asked) == 2 and stub.asked[1] - stub.asked[0] < HEARTBEAT / 2

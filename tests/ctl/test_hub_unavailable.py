"""mcctl rides out a hub that briefly cannot answer (503: a replica between leaders, a store
hiccup): it asks again with backoff, for a bounded time, then fails with the hub's own words."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from ctl.access import HubAccess, HubRest
from ctl.errors import OperationFailed
from tests.loopback_http import serving

NOT_LEADER = {"kind": "Status", "reason": "ServiceUnavailable", "message": "this hub replica is not the leader"}


@dataclass
class FlakyHub:
    """A loopback HTTP endpoint standing in for the hub: ``status`` (503 unless told) with
    ``headers`` for the first ``unavailable`` requests."""

    unavailable: int
    status: int = 503
    headers: dict[str, str] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    # When each request arrived (the event loop's clock).
    arrivals: list[float] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(request.method)
        self.arrivals.append(asyncio.get_running_loop().time())
        if len(self.seen) <= self.unavailable:
            return web.json_response(NOT_LEADER, status=self.status, headers=self.headers)
        return web.json_response({"items": [{"metadata": {"name": "x"}}]})


@pytest.fixture
async def serve() -> AsyncIterator[AsyncExitStack]:
    """Where the test's stand-in hubs are served until it ends."""
    async with AsyncExitStack() as servers:
        yield servers


async def _start(hub: FlakyHub, servers: AsyncExitStack) -> HubAccess:
    url = await servers.enter_async_context(serving(hub.handle))
    return HubAccess(url, "token")


async def test_a_read_is_asked_again_until_the_hub_answers(serve: AsyncExitStack) -> None:
    hub = FlakyHub(unavailable=2)
    async with HubRest(await _start(hub, serve)) as rest:
        items = await rest.items("/api/v1/resourceexports")
    assert [i["metadata"]["name"] for i in items] == ["x"]
    assert hub.seen == ["GET", "GET", "GET"]


async def test_a_write_is_asked_again_until_the_hub_answers(serve: AsyncExitStack) -> None:
    hub = FlakyHub(unavailable=1)
    async with HubRest(await _start(hub, serve)) as rest:
        await rest.write("DELETE", "/api/v1/clusters/west")
    assert hub.seen == ["DELETE", "DELETE"]


async def test_a_hub_that_stays_unavailable_fails_with_its_own_message_after_the_bound(
    serve: AsyncExitStack,
) -> None:
    hub = FlakyHub(unavailable=1_000)
    async with HubRest(await _start(hub, serve), unavailable_for=0.6) as rest:
        with pytest.raises(OperationFailed, match="not the leader"):
            await rest.write("DELETE", "/api/v1/clusters/west")
        with pytest.raises(OperationFailed, match="503"):
            await rest.json("/api/v1/resourceexports")
    assert 4 <= len(hub.seen) <= 12


async def test_a_hub_that_fails_otherwise_than_503_is_not_asked_again(serve: AsyncExitStack) -> None:
    hub = FlakyHub(unavailable=1, status=500)
    async with HubRest(await _start(hub, serve)) as rest:
        with pytest.raises(OperationFailed, match="500"):
            await rest.json("/api/v1/resourceexports")
    assert hub.seen == ["GET"]


async def test_a_503_is_asked_again_no_sooner_than_its_retry_after(serve: AsyncExitStack) -> None:
    hub = FlakyHub(unavailable=1, headers={"Retry-After": "1"})
    async with HubRest(await _start(hub, serve)) as rest:
        items = await rest.items("/api/v1/resourceexports")
    assert [i["metadata"]["name"] for i in items] == ["x"]
    assert hub.seen == ["GET", "GET"]
    # Without the header the first retry comes after about 0.2 s.
    assert hub.arrivals[1] - hub.arrivals[0] >= 0.99


async def test_a_503_whose_retry_after_is_beyond_the_bound_fails_at_once(serve: AsyncExitStack) -> None:
    hub = FlakyHub(unavailable=1_000, headers={"Retry-After": "30"})
    loop = asyncio.get_running_loop()
    async with HubRest(await _start(hub, serve)) as rest:
        started = loop.time()
        with pytest.raises(OperationFailed, match="not the leader") as caught:
            await rest.json("/api/v1/resourceexports")
        elapsed = loop.time() - started
    assert hub.seen == ["GET"]
    assert elapsed < 5  # not the 10 s of asking again
    assert "503" in str(caught.value) and "asks to be asked again in 30 s" in str(caught.value)


async def test_a_retry_after_within_the_bound_that_outlasts_what_is_left_of_it_is_told_as_still_unavailable(
    serve: AsyncExitStack,
) -> None:
    # Asked again after 1 s, then told 1 s again with about 0.5 s of the 1.5 s bound left.
    hub = FlakyHub(unavailable=1_000, headers={"Retry-After": "1"})
    async with HubRest(await _start(hub, serve), unavailable_for=1.5) as rest:
        with pytest.raises(OperationFailed, match="not the leader") as caught:
            await rest.json("/api/v1/resourceexports")
    assert hub.seen == ["GET", "GET"]
    assert "still unavailable" in str(caught.value)
    assert "asks to be asked again" not in str(caught.value), "1 s is not past a 1.5 s bound"

"""mcctl rides out a hub that briefly cannot answer (503: a replica between leaders, a store
hiccup): it asks again with backoff, for a bounded time, then fails with the hub's own words."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from ctl.access import HubAccess, HubRest
from ctl.errors import OperationFailed

NOT_LEADER = {"kind": "Status", "reason": "ServiceUnavailable", "message": "this hub replica is not the leader"}


@dataclass
class FlakyHub:
    """A loopback HTTP endpoint standing in for the hub: 503 for the first ``unavailable`` requests."""

    unavailable: int
    seen: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(request.method)
        if len(self.seen) <= self.unavailable:
            return web.json_response(NOT_LEADER, status=503)
        return web.json_response({"items": [{"metadata": {"name": "x"}}]})


@pytest.fixture
async def serve() -> AsyncIterator[list[web.AppRunner]]:
    runners: list[web.AppRunner] = []
    yield runners
    for runner in runners:
        await runner.cleanup()


async def _start(hub: FlakyHub, runners: list[web.AppRunner]) -> HubAccess:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", hub.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    runners.append(runner)
    port = runner.addresses[0][1]
    return HubAccess(f"http://127.0.0.1:{port}", "token")


async def test_a_read_is_asked_again_until_the_hub_answers(serve: list[web.AppRunner]) -> None:
    hub = FlakyHub(unavailable=2)
    async with HubRest(await _start(hub, serve)) as rest:
        items = await rest.items("/api/v1/resourceexports")
    assert [i["metadata"]["name"] for i in items] == ["x"]
    assert hub.seen == ["GET", "GET", "GET"]


async def test_a_write_is_asked_again_until_the_hub_answers(serve: list[web.AppRunner]) -> None:
    hub = FlakyHub(unavailable=1)
    async with HubRest(await _start(hub, serve)) as rest:
        await rest.write("DELETE", "/api/v1/clusters/west")
    assert hub.seen == ["DELETE", "DELETE"]


async def test_a_hub_that_stays_unavailable_fails_with_its_own_message_after_the_bound(
    serve: list[web.AppRunner],
) -> None:
    hub = FlakyHub(unavailable=1_000)
    async with HubRest(await _start(hub, serve), unavailable_for=0.6) as rest:
        with pytest.raises(OperationFailed, match="not the leader"):
            await rest.write("DELETE", "/api/v1/clusters/west")
        with pytest.raises(OperationFailed, match="503"):
            await rest.json("/api/v1/resourceexports")
    assert 4 <= len(hub.seen) <= 12

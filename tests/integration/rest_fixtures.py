"""A hub on a controllable clock with an HTTPS session to its REST facade, for the REST suites.

Import the fixtures into a test module (`import clock_fixture, clocked_hub_fixture, http_fixture`;
they are named `clock`, `hub` and `http`):
- `clock`: a FakeClock the hub reads (advance it to age heartbeats);
- `hub`: a started HubApp (SQLite store in tmp_path) on that clock;
- `http`: an aiohttp session that trusts the hub's CA, for its https:// REST address.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from hub.app import HubApp
from tests.integration.hub_fixtures import hub_config, rest_session


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture(name="clock")
def clock_fixture() -> FakeClock:
    return FakeClock()


@pytest.fixture(name="hub")
async def clocked_hub_fixture(tmp_path: Path, clock: FakeClock) -> AsyncIterator[HubApp]:
    app = HubApp(hub_config(tmp_path / "hub"), clock=clock)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture(name="http")
async def http_fixture(hub: HubApp) -> AsyncIterator[aiohttp.ClientSession]:
    async with rest_session(hub) as session:
        yield session


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}

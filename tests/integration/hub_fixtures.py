"""The in-process hub fixtures (`hub`, `connect`) and `hub_config`, shared by the
integration and browser suites: their conftests import them from here.

- `hub`: a started HubApp (TLS on, SQLite store in tmp_path, ports 0).
- `connect`: factory giving a `Member` (a gRPC client with its own token)
  for a cluster ID; `connect.admin()` gives one with the admin token.
- `rest_session(hub)`: an aiohttp session on the hub's REST facade that verifies
  the hub's certificate against its CA, as an operator's client does.
Everything is stopped and closed at teardown.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from hub.app import HubApp
from hub.config import HubConfig
from tests.integration.hubclient import MemberFactory


def hub_config(data_dir: Path, **overrides: object) -> HubConfig:
    base = {
        "data_dir": data_dir,
        "grpc_address": "127.0.0.1:0",
        "rest_address": "127.0.0.1:0",
        "bookmark_interval": 0.5,
    }
    base.update(overrides)
    return HubConfig(**base)  # type: ignore[arg-type]


def rest_ssl(hub: HubApp) -> ssl.SSLContext | bool:
    """How a client trusts the hub's REST facade: its generated CA, else the system's (True)."""
    if hub.ca_cert is None:
        return True
    return ssl.create_default_context(cafile=str(hub.ca_cert))


def rest_session(hub: HubApp, **kwargs: object) -> aiohttp.ClientSession:
    """A session on the hub's REST URL that verifies its certificate (close it, or use `async with`)."""
    connector = aiohttp.TCPConnector(ssl=rest_ssl(hub))
    return aiohttp.ClientSession(base_url=hub.rest_url, connector=connector, **kwargs)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def running_hub(data_dir: Path, **overrides: object) -> AsyncIterator[HubApp]:
    """A started HubApp of ``hub_config(data_dir, **overrides)``, stopped on the way out."""
    app = HubApp(hub_config(data_dir, **overrides))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[HubApp]:
    async with running_hub(tmp_path / "hub") as app:
        yield app


@pytest.fixture
async def connect(hub: HubApp) -> AsyncIterator[MemberFactory]:
    factory = MemberFactory(hub)
    try:
        yield factory
    finally:
        await factory.close()

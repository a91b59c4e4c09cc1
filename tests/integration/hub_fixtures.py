"""The in-process hub fixtures (`hub`, `connect`) and `hub_config`, shared by the
integration and browser suites: their conftests import them from here.

- `hub`: a started HubApp (TLS on, SQLite store in tmp_path, ports 0).
- `connect`: factory giving a `Member` (a gRPC client with its own token)
  for a cluster ID; `connect.admin()` gives one with the admin token.
Everything is stopped and closed at teardown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

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


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[HubApp]:
    app = HubApp(hub_config(tmp_path / "hub"))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
async def connect(hub: HubApp) -> AsyncIterator[MemberFactory]:
    factory = MemberFactory(hub)
    try:
        yield factory
    finally:
        await factory.close()

"""A hub on a fixed port with short intervals, for tests that stop and restart it.

Members find it again after `restart()` because the port is picked up front;
`replace_data_dir()` starts it on a fresh store that keeps the TLS material and
tokens, as an operator who wiped only the store would.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from hub.app import HubApp
from hub.config import HubConfig
from member.hubclient import HubEndpoint


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class HubRunner:
    data_dir: Path
    port: int = field(default_factory=free_port)
    current: HubApp | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    """HubConfig fields to set (e.g. global_cidr)."""

    def config(self) -> HubConfig:
        return replace(self.base_config(), **self.overrides)

    def base_config(self) -> HubConfig:
        return HubConfig(
            data_dir=self.data_dir,
            grpc_address=f"127.0.0.1:{self.port}",
            rest_address="127.0.0.1:0",
            # Whole seconds: AnnounceResponse carries an int32 of seconds.
            heartbeat_interval=1.0,
            disconnect_after=3.0,
            bookmark_interval=0.2,
            status_interval=0.5,
            shutdown_grace=0.5,
        )

    @property
    def hub(self) -> HubApp:
        assert self.current is not None, "no hub is running"
        return self.current

    async def start(self) -> HubApp:
        assert self.current is None
        app = HubApp(self.config())
        await app.start()
        self.current = app
        return app

    async def stop(self) -> None:
        if self.current is not None:
            app, self.current = self.current, None
            await app.stop()

    async def restart(self) -> HubApp:
        await self.stop()
        return await self.start()

    async def replace_data_dir(self) -> HubApp:
        """Stop, then start on a new, empty store that keeps the TLS material and the tokens."""
        await self.stop()
        old, self.data_dir = self.data_dir, self.data_dir.with_name(self.data_dir.name + "-new")
        self.data_dir.mkdir()
        shutil.copytree(old / "tls", self.data_dir / "tls")
        for name in ("tokens.db", "admin.token"):
            shutil.copy2(old / name, self.data_dir / name)
        return await self.start()

    def endpoint(self, token: str) -> HubEndpoint:
        ca = (self.data_dir / "tls" / "ca.crt").read_bytes()
        return HubEndpoint(server=f"https://127.0.0.1:{self.port}", token=token, ca_cert=ca)


@pytest.fixture
async def hubs(tmp_path: Path) -> AsyncIterator[HubRunner]:
    """A HubRunner in tmp_path, stopped at teardown (import it into a conftest to use it)."""
    runner = HubRunner(tmp_path / "hub")
    try:
        yield runner
    finally:
        await runner.stop()


@pytest.fixture
async def hub(hubs: HubRunner) -> HubApp:
    """The runner's hub, started."""
    return await hubs.start()

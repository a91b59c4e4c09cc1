"""The hub process's parts (hub.app, started by a kube.manager.Manager): a start that fails part of
the way leaves nothing listening, and a status pass that fails does not end the status loop."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from hub.app import HubApp
from tests.integration.hubrunner import HubRunner


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


async def test_a_start_that_fails_at_the_rest_server_stops_the_grpc_server_again(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        runner = HubRunner(tmp_path / "hub", overrides={"rest_address": f"127.0.0.1:{port}", "insecure": True})
        app = HubApp(runner.config())
        with pytest.raises(OSError):
            await app.start()
        assert app.grpc_port and not _listening(app.grpc_port)
        assert not app.started
        await app.stop()  # after a failed start: nothing left to undo, and no error


async def test_a_failed_status_pass_does_not_end_the_status_loop(tmp_path: Path) -> None:
    runner = HubRunner(tmp_path / "hub", overrides={"status_interval": 0.05, "insecure": True})
    app = await runner.start()
    passes: list[int] = []
    three = asyncio.Event()
    refresh = app.refresh_metrics

    def failing_once() -> None:
        passes.append(1)
        if len(passes) >= 3:
            three.set()
        if len(passes) == 1:
            raise RuntimeError("a bug in one pass")
        refresh()

    app.refresh_metrics = failing_once  # type: ignore[method-assign]
    try:
        async with asyncio.timeout(5):
            await three.wait()
    finally:
        await runner.stop()

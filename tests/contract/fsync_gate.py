"""The sqlite store's WAL fsyncs under a test's control (hub.store.sqlite_sync.sync_log)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable

import pytest

from hub.store import sqlite_sync


class FsyncGate:
    """The store's WAL fsyncs, counted; while `held`, each waits until `release` is set
    (`holding` is set once one waits); with `failing`, each fails as a disk would."""

    def __init__(self) -> None:
        self.held = False
        self.failing = False
        self.release = threading.Event()
        self.started = 0
        self.holding = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def sync(self, real: Callable[[str], None], path: str) -> None:
        self.started += 1
        if self.held:
            self._loop.call_soon_threadsafe(self.holding.set)
            self.release.wait()
        if self.failing:
            raise OSError(5, "Input/output error")
        real(path)


@pytest.fixture(name="fsyncs")
async def fsyncs_fixture(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FsyncGate]:
    gate = FsyncGate()
    real = sqlite_sync.sync_log
    monkeypatch.setattr(sqlite_sync, "sync_log", lambda path: gate.sync(real, path))
    try:
        yield gate
    finally:
        gate.release.set()

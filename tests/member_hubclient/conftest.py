"""Fixtures for the member's hub client against a real in-process hub (TLS, SQLite, tokens).

- `hubs`: a `HubRunner` whose gRPC port is picked up front, so the hub can be stopped and
  started again on the same address (`restart()`), on the same data dir or a fresh one
  (`replace_data_dir()`, which keeps the TLS material and tokens, as an operator who wiped
  only the store would). Short heartbeat, bookmark and shutdown intervals.
- `hub`: the runner's first hub, started.
- `sessions`: `await sessions.open(cluster_id, **listeners)` gives a started `HubSession` with
  its own member token and short backoffs; every session is stopped at teardown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from member.hubclient import HubSession, HubSessionConfig
from tests.integration.hubrunner import HubRunner, hub, hubs

# Fast enough for a ~30 s suite, slow enough that a tight loop would show.
SESSION_CONFIG = HubSessionConfig(
    cluster_id="placeholder",
    cluster_set_id="test-clusterset",
    leader_cluster_id="leader",
    initial_backoff=0.05,
    max_backoff=0.3,
    permanent_retry_delay=0.5,
    call_timeout=2.0,
    stop_timeout=2.0,
)


@dataclass
class SessionFactory:
    hubs: HubRunner
    opened: list[HubSession] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)

    def token_for(self, cluster_id: str) -> str:
        """One token per cluster, kept in the hub's token DB (which survives restarts)."""
        if cluster_id not in self.tokens:
            self.tokens[cluster_id] = self.hubs.hub.tokens.create(f"member-{cluster_id}", cluster_id=cluster_id)
        return self.tokens[cluster_id]

    def build(self, cluster_id: str, *, token: str | None = None, **kwargs: Any) -> HubSession:
        """A session not yet started (the test starts it; teardown stops it)."""
        config_overrides = kwargs.pop("config", {})
        config = replace(SESSION_CONFIG, cluster_id=cluster_id, **config_overrides)
        endpoint = self.hubs.endpoint(token if token is not None else self.token_for(cluster_id))
        session = HubSession(endpoint, config, **kwargs)
        self.opened.append(session)
        return session

    async def open(self, cluster_id: str, *, token: str | None = None, **kwargs: Any) -> HubSession:
        session = self.build(cluster_id, token=token, **kwargs)
        await session.start()
        return session

    async def close(self) -> None:
        for session in self.opened:
            await session.stop()


@pytest.fixture
async def sessions(hubs: HubRunner) -> AsyncIterator[SessionFactory]:
    factory = SessionFactory(hubs)
    try:
        yield factory
    finally:
        await factory.close()


# The hub fixtures are shared (tests/integration/hubrunner.py).
__all__ = ["hub", "hubs"]

"""Fixtures for member tests: a real hub (TLS, SQLite) and sandbox member clusters.

- `hubs`: a `HubRunner` (tests/member/harness.py) on a fixed port with short heartbeat
  and shutdown intervals; `await hubs.stop()` / `await hubs.start()` restart it on the same
  address, data and CA, so running members reconnect by themselves.
- `hub`: the runner's hub, started.
- `members`: `await members.join("east", **kwargs)` gives a `JoinedMember`: a sandbox
  cluster "east" set up as the user guide says (token Secret `member-east-token` and a
  ClusterSet `test-clusterset` in kube-system, or the legacy ClusterClaims + v1alpha1
  ClusterSet with `legacy=True`) and a started `MemberApp`; see `join_member` for the
  options. Every member and cluster is stopped at teardown.

The end-to-end suite reuses `HubRunner`, `join_member` and `JoinedMember` from the harness.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hub.app import HubApp
from tests.integration.hubrunner import HubRunner, hub, hubs
from tests.member.harness import JoinedMember, join_member


@dataclass
class MemberFactory:
    hubs: HubRunner
    work_dir: Path
    joined: list[JoinedMember] = field(default_factory=list)

    async def join(self, cluster_name: str, **kwargs: Any) -> JoinedMember:
        member = await join_member(self.hubs.hub, cluster_name, self.work_dir, **kwargs)
        self.joined.append(member)
        return member

    async def close(self) -> None:
        for member in reversed(self.joined):
            await member.aclose()


@pytest.fixture
async def members(hub: HubApp, hubs: HubRunner, tmp_path: Path) -> AsyncIterator[MemberFactory]:
    factory = MemberFactory(hubs, tmp_path / "clusters")
    try:
        yield factory
    finally:
        await factory.close()


# The hub fixtures are shared (tests/integration/hubrunner.py).
__all__ = ["hub", "hubs"]

"""Fixtures for mcctl tests: real sandbox clusters, and the CLI run as a user runs it.

- `mcctl`: runs `ctl.main.main([...])` in a worker thread (the CLI has its own event loop;
  the sandboxes keep serving in the test's loop) and returns its exit code, stdout, stderr.
- `leader`, `member`: started sandbox clusters with the mchub CRDs, and a client for each.
- `hub`: an in-process hub (TLS, SQLite; tests/integration/hub_fixtures.py).
Everything is stopped at teardown.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from ctl.main import main
from kube.client import KubeClient
from sandbox.server import SandboxServer
from tests.integration.hub_fixtures import hub
from tests.kubeenv.cluster import sandbox_cluster

__all__ = ["hub"]


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    def header(self) -> list[str]:
        """The column names of a printed table (its first non-empty line)."""
        first = next(line for line in self.out.splitlines() if line.strip())
        return first.split()


class Mcctl(Protocol):
    async def __call__(self, *argv: str | Path) -> Ran: ...


@pytest.fixture
def mcctl(capsys: pytest.CaptureFixture[str]) -> Mcctl:
    async def run(*argv: str | Path) -> Ran:
        capsys.readouterr()
        code = await asyncio.to_thread(main, [str(a) for a in argv])
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@dataclass(frozen=True)
class Cluster:
    server: SandboxServer
    client: KubeClient

    @property
    def kubeconfig(self) -> Path:
        return self.server.kubeconfig_path


@pytest.fixture
async def leader(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with sandbox_cluster(tmp_path / "leader", name="north") as (server, client):
        yield Cluster(server, client)


@pytest.fixture
async def member(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with sandbox_cluster(tmp_path / "member", name="east", service_cidr="10.112.0.0/16") as (server, client):
        yield Cluster(server, client)

"""Fixtures for the member's import side against a real sandbox API server.

- `member`: a KubeClient for a fresh sandbox cluster (the member "west", mchub CRDs installed).
- `reports`: a `Reports` recorder to pass as the applier's `report`.
- `appliers`: `appliers.new(**options)` gives a started ImportApplier for `member` (cluster
  "west", member Namespace kube-system, 0.1 s retries, no discovery caching unless
  `discovery_ttl` is given, its own metrics registry and import caches), wrapped so that `handle()` returns once
  the event's changes were tried, as the tests of single imports want (the applier itself only
  records the event and returns; `.applier` is the applier). All are stopped at teardown.
  Building a second one is how a test restarts the member.
- `hubs`, `hub`, `sessions`: a real in-process hub and HubSessions (from tests/member_hubclient).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from prometheus_client import CollectorRegistry

from kube.client import KubeClient
from kube.events import EventRecorder
from member.hubclient import ImportEvent
from member.imports import ImportApplier, Outcome
from member.imports.caches import ImportCaches
from tests.kubeenv.cluster import sandbox_cluster
from tests.member_hubclient.conftest import hub, hubs, sessions  # noqa: F401 - fixtures used by the end-to-end test

CLUSTER_ID = "west"
MEMBER_NAMESPACE = "kube-system"
WAIT = 10.0
T = TypeVar("T")


@dataclass
class Reports:
    """Every report(import_name, succeeded, reason, message) call, in order."""

    calls: list[tuple[str, bool, str, str]] = field(default_factory=list)

    def __call__(self, import_name: str, succeeded: bool, reason: str, message: str) -> None:
        self.calls.append((import_name, succeeded, reason, message))

    def last(self, import_name: str) -> tuple[bool, str, str] | None:
        for name, succeeded, reason, message in reversed(self.calls):
            if name == import_name:
                return succeeded, reason, message
        return None

    def count(self, import_name: str) -> int:
        return sum(1 for call in self.calls if call[0] == import_name)


class Settling:
    """An ImportApplier whose handle() waits until the event's changes were tried once."""

    def __init__(self, applier: ImportApplier, registry: CollectorRegistry) -> None:
        self.applier = applier
        self.registry = registry

    async def handle(self, event: ImportEvent) -> None:
        await self.applier.handle(event)
        async with asyncio.timeout(WAIT):
            await self.applier.settled()

    async def retry_blocked(self) -> None:
        await self.applier.retry_blocked()

    async def remove_all(self) -> None:
        await self.applier.remove_all()

    async def stop(self) -> None:
        await self.applier.stop()

    def outcome(self, import_name: str) -> Outcome | None:
        return self.applier.outcome(import_name)


@dataclass
class Appliers:
    client: KubeClient
    reports: Reports
    started: list[ImportApplier] = field(default_factory=list)
    caches: list[ImportCaches] = field(default_factory=list)

    async def new(self, **options: Any) -> Settling:
        """A started importer, with import caches of its own as a member started anew has."""
        registry = CollectorRegistry()
        caches = ImportCaches(self.client, MEMBER_NAMESPACE)
        self.caches.append(caches)
        await caches.start()
        settings: dict[str, Any] = {"retry_interval": 0.1, "discovery_ttl": 0.0, "report": self.reports, **options}
        applier = ImportApplier(
            self.client,
            cluster_id=CLUSTER_ID,
            recorder=EventRecorder(self.client, "mchub-member-test"),
            registry=registry,
            caches=caches,
            **settings,
        )
        await applier.start()
        self.started.append(applier)
        return Settling(applier, registry)

    async def close(self) -> None:
        for applier in self.started:
            await applier.stop()
        for caches in self.caches:
            await caches.stop()
        self.caches.clear()


@pytest.fixture
async def member(tmp_path: Path) -> AsyncIterator[KubeClient]:
    async with sandbox_cluster(tmp_path / "west", name=CLUSTER_ID) as (_, client):
        yield client


@pytest.fixture
def reports() -> Reports:
    return Reports()


@pytest.fixture
async def appliers(member: KubeClient, reports: Reports) -> AsyncIterator[Appliers]:
    factory = Appliers(member, reports)
    try:
        yield factory
    finally:
        await factory.close()


async def eventually(probe: Callable[[], Awaitable[T | None]], wait: float = WAIT) -> T:
    """Poll `probe` (every 50 ms, up to `wait` s) until it returns something other than None/False."""
    async with asyncio.timeout(wait):
        while True:
            value = await probe()
            if value is not None and value is not False:
                return value
            await asyncio.sleep(0.05)

"""Lease leader election between electors sharing a sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kube.client import KubeClient
from kube.errors import ConnectionFailed
from kube.leader import LeaderElector, LeaseTiming
from kube.resources import LEASES

TIMING = LeaseTiming(lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)

Factory = Callable[..., LeaderElector]


class Partitioned:
    """Stands in for a client cut off from the API server."""

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionFailed("partitioned")

    replace = get


@pytest.fixture
async def elector(client: KubeClient, namespace: str) -> AsyncIterator[Factory]:
    made: list[LeaderElector] = []

    def make(identity: str, **kwargs: Any) -> LeaderElector:
        candidate = LeaderElector(client, namespace, "mchub-hub", identity, timing=TIMING, **kwargs)
        made.append(candidate)
        candidate.start()
        return candidate

    try:
        yield make
    finally:
        for candidate in made:
            await candidate.stop()


async def test_one_of_two_candidates_leads_and_writes_the_lease(
    client: KubeClient, namespace: str, elector: Factory
) -> None:
    started = asyncio.Event()

    async def on_started() -> None:
        started.set()

    a = elector("a", on_started_leading=on_started)
    await asyncio.wait_for(a.wait_leading(), 5)
    b = elector("b")
    await asyncio.wait_for(started.wait(), 1)
    lease = await client.get(LEASES, "mchub-hub", namespace)
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 1
    # b keeps trying for longer than a lease lasts, but a keeps renewing.
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(b.wait_leading(), 1.5)
    assert a.is_leader() and not b.is_leader()


async def test_releasing_on_stop_hands_over_at_once(elector: Factory) -> None:
    a = elector("a")
    await asyncio.wait_for(a.wait_leading(), 5)
    b = elector("b")
    loop = asyncio.get_running_loop()
    await a.stop()
    assert not a.is_leader()
    stopped_at = loop.time()
    await asyncio.wait_for(b.wait_leading(), 5)
    # Well before the 1 s lease could have expired: the next retry takes it.
    assert loop.time() - stopped_at < 0.6


async def test_a_crashed_leader_is_replaced_within_the_lease_duration(elector: Factory) -> None:
    a = elector("a")
    await asyncio.wait_for(a.wait_leading(), 5)
    b = elector("b")
    loop = asyncio.get_running_loop()
    await a.stop(release=False)
    crashed_at = loop.time()
    await asyncio.wait_for(b.wait_leading(), 5)
    assert loop.time() - crashed_at <= TIMING.lease_duration + 3 * TIMING.retry_period


async def test_a_leader_that_cannot_renew_steps_down_by_the_renew_deadline(elector: Factory) -> None:
    stopped = asyncio.Event()

    async def on_stopped() -> None:
        stopped.set()

    a = elector("a", on_stopped_leading=on_stopped)
    await asyncio.wait_for(a.wait_leading(), 5)

    a.client = Partitioned()  # type: ignore[assignment]
    loop = asyncio.get_running_loop()
    cut_at = loop.time()
    await asyncio.wait_for(stopped.wait(), 5)
    assert not a.is_leader()
    assert loop.time() - cut_at <= TIMING.renew_deadline + 2 * TIMING.retry_period


async def test_a_leader_whose_lease_is_taken_steps_down(client: KubeClient, namespace: str, elector: Factory) -> None:
    a = elector("a")
    await asyncio.wait_for(a.wait_leading(), 5)
    lease = await client.get(LEASES, "mchub-hub", namespace)
    lease["spec"]["holderIdentity"] = "intruder"
    await client.replace(LEASES, lease)
    await asyncio.wait_for(a.wait_not_leading(), 5)

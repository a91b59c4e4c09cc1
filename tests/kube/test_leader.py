"""Lease leader election between electors sharing a sandbox."""

from __future__ import annotations

import asyncio
import logging
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


class Stalled:
    """The API server as a leader sees it under heavy load: requests get through only once
    `answer()` is called (the real server behind it is untouched)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._answering = asyncio.Event()

    def answer(self) -> None:
        self._answering.set()

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        await self._answering.wait()
        return await self._client.get(*args, **kwargs)

    async def replace(self, *args: Any, **kwargs: Any) -> Any:
        await self._answering.wait()
        return await self._client.replace(*args, **kwargs)

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        await self._answering.wait()
        return await self._client.create(*args, **kwargs)


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
    assert a.holder == "intruder"


async def test_a_leader_stalled_past_its_renew_deadline_steps_down_and_names_no_one_as_the_holder(
    client: KubeClient, namespace: str, elector: Factory
) -> None:
    a = elector("a")
    await asyncio.wait_for(a.wait_leading(), 5)
    stalled = Stalled(client)
    a.client = stalled  # type: ignore[assignment]
    try:
        await asyncio.wait_for(a.wait_not_leading(), 5)
        # The Lease still names "a", but "a" does not lead: pointing callers at it would send
        # them back to a replica that refuses them.
        lease = await client.get(LEASES, "mchub-hub", namespace)
        assert lease["spec"]["holderIdentity"] == "a"
        assert a.holder == ""
    finally:
        stalled.answer()


async def test_a_leader_stalled_past_its_renew_deadline_that_still_holds_the_lease_leads_again_at_once_and_says_so(
    client: KubeClient, namespace: str, elector: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    transitions: list[str] = []

    async def on_started() -> None:
        transitions.append("started")

    async def on_stopped() -> None:
        transitions.append("stopped")

    a = elector("a", on_started_leading=on_started, on_stopped_leading=on_stopped)
    await asyncio.wait_for(a.wait_leading(), 5)
    before = (await client.get(LEASES, "mchub-hub", namespace))["spec"]
    stalled = Stalled(client)
    caplog.set_level(logging.INFO, logger="kube.leader")
    a.client = stalled  # type: ignore[assignment]
    await asyncio.wait_for(a.wait_not_leading(), 5)
    assert "leaseRenewDeadlineExceeded" in [r.getMessage() for r in caplog.records]

    caplog.clear()
    loop = asyncio.get_running_loop()
    answered_at = loop.time()
    stalled.answer()  # no one else took the Lease meanwhile
    await asyncio.wait_for(a.wait_leading(), 5)
    # At once: not after a retry period, let alone after the lease could have expired.
    assert loop.time() - answered_at < TIMING.retry_period
    assert transitions == ["started", "stopped", "started"]
    assert [r.getMessage() for r in caplog.records if r.name == "kube.leader"] == ["leaseReacquired"]
    # The Lease records one continuous tenure: no transition, the same acquireTime.
    after = (await client.get(LEASES, "mchub-hub", namespace))["spec"]
    assert after["holderIdentity"] == "a"
    assert (after["acquireTime"], after["leaseTransitions"]) == (before["acquireTime"], before["leaseTransitions"])

"""DatapathAgent with a fake programmer: serialisation, typed errors, retries, resyncs, readiness, cleanup."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import pytest

from agent.config import AgentConfig, HealthConfig
from agent.errors import DatapathError
from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from agent.runner import DatapathAgent, run_datapath_agent
from agent.state import DesiredDatapath, Role

CONFIG = AgentConfig(enable_gateway=True)
INPUTS = AgentInputs(
    node=LocalNode("east-a", "198.18.1.1"),
    cluster=LocalCluster("east", "10.101.0.0/16"),
    gateway=ActiveGateway("east-a", "198.18.1.1", "198.18.1.1"),
    remotes=(RemoteCluster("west", "10.102.0.0/16", ("198.18.2.1",)),),
)


class FakeDatapath:
    """Records applied states; fails the first ``failures`` applies with a temporary error;
    ``drifted`` makes the next successful apply report changes (something undone from outside)."""

    def __init__(self, failures: int = 0, *, temporary: bool = True) -> None:
        self.drifted = False
        self.applied: list[DesiredDatapath] = []
        self.cleanups = 0
        self.failures = failures
        self.temporary = temporary
        self.attempts = 0
        self.succeeded = asyncio.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        self._applies = asyncio.Condition()

    async def until(self, predicate: Callable[[], bool]) -> None:
        """Until ``predicate()`` holds, checked after every apply (at most 5 s)."""
        async with asyncio.timeout(5), self._applies:
            await self._applies.wait_for(predicate)

    async def apply(self, desired: DesiredDatapath) -> list[str]:
        self.attempts += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # let concurrent updates interleave if they could
            if self.failures > 0:
                self.failures -= 1
                raise DatapathError("netlink busy", temporary=self.temporary)
            self.applied.append(desired)
            self.succeeded.set()
            if len(self.applied) > 1 and desired == self.applied[-2] and not self.drifted:
                return []  # the kernel already matched: nothing written
            self.drifted = False
            return ["changed"]
        finally:
            self.in_flight -= 1
            async with self._applies:
                self._applies.notify_all()

    async def cleanup(self) -> list[str]:
        self.cleanups += 1
        return []


async def test_an_update_computes_and_applies_the_desired_datapath() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake)
    outcome = await agent.update(INPUTS)
    assert outcome.applied
    assert outcome.changes == ("changed",)
    assert fake.applied[0].role is Role.GATEWAY
    assert agent.desired == fake.applied[0]
    await agent.stop(cleanup=False)


async def test_concurrent_updates_are_applied_one_at_a_time() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake)
    await asyncio.gather(*(agent.update(INPUTS) for _ in range(5)))
    assert fake.max_in_flight == 1
    assert len(fake.applied) == 5
    await agent.stop(cleanup=False)


async def test_a_temporary_failure_is_reported_and_retried_until_it_succeeds() -> None:
    fake = FakeDatapath(failures=2)
    agent = DatapathAgent(CONFIG, datapath=fake, backoff_initial=0.01, backoff_max=0.02)
    outcome = await agent.update(INPUTS)
    assert isinstance(outcome.error, DatapathError)
    assert outcome.retrying
    await asyncio.wait_for(fake.succeeded.wait(), 5)
    assert fake.attempts == 3
    assert agent.last_outcome is not None
    assert agent.last_outcome.applied
    await agent.stop(cleanup=False)


async def test_a_permanent_failure_is_not_retried_with_backoff() -> None:
    fake = FakeDatapath(failures=1, temporary=False)
    agent = DatapathAgent(CONFIG, datapath=fake, backoff_initial=0.01)
    outcome = await agent.update(INPUTS)
    assert outcome.error is not None
    assert not outcome.retrying
    await asyncio.sleep(0.05)  # a retry would have run by now
    assert fake.attempts == 1
    await agent.stop(cleanup=False)


async def test_a_permanent_datapath_failure_is_tried_again_at_the_resync_interval() -> None:
    # A missing tool or a read-only /proc/sys can be fixed on the Node without new inputs.
    fake = FakeDatapath(failures=1, temporary=False)
    agent = DatapathAgent(CONFIG, datapath=fake, backoff_initial=0.001, resync_interval=0.05)
    await agent.update(INPUTS)
    await asyncio.wait_for(fake.succeeded.wait(), 5)
    assert fake.attempts == 2
    await agent.stop(cleanup=False)


async def test_unchanged_inputs_are_applied_again_every_resync_interval_and_no_longer_after_stop() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake, resync_interval=0.02)
    await agent.update(INPUTS)
    await fake.until(lambda: len(fake.applied) >= 4)
    assert set(fake.applied) == {fake.applied[0]}
    await agent.stop(cleanup=False)
    stopped_at = len(fake.applied)
    await asyncio.sleep(0.1)
    assert len(fake.applied) == stopped_at


async def test_a_resync_that_had_to_change_the_kernel_is_logged_as_drift(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake, resync_interval=0.02)
    await agent.update(INPUTS)
    with caplog.at_level(logging.WARNING, logger="agent.runner"):
        await fake.until(lambda: len(fake.applied) >= 3)  # undisturbed resyncs: no drift
        assert not [r for r in caplog.records if r.getMessage() == "datapathDriftRepaired"]
        fake.drifted = True
        await fake.until(lambda: not fake.drifted)
        await asyncio.sleep(0)  # the resync logs once its apply returned
    await agent.stop(cleanup=False)
    assert [r.getMessage() for r in caplog.records] == ["datapathDriftRepaired"]

    def reconciles(trigger: str, result: str) -> float:
        found = agent.registry.get_sample_value(
            "mchub_agent_datapath_reconciles_total", {"trigger": trigger, "result": result}
        )
        return found or 0.0

    assert reconciles("inputs", "changed") == 1
    assert reconciles("resync", "changed") == 1
    assert reconciles("resync", "unchanged") >= 2
    assert agent.registry.get_sample_value("mchub_agent_datapath_changes_total") == 2


async def test_without_a_resync_interval_unchanged_inputs_are_applied_once() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake, resync_interval=None)
    await agent.update(INPUTS)
    await asyncio.sleep(0.05)
    assert len(fake.applied) == 1
    await agent.stop(cleanup=False)


def test_a_resync_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="resync interval must be positive"):
        DatapathAgent(CONFIG, datapath=FakeDatapath(), resync_interval=0)


async def test_readiness_follows_the_last_reconcile_of_the_latest_inputs() -> None:
    fake = FakeDatapath(failures=1)
    agent = DatapathAgent(CONFIG, datapath=fake, backoff_initial=0.01)
    assert agent.readiness() == (False, "the datapath was not reconciled yet")
    await agent.update(INPUTS)
    assert agent.readiness() == (False, "datapath not reconciled: netlink busy")
    await asyncio.wait_for(fake.succeeded.wait(), 5)
    assert agent.readiness() == (True, "ok")
    bad = AgentInputs(LocalNode("east-a", "not-an-ip"), INPUTS.cluster, INPUTS.gateway, INPUTS.remotes)
    await agent.update(bad)
    ready, reason = agent.readiness()
    assert not ready
    assert reason.startswith("datapath not reconciled: ") and "not-an-ip" in reason
    await agent.stop(cleanup=False)


async def test_invalid_local_inputs_are_a_typed_error_without_touching_the_kernel_nor_a_resync() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake, resync_interval=0.01)
    bad = AgentInputs(LocalNode("east-a", "not-an-ip"), INPUTS.cluster, INPUTS.gateway, INPUTS.remotes)
    outcome = await agent.update(bad)
    assert outcome.error is not None
    assert outcome.desired is None
    await asyncio.sleep(0.05)  # they wait for new inputs
    assert fake.attempts == 0


async def test_newer_inputs_supersede_a_pending_retry() -> None:
    fake = FakeDatapath(failures=1)
    agent = DatapathAgent(CONFIG, datapath=fake, backoff_initial=30)
    first = await agent.update(INPUTS)
    assert first.retrying
    second = await agent.update(AgentInputs(INPUTS.node, INPUTS.cluster, INPUTS.gateway, ()))
    assert second.applied
    assert fake.applied[-1].is_empty
    await agent.stop(cleanup=False)


async def test_stop_with_cleanup_asks_the_programmer_to_remove_everything() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake)
    await agent.update(INPUTS)
    await agent.stop(cleanup=True)
    assert fake.cleanups == 1
    assert agent.desired is None


async def test_stop_without_cleanup_leaves_the_datapath_in_place() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake)
    await agent.update(INPUTS)
    await agent.stop(cleanup=False)
    assert fake.cleanups == 0


async def test_a_health_probe_that_cannot_start_neither_kills_the_agent_nor_skips_cleanup_on_stop() -> None:
    # Another program holds the probe port: the health loop fails to bind and is retried,
    # while updates are still applied and stop still cleans up.
    taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    taken.bind(("0.0.0.0", 0))
    config = replace(CONFIG, health=HealthConfig(port=taken.getsockname()[1], interval_seconds=0.01))
    fake = FakeDatapath()
    agent = DatapathAgent(config, datapath=fake)

    async def inputs() -> AsyncIterator[AgentInputs]:
        yield INPUTS
        await asyncio.sleep(0.1)  # long enough for the health loop to fail (and retry)
        taken.close()
        await asyncio.sleep(0.1)

    try:
        await asyncio.wait_for(run_datapath_agent(agent, inputs(), cleanup_on_stop=True), 5)
    finally:
        taken.close()
    assert len(fake.applied) == 1
    assert fake.cleanups == 1

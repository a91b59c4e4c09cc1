"""DatapathAgent with a fake programmer: serialisation, typed errors, retries, cleanup."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import replace

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
    """Records applied states; fails the first ``failures`` applies with a temporary error."""

    def __init__(self, failures: int = 0, *, temporary: bool = True) -> None:
        self.applied: list[DesiredDatapath] = []
        self.cleanups = 0
        self.failures = failures
        self.temporary = temporary
        self.attempts = 0
        self.succeeded = asyncio.Event()
        self.in_flight = 0
        self.max_in_flight = 0

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
            return ["changed"]
        finally:
            self.in_flight -= 1

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


async def test_concurrent_updates_are_applied_one_at_a_time() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake)
    await asyncio.gather(*(agent.update(INPUTS) for _ in range(5)))
    assert fake.max_in_flight == 1
    assert len(fake.applied) == 5


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


async def test_a_permanent_failure_is_not_retried() -> None:
    fake = FakeDatapath(failures=1, temporary=False)
    agent = DatapathAgent(CONFIG, datapath=fake, backoff_initial=0.01)
    outcome = await agent.update(INPUTS)
    assert outcome.error is not None
    assert not outcome.retrying
    await asyncio.sleep(0.05)  # a retry would have run by now
    assert fake.attempts == 1


async def test_invalid_local_inputs_are_a_typed_error_without_touching_the_kernel() -> None:
    fake = FakeDatapath()
    agent = DatapathAgent(CONFIG, datapath=fake)
    bad = AgentInputs(LocalNode("east-a", "not-an-ip"), INPUTS.cluster, INPUTS.gateway, INPUTS.remotes)
    outcome = await agent.update(bad)
    assert outcome.error is not None
    assert outcome.desired is None
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

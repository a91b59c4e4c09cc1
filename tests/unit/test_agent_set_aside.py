"""DatapathAgent with a fake programmer: a Gateway set aside on its probes' verdict, and the hold
before it is taken back (a miss during the hold starts it over)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from ipaddress import IPv4Address

from agent.config import AgentConfig, HealthConfig
from agent.health import PeerHealth, Reachability
from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from agent.pairing import pair
from agent.runner import DatapathAgent
from agent.state import RouteTable
from tests.unit.test_agent_runner import FakeDatapath

ME = IPv4Address("198.18.1.1")
WEST = (IPv4Address("198.18.2.1"), IPv4Address("198.18.2.2"))
HEALTH = HealthConfig(interval_seconds=0.01, miss_threshold=2)  # a hold of 0.2 s
INPUTS = AgentInputs(
    node=LocalNode("east-a", str(ME)),
    cluster=LocalCluster("east", "10.101.0.0/16"),
    gateway=ActiveGateway("east-a", str(ME), str(ME)),
    remotes=(RemoteCluster("west", "10.102.0.0/16", tuple(map(str, WEST))),),
)


class ProbedAgent(DatapathAgent):
    """The agent with the prober's snapshot given by the test."""

    probed: dict[str, PeerHealth]

    def health(self) -> dict[str, PeerHealth]:
        return self.probed


def verdict(ip: IPv4Address, reachability: Reachability, misses: int = 0) -> PeerHealth:
    return PeerHealth("west", str(ip), reachability, None, 0, datetime.now(UTC), misses)


def sent_to(fake: FakeDatapath) -> set[str]:
    return {str(r.via) for r in fake.applied[-1].routes if r.table is RouteTable.REMOTE}


async def paired_agent() -> tuple[ProbedAgent, FakeDatapath, IPv4Address]:
    """An agent on east's Gateway sending to west's Gateway it is paired with (returned)."""
    fake = FakeDatapath()
    agent = ProbedAgent(AgentConfig(enable_gateway=True, health=HEALTH), datapath=fake, resync_interval=None)
    agent.probed = {}
    await agent.update(INPUTS)
    first = pair(ME, WEST)
    assert sent_to(fake) == {str(first)}
    return agent, fake, first


async def test_a_gateway_set_aside_is_taken_back_after_a_whole_hold_without_a_miss() -> None:
    agent, fake, first = await paired_agent()
    other = next(ip for ip in WEST if ip != first)

    agent._verdict(verdict(first, Reachability.UNREACHABLE), None)
    await fake.until(lambda: sent_to(fake) == {str(other)})
    assert agent.unreachable == {("west", first)}

    # Its standby probes are answered, then one of them is missed before the hold ends.
    loop = asyncio.get_running_loop()
    answered = loop.time()
    agent.probed = {f"west/{first}": verdict(first, Reachability.REACHABLE, misses=4)}
    agent._verdict(verdict(first, Reachability.REACHABLE, misses=4), None)
    await asyncio.sleep(HEALTH.rejoin_after_seconds / 2)
    agent.probed = {f"west/{first}": verdict(first, Reachability.REACHABLE, misses=5)}
    await fake.until(lambda: sent_to(fake) == {str(first)})
    assert loop.time() - answered >= 1.5 * HEALTH.rejoin_after_seconds  # the hold started over
    assert agent.unreachable == frozenset()
    await agent.stop(cleanup=False)


async def test_a_flap_within_the_hold_keeps_the_gateway_set_aside_until_a_whole_hold_after_it() -> None:
    agent, fake, first = await paired_agent()
    loop = asyncio.get_running_loop()
    agent._verdict(verdict(first, Reachability.UNREACHABLE), None)
    await fake.until(lambda: sent_to(fake) != {str(first)})
    # Answered, then unreachable again before the hold ends: nothing comes back.
    agent.probed = {f"west/{first}": verdict(first, Reachability.REACHABLE)}
    agent._verdict(verdict(first, Reachability.REACHABLE), None)
    agent.probed = {f"west/{first}": verdict(first, Reachability.UNREACHABLE, misses=2)}
    agent._verdict(verdict(first, Reachability.UNREACHABLE, misses=2), None)
    await asyncio.sleep(2 * HEALTH.rejoin_after_seconds)
    assert agent.unreachable == {("west", first)} and sent_to(fake) != {str(first)}
    # Answered again: taken back a whole hold after that answer, not after the first one.
    agent.probed = {f"west/{first}": verdict(first, Reachability.REACHABLE, misses=2)}
    answered = loop.time()
    agent._verdict(verdict(first, Reachability.REACHABLE, misses=2), None)
    await fake.until(lambda: sent_to(fake) == {str(first)})
    assert loop.time() - answered >= HEALTH.rejoin_after_seconds
    await agent.stop(cleanup=False)

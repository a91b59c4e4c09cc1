"""Remote Gateway health probing across namespaces."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from ipaddress import IPv4Address

import pytest

from agent.health import GatewayProber, PeerHealth, ProbeResponder, Reachability
from agent.state import ProbeTarget
from tests.datapath.driver import FAST_HEALTH, ClusterSetDriver
from tests.datapath.topology import NodeNs, Topology, sh

PROBE_PORT = 51822


async def next_verdict(changes: asyncio.Queue[PeerHealth], cluster_id: str, wanted: Reachability) -> PeerHealth:
    """The next change of ``cluster_id`` to ``wanted`` (fails after 5 s)."""
    async with asyncio.timeout(5):
        while True:
            health = await changes.get()
            if health.cluster_id == cluster_id and health.reachability is wanted:
                return health


@contextlib.asynccontextmanager
async def running(coro_task: asyncio.Task[None]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        coro_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await coro_task


@dataclass
class Probing:
    """East's Gateway probing west's (whose agent answers), 50 ms apart."""

    prober: GatewayProber
    target: ProbeTarget
    west_gateway: NodeNs
    changes: asyncio.Queue[PeerHealth]


@contextlib.asynccontextmanager
async def east_probing_west(
    topology: Topology, *, miss_threshold: int, by_kernel: bool = False
) -> AsyncIterator[Probing]:
    east_gateway, west_gateway = topology.clusters["east"].nodes[0], topology.clusters["west"].nodes[0]
    responder = ProbeResponder(west_gateway.netns, PROBE_PORT)
    await responder.start()
    changes: asyncio.Queue[PeerHealth] = asyncio.Queue()
    prober = GatewayProber(
        east_gateway.netns, port=PROBE_PORT, interval=0.05, miss_threshold=miss_threshold, on_change=changes.put_nowait
    )
    target = ProbeTarget("west", IPv4Address(west_gateway.underlay_ip), by_kernel=by_kernel)
    prober.set_targets([target])
    try:
        assert prober.snapshot()[target.key].reachability is Reachability.UNKNOWN
        async with running(asyncio.create_task(prober.run())):
            yield Probing(prober, target, west_gateway, changes)
    finally:
        responder.close()


async def test_a_remote_gateway_is_unreachable_after_five_misses_and_reachable_again_when_back(
    topology: Topology,
) -> None:
    async with east_probing_west(topology, miss_threshold=5) as probing:
        changes, west_gateway = probing.changes, probing.west_gateway
        up = await next_verdict(changes, "west", Reachability.REACHABLE)
        assert up.rtt_seconds is not None and 0 < up.rtt_seconds < 0.05
        await sh("ip", "-n", west_gateway.netns, "link", "set", "ul0", "down")
        down = await next_verdict(changes, "west", Reachability.UNREACHABLE)
        assert down.consecutive_misses == 5
        await sh("ip", "-n", west_gateway.netns, "link", "set", "ul0", "up")
        back = await next_verdict(changes, "west", Reachability.REACHABLE)
        assert back.consecutive_misses == 0
        assert back.changed_at > down.changed_at


@pytest.mark.parametrize("by_kernel", [False, True], ids=["echo", "kernel"])
async def test_an_event_loop_held_up_for_many_intervals_declares_no_answering_gateway_unreachable(
    topology: Topology, by_kernel: bool
) -> None:
    """A busy Node's agent may not run for a while: the probes it could not send are not misses,
    and neither is the one it sends on waking, before it could read any answer. (A candidate's
    kernel probe declaring its Gateway unreachable so moved the Gateway on a loaded machine.)"""
    async with east_probing_west(topology, miss_threshold=3, by_kernel=by_kernel) as probing:
        await next_verdict(probing.changes, "west", Reachability.REACHABLE)
        for _ in range(3):
            time.sleep(0.5)  # noqa: ASYNC251 (on purpose: the whole loop held up for ten intervals)
            await asyncio.sleep(0.3)
        health = probing.prober.snapshot()[probing.target.key]
        assert health.reachability is Reachability.REACHABLE, health
        changed = [probing.changes.get_nowait().reachability for _ in range(probing.changes.qsize())]
        assert changed == [], changed


async def test_a_gateway_whose_ip_changes_starts_over_as_unknown(topology: Topology) -> None:
    prober = GatewayProber(topology.clusters["east"].nodes[0].netns, port=PROBE_PORT)
    prober.set_targets([ProbeTarget("west", IPv4Address("198.18.2.1"))])
    prober.set_targets(
        [ProbeTarget("west", IPv4Address("198.18.2.2")), ProbeTarget("north", IPv4Address("198.18.3.1"))]
    )
    snapshot = prober.snapshot()
    assert {cid: (h.gateway_ip, h.reachability) for cid, h in snapshot.items()} == {
        "west": ("198.18.2.2", Reachability.UNKNOWN),
        "north": ("198.18.3.1", Reachability.UNKNOWN),
    }


async def test_the_active_gateways_agent_reports_remote_gateways_answered_by_their_agents_or_kernels(
    clusterset: ClusterSetDriver, topology: Topology
) -> None:
    """West's agents stop (a rolling update restarts them): their echoes go unanswered, but the
    knock that follows each miss is answered by west's kernel, whose datapath still forwards, so
    west stays REACHABLE. West's Gateway losing its link answers neither: UNREACHABLE."""
    assert FAST_HEALTH.interval_seconds < 1
    await clusterset.sync()
    changes: asyncio.Queue[PeerHealth] = asyncio.Queue()
    tasks: dict[str, asyncio.Task[None]] = {}
    for name, agent in clusterset.agents.items():
        callback = changes.put_nowait if name == "east-a" else None
        tasks[name] = asyncio.create_task(agent.run_health(callback))
    west_gateway = topology.clusters["west"].nodes[0]
    try:
        reachable: set[str] = set()
        async with asyncio.timeout(5):
            while reachable != {"west", "north"}:
                health = await changes.get()
                if health.reachability is Reachability.REACHABLE:
                    reachable.add(health.cluster_id)
        snapshot = clusterset.agents["east-a"].health()
        assert all(h.rtt_seconds is not None for h in snapshot.values())
        assert clusterset.agents["east-b"].health() == {}  # only the Gateway probes
        for name in ("west-a", "west-b"):  # west's agents stop answering
            tasks[name].cancel()
        await asyncio.gather(tasks["west-a"], tasks["west-b"], return_exceptions=True)
        await asyncio.sleep(FAST_HEALTH.interval_seconds * (FAST_HEALTH.miss_threshold + 1) * 3)
        assert changes.empty(), [changes.get_nowait() for _ in range(changes.qsize())]
        west = clusterset.agents["east-a"].health()["west"]
        assert west.reachability is Reachability.REACHABLE
        assert west.consecutive_misses <= 1  # every other probe is an unanswered echo
        await sh("ip", "-n", west_gateway.netns, "link", "set", "ul0", "down")
        try:
            down = await next_verdict(changes, "west", Reachability.UNREACHABLE)
        finally:
            await sh("ip", "-n", west_gateway.netns, "link", "set", "ul0", "up")
        assert down.gateway_ip == west_gateway.underlay_ip
        assert down.consecutive_misses == FAST_HEALTH.miss_threshold
        assert clusterset.agents["east-a"].health()["north"].reachability is Reachability.REACHABLE
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)

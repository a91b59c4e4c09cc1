"""The agent repairs its datapath when something else changes it, and a resync of an
undisturbed datapath writes nothing: proved by the kernel's own change notifications."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agent.linux.ownership import NFT_FAMILY, NFT_TABLE
from agent.runner import DatapathAgent
from agent.state import RouteTable
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.kernel_events import kernel_events
from tests.datapath.topology import NodeNs, Topology, build_topology, destroy_topology, sh
from tests.datapath.traffic import peer_reporting_server, seen_source

RESYNC = 1.0
# An apply takes a few tens of milliseconds when idle; far more on a busy 2-core machine.
APPLY_SLACK = 2.0
TUNNEL_TABLE = str(int(RouteTable.REMOTE))


@pytest.fixture
async def resyncing() -> AsyncIterator[tuple[ClusterSetDriver, Topology]]:
    topo = await build_topology(("east", "west"))
    driver = ClusterSetDriver(topo, resync_interval=RESYNC)
    try:
        await driver.sync()
        yield driver, topo
    finally:
        try:
            await driver.stop_all(cleanup=True)
        finally:
            await destroy_topology(topo)


def resyncs(agent: DatapathAgent, result: str, trigger: str = "resync") -> float:
    labels = {"trigger": trigger, "result": result}
    return agent.registry.get_sample_value("mchub_agent_datapath_reconciles_total", labels) or 0.0


def own_repairs(agent: DatapathAgent) -> float:
    """Reconciles the agent started itself that changed the kernel: a resync, or the retry of a
    resync that an outside change made fail half-way (seen in CI under load)."""
    return resyncs(agent, "changed") + resyncs(agent, "changed", trigger="retry")


async def until_restored(check: Callable[[], Awaitable[bool]], what: str) -> float:
    """Seconds until ``check()`` holds; fails after a resync interval and an apply's time."""
    started = time.monotonic()
    deadline = started + RESYNC + APPLY_SLACK
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not restored within {RESYNC + APPLY_SLACK}s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def tunnel_routes(node: NodeNs) -> list[str]:
    listed = json.loads(await sh("ip", "-n", node.netns, "-j", "route", "show", "table", TUNNEL_TABLE) or "[]")
    return sorted(str(r["dst"]) for r in listed)


async def nft_rules(node: NodeNs) -> list[dict[str, object]]:
    out = await sh("ip", "netns", "exec", node.netns, "nft", "-j", "list", "table", NFT_FAMILY, NFT_TABLE)
    listed = json.loads(out)
    return [o["rule"] for o in listed["nftables"] if "rule" in o]


async def sysctl(node: NodeNs, key: str) -> str:
    return (await sh("ip", "netns", "exec", node.netns, "cat", f"/proc/sys/{key}")).strip()


async def test_resyncs_of_an_undisturbed_datapath_write_nothing(
    resyncing: tuple[ClusterSetDriver, Topology],
) -> None:
    driver, topo = resyncing
    gateway = topo.clusters["east"].nodes[0]
    agent = driver.agents[gateway.name]
    async with kernel_events(gateway.netns) as events:
        before = resyncs(agent, "unchanged")
        await asyncio.sleep(RESYNC * 3.5)
        quiet = list(events.lines)
        # The monitors still listen: an outside change and its repair are both reported.
        await sh("ip", "-n", gateway.netns, "route", "del", (await tunnel_routes(gateway))[0], "table", TUNNEL_TABLE)
        assert await events.saw(lambda line: line.startswith("Deleted") and TUNNEL_TABLE in line, RESYNC)
        assert await events.saw(lambda line: not line.startswith("Deleted") and TUNNEL_TABLE in line, RESYNC * 3)
    assert quiet == []
    assert resyncs(agent, "unchanged") - before >= 3
    assert resyncs(agent, "changed") == 0


@pytest.mark.parametrize("target", ["gateway", "plain-node"])
async def test_a_tunnel_device_deleted_from_outside_comes_back_with_its_routes_and_traffic_flows_again(
    resyncing: tuple[ClusterSetDriver, Topology], target: str
) -> None:
    driver, topo = resyncing
    east, west = topo.clusters["east"], topo.clusters["west"]
    node = east.nodes[0 if target == "gateway" else 1]
    routes = await tunnel_routes(node)
    assert routes
    agent = driver.agents[node.name]
    inputs_before = sum(resyncs(agent, result, "inputs") for result in ("unchanged", "changed", "failed"))
    await sh("ip", "-n", node.netns, "link", "del", "mc-tun0")
    assert await tunnel_routes(node) == []  # the kernel took the routes with the device

    async def back() -> bool:
        # The routes are in the kernel a moment before the reconcile that wrote them is counted.
        return await tunnel_routes(node) == routes and own_repairs(agent) >= 1

    await until_restored(back, "mc-tun0 and the routes of table 28003, by a reconcile the agent started")
    # The agent repaired it on its own: no new inputs came in meanwhile.
    assert sum(resyncs(agent, result, "inputs") for result in ("unchanged", "changed", "failed")) == inputs_before
    pod = west.nodes[1].pod
    async with peer_reporting_server(pod.netns):
        assert await seen_source(node.pod.netns, pod.ip) == east.nodes[0].underlay_ip


async def test_a_route_deleted_from_outside_comes_back(resyncing: tuple[ClusterSetDriver, Topology]) -> None:
    _, topo = resyncing
    gateway = topo.clusters["east"].nodes[0]
    routes = await tunnel_routes(gateway)
    await sh("ip", "-n", gateway.netns, "route", "del", routes[0], "table", TUNNEL_TABLE)
    assert await tunnel_routes(gateway) != routes

    async def back() -> bool:
        return await tunnel_routes(gateway) == routes

    await until_restored(back, f"route {routes[0]} in table {TUNNEL_TABLE}")


async def test_an_nft_rule_deleted_from_outside_comes_back(resyncing: tuple[ClusterSetDriver, Topology]) -> None:
    _, topo = resyncing
    gateway = topo.clusters["east"].nodes[0]
    rules = await nft_rules(gateway)
    snat = next(r for r in rules if r["chain"] == "postrouting")
    await sh(
        "ip", "netns", "exec", gateway.netns, "nft", "delete", "rule", NFT_FAMILY, NFT_TABLE, "postrouting",
        "handle", str(snat["handle"]),
    )  # fmt: skip

    async def back() -> bool:
        return sorted(str(r["comment"]) for r in await nft_rules(gateway)) == sorted(str(r["comment"]) for r in rules)

    await until_restored(back, "the SNAT rule")


async def test_a_device_sysctl_changed_from_outside_is_set_again(
    resyncing: tuple[ClusterSetDriver, Topology],
) -> None:
    _, topo = resyncing
    gateway = topo.clusters["east"].nodes[0]
    key = "net/ipv4/conf/mc-tun0/rp_filter"
    assert await sysctl(gateway, key) == "2"
    await sh("ip", "netns", "exec", gateway.netns, "sh", "-c", f"echo 1 > /proc/sys/{key}")

    async def back() -> bool:
        return await sysctl(gateway, key) == "2"

    await until_restored(back, key)

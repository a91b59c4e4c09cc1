"""What the kernel of one namespace reports changing, as ``ip monitor`` and ``nft monitor`` print it:
the proof that an agent wrote nothing (or what it wrote)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from tests.datapath.topology import sh

CANARY = "127.0.0.9/32"
# Neighbour entries the kernel learns itself (ARP) change state with traffic and timers, agent or
# not; an agent's own entries are PERMANENT, so only those are a change an agent made.
_LEARNED_NEIGHBOUR_STATES = frozenset({"INCOMPLETE", "REACHABLE", "STALE", "DELAY", "PROBE", "FAILED"})


def _learned_neighbour(line: str) -> bool:
    words = line.split()
    return bool(words) and words[-1] in _LEARNED_NEIGHBOUR_STATES


@dataclass
class KernelEvents:
    """What ``ip monitor`` (links, addresses, neighbours and FDB, routes, rules, per-device
    sysctls) and ``nft monitor`` print about one namespace, but the state changes of neighbour
    entries the kernel learned itself."""

    lines: list[str] = field(default_factory=list)
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def collect(self, stream: asyncio.StreamReader) -> None:
        async for raw in stream:
            line = raw.decode().rstrip()
            if _learned_neighbour(line):
                continue
            async with self._arrived:
                self.lines.append(line)
                self._arrived.notify_all()

    async def saw(self, predicate: Callable[[str], bool], within: float) -> bool:
        try:
            async with asyncio.timeout(within), self._arrived:
                await self._arrived.wait_for(lambda: any(predicate(line) for line in self.lines))
        except TimeoutError:
            return False
        return True


@contextlib.asynccontextmanager
async def kernel_events(netns: str) -> AsyncIterator[KernelEvents]:
    """Every change in ``netns`` from the moment both monitors are seen to listen."""
    events = KernelEvents()
    monitors = [
        await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        for argv in (
            ("ip", "-4", "-n", netns, "monitor", "link", "address", "neigh", "route", "rule", "netconf"),
            ("ip", "netns", "exec", netns, "nft", "monitor"),
        )
    ]
    readers = [asyncio.create_task(events.collect(m.stdout)) for m in monitors if m.stdout is not None]
    try:
        # A canary each monitor must report: until then it may not listen yet.
        for _ in range(40):
            await sh("ip", "-n", netns, "address", "add", CANARY, "dev", "lo")
            await sh("ip", "netns", "exec", netns, "nft", "add", "table", "ip", "canary")
            await sh("ip", "-n", netns, "address", "del", CANARY, "dev", "lo")
            await sh("ip", "netns", "exec", netns, "nft", "delete", "table", "ip", "canary")
            if await events.saw(lambda line: CANARY in line, 0.25) and await events.saw(
                lambda line: "table ip canary" in line, 0.25
            ):
                break
        else:
            raise AssertionError(f"the monitors of {netns} never reported a change: {events.lines}")
        await asyncio.sleep(0.1)  # the canary's own late lines
        events.lines.clear()
        yield events
    finally:
        for monitor in monitors:
            monitor.terminate()
            await monitor.wait()
        await asyncio.gather(*readers, return_exceptions=True)

"""The agent's probes: /healthz while it runs, /readyz from the datapath's last outcome."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import cast

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from agent.errors import ConfigError, SysctlError
from agent.main import run_agent
from agent.runner import DatapathAgent
from agent.state import DesiredDatapath
from kube.client import KubeClient
from kube.probe_server import ProbeServer
from tests.unit.test_agent_runner import CONFIG, INPUTS

EROFS = (
    "cannot set /proc/sys/net/ipv4/conf/mc-tun0/forwarding to 1 (EROFS: Read-only file system): the agent needs"
    " a writable /proc/sys, which container runtimes give only to a privileged container"
    " (securityContext.privileged: true)"
)


class ReadOnlyProcSys:
    """A datapath whose sysctl writes fail as in an unprivileged container, until ``privileged`` is set."""

    def __init__(self) -> None:
        self.privileged = False
        self.attempts = 0
        self.succeeded = asyncio.Event()

    async def apply(self, desired: DesiredDatapath) -> list[str]:
        self.attempts += 1
        if not self.privileged:
            raise SysctlError(EROFS, temporary=False)
        self.succeeded.set()
        return ["sysctl net/ipv4/conf/mc-tun0/forwarding=1"]

    async def cleanup(self) -> list[str]:
        return []


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as reply:
        return reply.status, await reply.text()


@pytest.fixture
async def served() -> AsyncIterator[tuple[DatapathAgent, ReadOnlyProcSys, str]]:
    datapath = ReadOnlyProcSys()
    agent = DatapathAgent(CONFIG, datapath=datapath, resync_interval=0.05)
    server = ProbeServer("127.0.0.1:0", readiness=agent.readiness, registry=CollectorRegistry())
    await server.start()
    try:
        yield agent, datapath, f"http://127.0.0.1:{server.port}"
    finally:
        await agent.stop(cleanup=False)
        await server.stop()


async def test_readyz_is_503_until_the_first_reconcile_while_healthz_answers(
    served: tuple[DatapathAgent, ReadOnlyProcSys, str],
) -> None:
    _, _, base = served
    assert await get(f"{base}/healthz") == (200, "ok")
    assert await get(f"{base}/readyz") == (503, "the datapath was not reconciled yet")


async def test_a_read_only_proc_sys_makes_readyz_503_with_the_reason_until_a_later_apply_succeeds(
    served: tuple[DatapathAgent, ReadOnlyProcSys, str],
) -> None:
    agent, datapath, base = served
    outcome = await agent.update(INPUTS)
    assert isinstance(outcome.error, SysctlError)
    assert not outcome.retrying  # permanent: no backoff storm, but the resync tries again
    status, reason = await get(f"{base}/readyz")
    assert (status, reason) == (503, f"datapath not reconciled: {EROFS}")
    assert "\n" not in reason
    assert (await get(f"{base}/healthz"))[0] == 200

    datapath.privileged = True  # the operator redeployed the agent privileged, say
    await asyncio.wait_for(datapath.succeeded.wait(), 5)  # at the next resync
    assert await get(f"{base}/readyz") == (200, "ok")
    assert datapath.attempts >= 2


async def test_a_probe_address_that_cannot_be_served_is_a_config_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        client = cast(KubeClient, object())  # never called: the agent stops before it watches
        with pytest.raises(ConfigError, match=f"cannot serve probes on {address}"):
            await run_agent(client, "east-a", CONFIG, probe_address=address)

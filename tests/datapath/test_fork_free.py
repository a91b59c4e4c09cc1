"""The agent programs a namespace without ever forking its own process.

The agent runs beside gRPC (the member's hub session, the kube client) and asyncio
threads; a Python-level fork there can abort the child inside gRPC's fork handlers
("Fatal Python error: Aborted"). So the whole reconcile and cleanup of a namespace, with
a gRPC server live in this very process, must record no fork at all (tests/datapath/forks.py),
while the kernel, as ``ip``/``nft`` show it, ends up programmed and then clean.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import grpc
import pytest

from agent.config import AgentConfig
from agent.errors import NetlinkError
from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from agent.linux.netlink import open_netlink
from agent.linux.netns import NETNS_DIR
from agent.runner import DatapathAgent
from tests.datapath.driver import FAST_HEALTH
from tests.datapath.forks import recording_forks
from tests.datapath.inspect_kernel import footprint
from tests.datapath.topology import sh

NODE_IP = "198.18.1.1"
INPUTS = AgentInputs(
    node=LocalNode("east-a", NODE_IP, ("10.1.1.0/24",)),
    cluster=LocalCluster("east", "10.101.0.0/16", ("10.1.0.0/16",)),
    gateway=ActiveGateway("east-a", NODE_IP, NODE_IP),
    remotes=(RemoteCluster("west", "10.102.0.0/16", ("198.18.2.1",), ("10.2.0.0/16",)),),
)


@pytest.fixture
async def live_grpc() -> AsyncIterator[None]:
    """A gRPC server and a connected channel in this process: gRPC's threads are running."""
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        await channel.channel_ready()
        yield
    finally:
        await channel.close()
        await server.stop(None)


@pytest.fixture
async def node_netns() -> AsyncIterator[str]:
    """One Node namespace whose underlay device holds NODE_IP."""
    name = f"mcfork{secrets.token_hex(3)}"
    await sh("ip", "netns", "add", name)
    try:
        # A veth pair, both ends inside: this kernel may lack the dummy module.
        await sh("ip", "-n", name, "link", "add", "ul0", "type", "veth", "peer", "name", "ul1")
        await sh("ip", "-n", name, "link", "set", "ul1", "up")
        await sh("ip", "-n", name, "addr", "add", f"{NODE_IP}/16", "dev", "ul0")
        await sh("ip", "-n", name, "link", "set", "ul0", "up")
        await sh("ip", "-n", name, "link", "set", "lo", "up")
        yield name
    finally:
        await sh("ip", "netns", "del", name, check=False)


async def test_reconcile_and_cleanup_of_a_namespace_never_fork_while_grpc_runs(
    live_grpc: None, node_netns: str
) -> None:
    config = AgentConfig(enable_gateway=True, enable_pod_to_pod_connectivity=True, health=FAST_HEALTH)
    agent = DatapathAgent(config, netns=node_netns)
    with recording_forks() as recorder:
        try:
            outcome = await agent.update(INPUTS)
            programmed = await footprint(node_netns)
            again = await agent.update(INPUTS)
        finally:
            await agent.stop(cleanup=True)
        left = await footprint(node_netns)

    assert recorder.forks == [], "\n".join(recorder.forks)
    assert outcome.applied, outcome.error
    assert outcome.changes
    assert programmed.links == (config.tunnel.interface,)
    assert "10.2.0.0/16 table" in " ".join(programmed.routes)
    assert programmed.rules and programmed.nft_tables == ("mchub",)
    assert again.applied and again.changes == ()  # the second pass found the kernel already right
    assert left.empty, left


async def test_netlink_in_a_namespace_that_does_not_exist_fails_and_creates_none() -> None:
    missing = f"mcgone{secrets.token_hex(3)}"
    with pytest.raises(NetlinkError, match=missing):
        async with open_netlink(missing):
            pass
    assert not (NETNS_DIR / missing).exists()

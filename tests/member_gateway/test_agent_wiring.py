"""The agent's kube wiring on a sandbox cluster, with a recording datapath (no root, no kernel):
objects in the API -> AgentInputs -> DatapathAgent, and the WireGuard key onto the Node."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from agent.config import AgentConfig, HealthConfig, TrafficEncryptionMode
from agent.kubewatch.node_annotations import ANNOTATION_WIREGUARD_PUBLIC_KEY
from agent.main import KubeAgent
from agent.state import DesiredDatapath, Role
from kube.client import KubeClient
from kube.resources import NODES
from mcapi.resources import CLUSTER_INFO_IMPORTS, GATEWAYS
from sandbox.server import SandboxServer
from tests.member_gateway.conftest import NAMESPACE
from tests.member_gateway.kubeobjects import create_node, until

Cluster = tuple[SandboxServer, KubeClient]


class RecordingDatapath:
    def __init__(self) -> None:
        self.applied: list[DesiredDatapath] = []

    async def apply(self, desired: DesiredDatapath) -> list[str]:
        self.applied.append(desired)
        return []

    async def cleanup(self) -> list[str]:
        return []


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
async def run_agent_on(
    cluster: Cluster, tmp_path: Path
) -> AsyncIterator[Callable[[str, AgentConfig], Awaitable[KubeAgent]]]:
    tasks: list[asyncio.Task[None]] = []

    async def start(node: str, config: AgentConfig) -> KubeAgent:
        agent = KubeAgent(cluster[1], node, config, key_path=tmp_path / f"{node}.key", datapath=RecordingDatapath())
        tasks.append(asyncio.create_task(agent.run()))
        return agent

    yield start
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def config(**kwargs: object) -> AgentConfig:
    health = HealthConfig(port=free_udp_port(), interval_seconds=0.05)
    return AgentConfig(enable_gateway=True, enable_pod_to_pod_connectivity=True, health=health, **kwargs)  # type: ignore[arg-type]


def role(expected: Role, remotes: tuple[str, ...]) -> Callable[[KubeAgent], bool]:
    def check(agent: KubeAgent) -> bool:
        desired = agent.agent.desired
        return desired is not None and desired.role is expected and desired.remote_clusters == remotes

    return check


async def test_a_plain_node_routes_remote_clusters_via_the_gateway_in_the_api_and_drops_a_deleted_import(
    cluster: Cluster, run_agent_on: Callable[[str, AgentConfig], Awaitable[KubeAgent]]
) -> None:
    _, client = cluster
    await create_node(client, "east-b", "198.18.1.2", gateway=False, pod_cidr="10.1.2.0/24")
    gateway = {
        "metadata": {"name": "east-a", "namespace": NAMESPACE},
        "gatewayIP": "198.18.1.1",
        "internalIP": "198.18.1.1",
        "serviceCIDR": "10.101.0.0/16",
    }
    await client.create(GATEWAYS, gateway)
    imported = {
        "metadata": {"name": "west-clusterinfo", "namespace": NAMESPACE},
        "spec": {
            "clusterID": "west",
            "serviceCIDR": "10.102.0.0/16",
            "gatewayInfos": [{"gatewayIP": "198.18.2.1"}],
            "podCIDRs": ["10.2.0.0/16"],
        },
    }
    await client.create(CLUSTER_INFO_IMPORTS, imported)
    agent = await run_agent_on("east-b", config())

    async with asyncio.timeout(10):
        await agent.wait_until(role(Role.MEMBER, ("west",)))
    desired = agent.agent.desired
    assert desired is not None
    assert {str(r.destination) for r in desired.routes} >= {"10.102.0.0/16", "10.2.0.0/16"}
    assert all(str(r.via) == "198.18.1.1" for r in desired.routes)

    await client.delete(CLUSTER_INFO_IMPORTS, "west-clusterinfo", NAMESPACE)
    async with asyncio.timeout(10):
        await agent.wait_until(role(Role.MEMBER, ()))
    await client.delete(GATEWAYS, "east-a", NAMESPACE)
    async with asyncio.timeout(10):
        await agent.wait_until(lambda a: a.agent.desired is not None and a.agent.desired.role is Role.NO_GATEWAY)


async def test_in_wireguard_mode_the_agent_publishes_its_public_key_on_its_node(
    cluster: Cluster, run_agent_on: Callable[[str, AgentConfig], Awaitable[KubeAgent]]
) -> None:
    _, client = cluster
    await create_node(client, "east-a", "198.18.1.1")
    agent = await run_agent_on("east-a", config(traffic_encryption_mode=TrafficEncryptionMode.WIREGUARD))
    assert agent.public_key
    await until(
        client,
        NODES,
        lambda nodes: (
            nodes and nodes[0]["metadata"]["annotations"].get(ANNOTATION_WIREGUARD_PUBLIC_KEY) == agent.public_key
        ),
        what="key annotation",
    )


async def test_the_agent_is_ready_once_the_datapath_of_its_node_is_applied_and_says_what_it_waits_for(
    cluster: Cluster, run_agent_on: Callable[[str, AgentConfig], Awaitable[KubeAgent]]
) -> None:
    _, client = cluster
    agent = await run_agent_on("east-c", config())
    assert agent.readiness() == (False, "waiting for the API server (Node, Gateways, ClusterInfoImports)")
    async with asyncio.timeout(10):
        while not agent.view.synced:  # noqa: ASYNC110 - the view signals its sync to the agent alone
            await asyncio.sleep(0.01)
    assert agent.readiness() == (False, "waiting for Node east-c and its InternalIP")
    await create_node(client, "east-c", "198.18.1.3", gateway=False)
    async with asyncio.timeout(10):
        await agent.wait_until(lambda a: a.readiness()[0])
    assert agent.readiness() == (True, "ok")

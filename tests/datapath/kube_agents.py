"""KubeAgents for the Nodes of a namespace cluster, driven by its (sandbox) API server."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AsyncExitStack
from pathlib import Path

from agent.config import AgentConfig
from agent.main import KubeAgent
from kube.client import KubeClient
from tests.datapath.topology import ClusterNs


async def start_agents(
    stack: AsyncExitStack, client: KubeClient, cluster: ClusterNs, config: AgentConfig, key_dir: Path
) -> dict[str, KubeAgent]:
    """One running KubeAgent per Node of ``cluster``, by Node name. They stop (cleaning up what
    they programmed) when ``stack`` closes, before whatever was pushed on it earlier, such as
    the namespaces."""
    agents: dict[str, KubeAgent] = {}
    tasks: list[asyncio.Task[None]] = []
    for node in cluster.nodes:
        agent = KubeAgent(client, node.name, config, netns=node.netns, key_path=key_dir / f"{node.name}.key")
        agents[node.name] = agent
        tasks.append(asyncio.create_task(agent.run(cleanup_on_stop=True), name=f"agent-{node.name}"))

    async def stop() -> None:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    stack.push_async_callback(stop)
    return agents

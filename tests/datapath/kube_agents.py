"""KubeAgents for the Nodes of a namespace cluster, driven by its (sandbox) API server."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

from agent.config import AgentConfig
from agent.main import KubeAgent
from kube.client import KubeClient
from tests.datapath.topology import ClusterNs


@dataclass
class RunningAgents:
    """One KubeAgent per Node of ``cluster``, by Node name, each run as a task; one can be stopped
    without its cleanup and started again on what it left (as a DaemonSet's rolling update does)."""

    client: KubeClient
    cluster: ClusterNs
    config: AgentConfig
    key_dir: Path
    agents: dict[str, KubeAgent] = field(default_factory=dict)
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def start(self, node_name: str) -> KubeAgent:
        node = self.cluster.node(node_name)
        agent = KubeAgent(
            self.client, node.name, self.config, netns=node.netns, key_path=self.key_dir / f"{node.name}.key"
        )
        self.agents[node.name] = agent
        self._tasks[node.name] = asyncio.create_task(agent.run(), name=f"agent-{node.name}")
        return agent

    async def stop(self, node_name: str, *, cleanup: bool) -> None:
        """End the agent's process, as it were; with ``cleanup``, as its ``--cleanup`` would."""
        task = self._tasks.pop(node_name)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if cleanup:
            await self.agents[node_name].agent.stop(cleanup=True)

    async def stop_all(self) -> None:
        for name in list(self._tasks):
            await self.stop(name, cleanup=True)


async def start_agents(
    stack: AsyncExitStack, client: KubeClient, cluster: ClusterNs, config: AgentConfig, key_dir: Path
) -> RunningAgents:
    """A running KubeAgent per Node of ``cluster``. They stop (cleaning up what they programmed)
    when ``stack`` closes, before whatever was pushed on it earlier, such as the namespaces."""
    running = RunningAgents(client, cluster, config, key_dir)
    for node in cluster.nodes:
        running.start(node.name)
    stack.push_async_callback(running.stop_all)
    return running

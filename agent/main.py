"""run_agent: one Node's agent driven by its cluster's API.

It watches (agent/kubewatch/view.py) the Node, the Gateway CR, the ClusterInfoImports, the
member ConfigMap and the ClusterSet, turns them into AgentInputs (agent/kube_inputs.py)
and feeds a DatapathAgent, one update per change. It publishes its WireGuard public key
on its Node, and on a Gateway candidate whether the active Gateway answers its probes
(agent/kubewatch/node_annotations.py), and, while the Node is the active Gateway, the
reachability of every remote Gateway into the ClusterInfoImports (agent/kubewatch/
reachability.py). Runs until cancelled; ``cleanup_on_stop`` removes the datapath then.
Between changes it applies the same inputs again every resync interval (agent/runner.py),
undoing what was changed from outside. With a probe address it serves /healthz (the
process answers), /readyz (the latest inputs are applied; 503 with the reason otherwise)
and /metrics.

With ``enableStretchedNetworkPolicy`` it also watches what ClusterSet policy needs
(agent/kubewatch/policy_view.py); on the active Gateway it compiles it into the inputs
(agent.policy) and publishes each policy's verdict (agent/kubewatch/policy_status.py).

RBAC it needs: get/list/watch nodes and patch its own Node; get/list/watch gateways,
clusterinfoimports, clustersets and configmaps in the member Namespace; patch
clusterinfoimports/status; with stretched policy, see agent/kubewatch/policy_view.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

from prometheus_client import CollectorRegistry

from agent.config import AgentConfig
from agent.errors import ConfigError
from agent.health import PeerHealth, Reachability
from agent.inputs import AgentInputs
from agent.kubewatch.node_annotations import publish_annotations, wanted_annotations
from agent.kubewatch.policy_status import PolicyReporter
from agent.kubewatch.policy_view import CLUSTER_NETWORK_POLICIES, NETWORK_POLICIES, PolicyView
from agent.kubewatch.reachability import ReachabilityPublisher
from agent.kubewatch.view import ClusterView
from agent.policy.state import PolicyReport
from agent.runner import DEFAULT_RESYNC_INTERVAL, Datapath, DatapathAgent, run_datapath_agent
from agent.state import Role
from agent.wgkey import load_or_create_key_pair
from kube.client import KubeClient
from kube.errors import KubeError
from kube.manager import Manager, Runnable
from kube.probe_server import ProbeServer
from kube.resources import Obj
from mcapi.gateway_nodes import unreachable_annotation
from mcapi.names import DEFAULT_MEMBER_NAMESPACE

log = logging.getLogger(__name__)

DEFAULT_KEY_PATH = Path("/var/lib/mchub/agent/wireguard-private.key")
NODE_RETRY_DELAY = 2.0


class KubeAgent:
    """The pieces of one running agent, for run_agent and for tests that watch it work."""

    def __init__(
        self,
        client: KubeClient,
        node_name: str,
        config: AgentConfig,
        *,
        namespace: str = DEFAULT_MEMBER_NAMESPACE,
        netns: str | None = None,
        key_path: Path = DEFAULT_KEY_PATH,
        datapath: Datapath | None = None,
        resync_interval: float | None = DEFAULT_RESYNC_INTERVAL,
    ) -> None:
        self.node_name = node_name
        self.config = config
        self.client = client
        self.key = load_or_create_key_pair(key_path) if config.wireguard_enabled else None
        self.metrics = CollectorRegistry()
        """The agent's own metrics (datapath reconciles, ClusterSet policy verdicts)."""
        self.agent = DatapathAgent(
            config,
            netns=netns,
            wireguard_private_key=self.key.private_key if self.key else None,
            datapath=datapath,
            resync_interval=resync_interval,
            registry=self.metrics,
        )
        self.view = ClusterView(client, node_name, namespace)
        self.publisher = ReachabilityPublisher(
            client,
            node_name,
            imports=self.view.imports,
            desired=lambda: self.agent.desired,
            health=self.agent.health,
        )
        self.inputs: AgentInputs | None = None
        self.policy_view: PolicyView | None = None
        self.policy_reporter: PolicyReporter | None = None
        self._reports: tuple[PolicyReport, ...] | None = None
        self._reports_changed = asyncio.Event()
        if config.enable_stretched_network_policy:
            self.policy_view = PolicyView(client, self.view.changed)
            self.policy_reporter = PolicyReporter(client, node_name, self._live_policy, registry=self.metrics)

    @property
    def public_key(self) -> str | None:
        return self.key.public_key if self.key else None

    def readiness(self) -> tuple[bool, str]:
        """/readyz: the datapath of the latest inputs is in place (see DatapathAgent.readiness)."""
        if self.inputs is None:
            if not self.view.synced:
                return False, "waiting for the API server (Node, Gateways, ClusterInfoImports)"
            return False, f"waiting for Node {self.node_name} and its InternalIP"
        return self.agent.readiness()

    async def wait_until(self, predicate: Callable[[KubeAgent], bool]) -> None:
        """Until ``predicate(self)`` holds, checked after every datapath reconcile."""
        await self.agent.wait_for(lambda: predicate(self))

    async def run(self, *, cleanup_on_stop: bool = False) -> None:
        watched: list[Runnable] = [self.view] if self.policy_view is None else [self.view, self.policy_view]
        views = Manager(f"agent-views-{self.node_name}", watched)
        await views.start()  # each view synced, or every one stopped again and the error raised
        log.info("agentStarted", extra={"node": self.node_name, "namespace": self.view.namespace})
        try:
            async with asyncio.TaskGroup() as group:
                if self.policy_reporter is not None:
                    group.create_task(self._publish_reports(), name=f"agent-policy-status-{self.node_name}")
                group.create_task(self.publisher.run(), name=f"agent-reachability-{self.node_name}")
                group.create_task(self._publish_node(), name=f"agent-node-annotations-{self.node_name}")
                group.create_task(
                    run_datapath_agent(
                        self.agent, self._changes(), on_health=self._health_changed, cleanup_on_stop=cleanup_on_stop
                    ),
                    name=f"agent-datapath-{self.node_name}",
                )
        finally:
            await views.stop()
            log.info("agentStopped", extra={"node": self.node_name, "cleanedUp": cleanup_on_stop})

    async def _changes(self) -> AsyncIterator[AgentInputs]:
        waiting_logged = False
        while True:
            await self.view.changed.wait()
            self.view.changed.clear()
            current = self.view.inputs(self.public_key)
            if current is None:
                if not waiting_logged:
                    log.info("agentWaitingForNode", extra={"node": self.node_name})
                    waiting_logged = True
                continue
            current = self._with_policy(current)
            if current != self.inputs:
                self.inputs = current
                yield current  # resumes once the agent applied it
                self.view.node_changed.set()  # the Gateway may have moved: what our Node says of it too
            self.publisher.poke()

    def _with_policy(self, current: AgentInputs) -> AgentInputs:
        """On a Node that takes traffic from remote Gateways (a Gateway, in active-active mode any
        of them, or one that was a Gateway at the last reconcile and so may be retiring), the
        compiled ClusterSet policy goes into the inputs: it enforces the rules, and turns the
        remote Gateways' identity VNIs into its device's, without which their packets are dropped.
        The first Gateway's verdicts go to the reporter. Other Nodes neither compile nor enforce."""
        if self.policy_view is None:
            return current
        last = self.agent.desired
        carrying = current.carrying_gateways(wireguard=self.config.wireguard_enabled)
        is_gateway = any(g.node_name == self.node_name for g in carrying)
        if not is_gateway and (last is None or last.role not in (Role.GATEWAY, Role.RETIRING)):
            return current
        compiled = self.policy_view.compiled()
        reporting = current.gateway is not None and current.gateway.node_name == self.node_name
        if reporting and (
            compiled.reports != self._reports
            or (self.policy_reporter and self.policy_reporter.pending(compiled.reports))
        ):
            self._reports = compiled.reports
            self._reports_changed.set()
        return replace(current, policy=compiled)

    def _live_policy(self, kind: str, namespace: str, name: str) -> Obj | None:
        if self.policy_view is None:
            return None
        resource = CLUSTER_NETWORK_POLICIES if kind == CLUSTER_NETWORK_POLICIES.kind else NETWORK_POLICIES
        return self.policy_view.get(resource, name, namespace or None)

    async def _publish_reports(self) -> None:
        assert self.policy_reporter is not None
        while True:
            await self._reports_changed.wait()
            self._reports_changed.clear()
            if self._reports is None:
                continue
            try:
                await self.policy_reporter.publish(self._reports)
            except Exception:  # a bug here must not stop the datapath; the next change retries
                log.exception("clusterSetPolicyReportFailed", extra={"node": self.node_name})

    def _health_changed(self, health: PeerHealth) -> None:
        self.publisher.poke()  # a remote Gateway's verdict: its ClusterInfoImport
        self.view.node_changed.set()  # our own Gateway's: our Node's annotation

    def _unreachable_gateways(self) -> tuple[str, ...]:
        """The local Gateways' Nodes whose probes by this Node go unanswered: the desired datapath's
        kernel probes (agent.desired decides which Gateways a Node probes, in either mode)."""
        desired, inputs = self.agent.desired, self.inputs
        if desired is None or inputs is None or not inputs.node.gateway_candidate:
            return ()  # only candidates report (the member reads no one else's); others just follow
        names = {g.internal_ip: g.node_name for g in inputs.all_gateways}
        health = self.agent.health()
        unreachable = []
        for target in desired.probe_targets:
            found = health.get(target.key) if target.by_kernel else None
            # No verdict on this Gateway yet: not reported (the last one may have been of another).
            if found is not None and found.reachability is Reachability.UNREACHABLE:
                unreachable.append(names.get(str(target.gateway_ip), str(target.gateway_ip)))
        return tuple(unreachable)

    async def _publish_node(self) -> None:
        while True:
            await self.view.node_changed.wait()
            self.view.node_changed.clear()
            node = self.view.node
            if node is None:
                continue
            try:
                unreachable = unreachable_annotation(self._unreachable_gateways())
                await publish_annotations(self.client, node, wanted_annotations(self.public_key, unreachable))
            except KubeError as err:
                log.warning("nodeAnnotationsPublishFailed", extra={"node": self.node_name, "error": str(err)})
                await asyncio.sleep(NODE_RETRY_DELAY)
                self.view.node_changed.set()


async def run_agent(
    client: KubeClient,
    node_name: str,
    config: AgentConfig,
    *,
    namespace: str = DEFAULT_MEMBER_NAMESPACE,
    netns: str | None = None,
    cleanup_on_stop: bool = False,
    key_path: Path = DEFAULT_KEY_PATH,
    probe_address: str | None = None,
    resync_interval: float | None = DEFAULT_RESYNC_INTERVAL,
) -> None:
    """Run the agent of ``node_name`` until cancelled (ConfigError if the WireGuard key is
    unusable or the probe address cannot be served).

    With ``probe_address`` (HOST:PORT) /healthz, /readyz and /metrics are served there."""
    agent = KubeAgent(
        client,
        node_name,
        config,
        namespace=namespace,
        netns=netns,
        key_path=key_path,
        resync_interval=resync_interval,
    )
    server = ProbeServer(probe_address, readiness=agent.readiness, registry=agent.metrics) if probe_address else None
    if server is not None:
        try:
            await server.start()
        except OSError as err:  # the port is taken, the address is not local
            raise ConfigError(f"cannot serve probes on {probe_address}: {err}") from err
    try:
        await agent.run(cleanup_on_stop=cleanup_on_stop)
    finally:
        if server is not None:
            await server.stop()

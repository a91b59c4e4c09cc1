"""The whole chain on one machine: sandbox API servers whose Nodes describe the namespace
topology, members joined to a real in-process hub, the Gateway election and ClusterInfo
exchange of member/gateway, and run_agent's KubeAgent per Node programming its namespace.

East and west (two Nodes each, see topology.py): the Node objects carry the Nodes' underlay
addresses as InternalIP and their Pod CIDRs; both Nodes of a cluster are Gateway candidates.
The members are the harness's MemberApps (tests/member/harness.py); the GatewayController is
attached to each member's HubSession by hand until MemberApp wires it.

Restarts: every agent stopped without its cleanup and started again, one Node at a time, leaves
the datapath exactly as it was while traffic flows through it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.config import AgentConfig, TunnelConfig
from agent.linux.ownership import NFT_FAMILY, NFT_POLICY_TABLE, NFT_TABLE, ROUTE_PROTOCOL
from agent.main import KubeAgent
from agent.state import Role
from kube.conditions import find_condition
from kube.resources import NODES
from mcapi.gateway_nodes import unreachable_gateways
from mcapi.names import ANNOTATION_GATEWAY, DEFAULT_MEMBER_NAMESPACE
from mcapi.resources import CLUSTER_INFO_IMPORTS, GATEWAYS
from member.gateway import GatewayController
from tests.datapath.driver import FAST_HEALTH
from tests.datapath.kernel_events import kernel_events
from tests.datapath.kube_agents import RunningAgents, start_agents
from tests.datapath.member_knock import knock_from_the_cluster
from tests.datapath.topology import ClusterNs, NodeNs, Topology, build_topology, destroy_topology, set_cable, sh
from tests.datapath.traffic import (
    eventually_seen_source,
    peer_reporting_server,
    udp_echo_server,
    udp_pings,
    unreachable,
)
from tests.integration.hubrunner import HubRunner
from tests.member.harness import JoinedMember, join_member
from tests.member_gateway.kubeobjects import annotate, create_node, named, only, set_ready, until

NAMESPACE = DEFAULT_MEMBER_NAMESPACE
WAIT = 20.0
# A Gateway moved away retires for 2 s (tests/datapath/test_gateway_retiring.py), then routes as a Member.
AGENT_CONFIG = AgentConfig(
    enable_gateway=True,
    enable_pod_to_pod_connectivity=True,
    health=FAST_HEALTH,
    tunnel=TunnelConfig(retire_seconds=2.0),
)


@dataclass
class Member:
    cluster: ClusterNs
    joined: JoinedMember
    controller: GatewayController
    running: RunningAgents | None = None

    @property
    def agents(self) -> RunningAgents:
        assert self.running is not None
        return self.running


@dataclass
class ClusterSet:
    topo: Topology
    members: dict[str, Member]

    def agent(self, node_name: str) -> KubeAgent:
        cluster_id = node_name.rsplit("-", 1)[0]
        return self.members[cluster_id].agents.agents[node_name]


@pytest.fixture
async def clusterset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ClusterSet]:
    topo = await build_topology(("east", "west"))
    knock_from_the_cluster(topo, monkeypatch)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(destroy_topology, topo)
        hubs = HubRunner(tmp_path / "hub")
        hub = await hubs.start()
        stack.push_async_callback(hubs.stop)
        members: dict[str, Member] = {}
        for cluster in topo.clusters.values():
            config_yaml = f"serviceCIDR: {cluster.service_cidr}\npodCIDRs: ['{cluster.pod_cidr}']\n"
            joined = await join_member(hub, cluster.cluster_id, tmp_path, config_yaml=config_yaml)
            stack.push_async_callback(joined.aclose)
            await joined.wait_connected()
            for node in cluster.nodes:
                await create_node(joined.client, node.name, node.underlay_ip, pod_cidr=node.pod_cidr)
            controller = joined.member.gateway  # the MemberApp's own GatewayController
            assert controller is not None
            member = Member(cluster, joined, controller)
            # Stopped first: agents clean up before the namespaces go.
            member.running = await start_agents(stack, joined.client, cluster, AGENT_CONFIG, tmp_path)
            members[cluster.cluster_id] = member
        yield ClusterSet(topo, members)


def routes_to(remote: str, gateway_ip: str, role: Role) -> Callable[[KubeAgent], bool]:
    """This role, routing only ``remote``; a Gateway via ``gateway_ip`` (the remote Gateway), a
    plain Node via its local Gateway (``gateway_ip`` then names it)."""

    def check(agent: KubeAgent) -> bool:
        desired = agent.agent.desired
        if desired is None or desired.role is not role or desired.remote_clusters != (remote,):
            return False
        return bool(desired.routes) and all(str(r.via) == gateway_ip for r in desired.routes)

    return check


async def wait_agent(agent: KubeAgent, predicate: Callable[[KubeAgent], bool]) -> None:
    async with asyncio.timeout(WAIT):
        await agent.wait_until(predicate)


async def test_pods_reach_across_gateways_elected_in_the_api_then_fail_over_and_stop_when_the_import_goes(
    clusterset: ClusterSet,
) -> None:
    east, west = clusterset.members["east"], clusterset.members["west"]
    east_a, east_b = east.cluster.nodes
    west_a, west_b = west.cluster.nodes

    # Election: the lowest-named Ready candidate of each cluster; the exchange reaches every agent.
    await wait_agent(clusterset.agent("east-a"), routes_to("west", west_a.underlay_ip, Role.GATEWAY))
    await wait_agent(clusterset.agent("west-a"), routes_to("east", east_a.underlay_ip, Role.GATEWAY))
    await wait_agent(clusterset.agent("east-b"), routes_to("west", east_a.underlay_ip, Role.MEMBER))
    await wait_agent(clusterset.agent("west-b"), routes_to("east", west_a.underlay_ip, Role.MEMBER))

    # A Pod on east's plain Node reaches a Pod on west's plain Node through both Gateways.
    async with peer_reporting_server(west_b.pod.netns):
        assert await eventually_seen_source(east_b.pod.netns, west_b.pod.ip, deadline=WAIT) == east_a.underlay_ip

    # West's Gateway agent probes east's Gateway and says so on the ClusterInfoImport.
    def reachable(objs: list[dict[str, object]]) -> dict[str, object] | None:
        obj = named("east-clusterinfo")(objs)
        status = (obj or {}).get("status") or {}
        assert isinstance(status, dict)
        found = find_condition(status.get("conditions"), "GatewayReachable")
        return found if found is not None and found["status"] == "True" else None

    condition = await until(west.joined.client, CLUSTER_INFO_IMPORTS, reachable, namespace=NAMESPACE, within=WAIT)
    assert east_a.underlay_ip in condition["message"] and "west-a" in condition["message"]

    # East's Gateway Node turns NotReady: east-b takes over, west re-routes to it.
    await set_ready(east.joined.client, "east-a", False)
    await until(east.joined.client, GATEWAYS, only("east-b"), namespace=NAMESPACE, within=WAIT)
    await wait_agent(clusterset.agent("east-b"), routes_to("west", west_a.underlay_ip, Role.GATEWAY))
    await wait_agent(clusterset.agent("west-a"), routes_to("east", east_b.underlay_ip, Role.GATEWAY))
    await wait_agent(clusterset.agent("east-a"), routes_to("west", east_b.underlay_ip, Role.MEMBER))
    async with peer_reporting_server(west_b.pod.netns):
        assert await eventually_seen_source(east_a.pod.netns, west_b.pod.ip, deadline=WAIT) == east_b.underlay_ip

    # East has no candidate left: its ClusterInfo is withdrawn, west's import goes, and so do west's routes.
    for node in east.cluster.nodes:
        await annotate(east.joined.client, node.name, ANNOTATION_GATEWAY, None)
    await until(west.joined.client, CLUSTER_INFO_IMPORTS, lambda objs: objs == [], namespace=NAMESPACE, within=WAIT)
    for name in ("west-a", "west-b"):
        await wait_agent(clusterset.agent(name), lambda a: a.agent.desired is not None and not a.agent.desired.routes)
    async with peer_reporting_server(east_a.pod.netns):
        assert await unreachable(west_b.pod.netns, east_a.pod.ip)


async def test_a_gateway_node_that_loses_its_link_is_replaced_by_the_candidate_probing_it(
    clusterset: ClusterSet,
) -> None:
    """East's Gateway Node loses its cable (it stays Ready in the API): east-b's agent, a candidate,
    gets no answer from east-a's kernel, says so on its Node, and the member moves the Gateway to
    east-b without waiting for NotReady; west re-routes. Plugged back, east-a probes east-b and
    nobody reports anything; the Gateway stays on east-b."""
    east = clusterset.members["east"]
    east_a, east_b = east.cluster.nodes
    west_a = clusterset.members["west"].cluster.nodes[0]
    await wait_agent(clusterset.agent("east-a"), routes_to("west", west_a.underlay_ip, Role.GATEWAY))
    await wait_agent(clusterset.agent("east-b"), routes_to("west", east_a.underlay_ip, Role.MEMBER))

    loop = asyncio.get_running_loop()
    cut = loop.time()
    await set_cable(clusterset.topo, east_a, "down")
    try:
        await until(east.joined.client, GATEWAYS, only("east-b"), namespace=NAMESPACE, within=WAIT)
        moved = loop.time() - cut
        reporter = await east.joined.client.get(NODES, "east-b")
        assert unreachable_gateways(reporter) == ("east-a",)
        await wait_agent(clusterset.agent("west-a"), routes_to("east", east_b.underlay_ip, Role.GATEWAY))
        # FAST_HEALTH: 5 probes 50 ms apart; then a Node patch, an election and a Gateway write.
        assert moved < 5.0, f"the Gateway moved {moved:.1f} s after its Node lost its link"
    finally:
        await set_cable(clusterset.topo, east_a, "up")
    await wait_agent(clusterset.agent("east-a"), routes_to("west", east_b.underlay_ip, Role.MEMBER))
    await until(
        east.joined.client,
        NODES,
        lambda nodes: len(nodes) == 2 and not any(unreachable_gateways(n) for n in nodes),
        within=WAIT,
    )
    assert [g["metadata"]["name"] for g in (await east.joined.client.list(GATEWAYS, NAMESPACE)).items] == ["east-b"]


async def kernel_objects(node: NodeNs) -> dict[str, object]:
    """What the agent programmed in ``node``, with the kernel's identities: its links with their
    ifindex, its routes and rules, its nft tables, chains, sets and rules with their handles. A
    deleted and re-created object comes back with another ifindex or handle."""
    links = json.loads(await sh("ip", "-n", node.netns, "-j", "link", "show"))
    routes = await sh("ip", "-n", node.netns, "-j", "route", "show", "table", "all", "proto", str(ROUTE_PROTOCOL))
    rules = await sh("ip", "-n", node.netns, "-j", "rule", "show")
    ruleset = json.loads(await sh("ip", "netns", "exec", node.netns, "nft", "-j", "list", "ruleset"))
    ours = {NFT_TABLE, NFT_POLICY_TABLE}
    nft = [
        obj
        for item in ruleset["nftables"]
        for kind, obj in item.items()
        if kind != "metainfo" and obj.get("family") == NFT_FAMILY and (obj.get("table") or obj.get("name")) in ours
    ]
    return {
        "links": sorted((link["ifname"], link["ifindex"]) for link in links if link["ifname"].startswith("mc")),
        "routes": json.loads(routes or "[]"),
        "rules": [r for r in json.loads(rules or "[]") if r.get("protocol") == str(ROUTE_PROTOCOL)],
        "nft": nft,
    }


async def test_restarted_agents_keep_the_datapath_they_find_and_traffic_flows_on(clusterset: ClusterSet) -> None:
    """Every agent stopped without its cleanup and started again, one Node at a time (a DaemonSet
    rolling update with maxUnavailable 1), while a Pod on east's plain Node exchanges UDP with a
    Pod on west's plain Node through both Gateways: no datagram is lost, the kernel reports no
    change in any Node, every object keeps its identity, and each new agent's first reconcile
    finds nothing to change."""
    east, west = clusterset.members["east"], clusterset.members["west"]
    nodes = [*east.cluster.nodes, *west.cluster.nodes]
    await wait_agent(clusterset.agent("east-b"), routes_to("west", east.cluster.nodes[0].underlay_ip, Role.MEMBER))
    await wait_agent(clusterset.agent("west-b"), routes_to("east", west.cluster.nodes[0].underlay_ip, Role.MEMBER))
    await wait_agent(clusterset.agent("east-a"), routes_to("west", west.cluster.nodes[0].underlay_ip, Role.GATEWAY))
    await wait_agent(clusterset.agent("west-a"), routes_to("east", east.cluster.nodes[0].underlay_ip, Role.GATEWAY))
    before = {node.name: await kernel_objects(node) for node in nodes}
    assert all(found["links"] and found["routes"] and found["nft"] for found in before.values()), before
    client, server = east.cluster.nodes[1].pod, west.cluster.nodes[1].pod

    async with peer_reporting_server(server.netns):  # the path is up
        await eventually_seen_source(client.netns, server.ip, deadline=WAIT)
    async with udp_echo_server(server.netns), AsyncExitStack() as monitors:
        events = {node.name: await monitors.enter_async_context(kernel_events(node.netns)) for node in nodes}
        first_reconciles = {}
        async with udp_pings(client.netns, server.ip) as pings:
            for node in nodes:
                member = clusterset.members[node.name.rsplit("-", 1)[0]]
                await member.agents.stop(node.name, cleanup=False)
                await asyncio.sleep(0.5)  # no agent on this Node for a moment
                agent = member.agents.start(node.name)
                await wait_agent(agent, lambda a: a.agent.last_outcome is not None)
                assert agent.agent.readiness() == (True, "ok")
                assert agent.agent.last_outcome is not None
                first_reconciles[node.name] = agent.agent.last_outcome.changes
            await asyncio.sleep(0.5)
        changed = {name: list(e.lines) for name, e in events.items() if e.lines}

    assert pings.lost == [] and pings.answered > 50, pings
    assert changed == {}
    assert {node.name: await kernel_objects(node) for node in nodes} == before
    assert {name: changes for name, changes in first_reconciles.items() if changes} == {}

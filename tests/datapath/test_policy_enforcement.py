"""ClusterSet-scoped Antrea policy rules enforced by the Gateways' agents beside a plain
routed "CNI" (policy suite): ingress from label identities at the receiving Gateway, egress
toServices at the source Gateway, Tier/priority order and Pass, updates and removal."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from ipaddress import IPv4Address
from typing import Any

import pytest

from agent.policy.compile import MultiClusterService
from agent.policy.named_ports import ContainerPort
from agent.policy.state import ServiceDestination
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.inspect_kernel import footprint
from tests.datapath.policy_world import PolicyWorld, acnp, egress_to_services, ingress_from_cluster_set
from tests.datapath.test_gateway_vxlan import fake_kube_proxy, service_ip
from tests.datapath.topology import Topology, sh
from tests.datapath.traffic import peer_reporting_server, seen_source

UPDATE_BUDGET = 5.0


@pytest.fixture
async def world(topology: Topology) -> AsyncIterator[tuple[PolicyWorld, ClusterSetDriver]]:
    labels = {"west-a": {"role": "tenant"}, "west-b": {"role": "client"}, "east-a": {"role": "tenant"}}
    policy_world = PolicyWorld(topology, labels=labels)
    driver = ClusterSetDriver(topology, policy=policy_world.compiled)
    try:
        yield policy_world, driver
    finally:
        await driver.stop_all(cleanup=True)


async def reaches(netns: str, ip: str, port: int = 7070) -> bool:
    try:
        await seen_source(netns, ip, port, deadline=1.0)
    except (OSError, TimeoutError):
        return False
    return True


async def verdicts(topology: Topology) -> tuple[bool, bool]:
    """(west's tenant Pod reaches east's Pod, west's client Pod reaches it)."""
    west, target = topology.clusters["west"], topology.clusters["east"].nodes[1].pod
    async with peer_reporting_server(target.netns):
        return await reaches(west.nodes[0].pod.netns, target.ip), await reaches(west.nodes[1].pod.netns, target.ip)


async def test_policy_an_east_ingress_rule_drops_wests_tenant_pod_while_its_client_pod_gets_through(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    await clusterset.sync()
    assert await verdicts(topology) == (True, True)
    policy_world.policies["east"] = [ingress_from_cluster_set("no-tenants", "Drop", {"role": "tenant"})]
    await clusterset.sync()
    assert await verdicts(topology) == (False, True)
    # The tenant on west's other Node reaches west's Gateway through west's own tunnel first.
    policy_world.labels["west-a"], policy_world.labels["west-b"] = {"role": "client"}, {"role": "tenant"}
    await clusterset.sync()
    assert await verdicts(topology) == (True, False)


async def test_policy_verdict_flips_within_five_seconds_when_the_pods_labels_change(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    policy_world.policies["east"] = [ingress_from_cluster_set("no-tenants", "Drop", {"role": "tenant"})]
    await clusterset.sync()
    assert await verdicts(topology) == (False, True)
    for labels, expected in (({"role": "client"}, (True, True)), ({"role": "tenant"}, (False, True))):
        started = time.monotonic()
        policy_world.labels["west-a"] = labels
        await clusterset.sync()
        while await verdicts(topology) != expected:
            assert time.monotonic() - started < UPDATE_BUDGET, f"still not {expected} after relabel to {labels}"
            await asyncio.sleep(0.05)
        assert time.monotonic() - started < UPDATE_BUDGET


async def test_policy_pass_skips_to_the_next_tier_and_priorities_order_policies(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    tenant = {"role": "tenant"}
    passing = ingress_from_cluster_set("pass-tenants", "Pass", tenant, priority=1)
    dropping = ingress_from_cluster_set("drop-tenants", "Drop", tenant, priority=2)
    policy_world.policies["east"] = [dropping, passing]
    await clusterset.sync()
    assert await verdicts(topology) == (True, True), "Pass ends the application Tier before the Drop"
    policy_world.policies["east"].append(ingress_from_cluster_set("baseline-drop", "Drop", tenant, tier="baseline"))
    await clusterset.sync()
    assert await verdicts(topology) == (False, True), "after Pass the baseline Tier decides"
    allowing = ingress_from_cluster_set("allow-tenants", "Allow", tenant, priority=0.5)
    policy_world.policies["east"] = [
        dropping,
        allowing,
        ingress_from_cluster_set("baseline-drop", "Drop", tenant, tier="baseline"),
    ]
    await clusterset.sync()
    assert await verdicts(topology) == (True, True), "the lower priority number wins: Allow before Drop"
    policy_world.policies["east"] = [ingress_from_cluster_set("allow-tenants", "Allow", tenant, priority=3), dropping]
    await clusterset.sync()
    assert await verdicts(topology) == (False, True), "now the Drop has the lower priority number"
    emergency = ingress_from_cluster_set("emergency-allow", "Allow", tenant, priority=100, tier="emergency")
    policy_world.policies["east"].append(emergency)
    await clusterset.sync()
    assert await verdicts(topology) == (True, True), "a Tier of lower priority comes first whatever the policy priority"


async def test_policy_reject_answers_at_once_instead_of_dropping(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    policy_world.policies["east"] = [ingress_from_cluster_set("reject-tenants", "Reject", {"role": "tenant"})]
    await clusterset.sync()
    west, target = topology.clusters["west"], topology.clusters["east"].nodes[1].pod
    async with peer_reporting_server(target.netns):
        started = time.monotonic()
        with pytest.raises(ConnectionRefusedError):
            await seen_source(west.nodes[0].pod.netns, target.ip, deadline=3.0)
        assert time.monotonic() - started < 1.0
        assert await reaches(west.nodes[1].pod.netns, target.ip)


async def test_policy_removing_the_policy_restores_traffic_and_cleanup_leaves_nothing(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    policy_world.policies["east"] = [ingress_from_cluster_set("no-tenants", "Drop", {"role": "tenant"})]
    await clusterset.sync()
    assert await verdicts(topology) == (False, True)
    policy_world.policies["east"] = []
    await clusterset.sync()
    assert await verdicts(topology) == (True, True)
    gateway = topology.clusters["east"].nodes[0].netns
    assert "mchub_policy" in await sh("ip", "netns", "exec", gateway, "nft", "list", "tables")
    await clusterset.stop_all(cleanup=True)
    leftovers = {n.name: await footprint(n.netns) for c in topology.clusters.values() for n in c.nodes}
    assert {name: fp for name, fp in leftovers.items() if not fp.empty} == {}


async def test_policy_a_named_port_drop_stops_wests_tenant_at_that_port_of_easts_pod_only(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    east, west = topology.clusters["east"], topology.clusters["west"]
    named, other = east.nodes[1], east.nodes[0]  # "http" is 8080 on east-b's Pod; east-a's has no "http"
    policy_world.container_ports[named.name] = (ContainerPort("http", "tcp", 8080), ContainerPort("echo", "tcp", 7070))
    policy_world.container_ports[other.name] = (ContainerPort("web", "tcp", 8080),)
    tenant, client = west.nodes[0].pod.netns, west.nodes[1].pod.netns
    http = [{"port": "http"}]
    policy_world.policies["east"] = [ingress_from_cluster_set("no-tenant-http", "Drop", {"role": "tenant"}, ports=http)]
    await clusterset.sync()
    async with (
        peer_reporting_server(named.pod.netns, 8080),
        peer_reporting_server(named.pod.netns, 7070),
        peer_reporting_server(other.pod.netns, 8080),
    ):
        assert not await reaches(tenant, named.pod.ip, 8080), "the tenant is dropped at east-b's http port"
        assert await reaches(tenant, named.pod.ip, 7070), "east-b's other port is not named http"
        assert await reaches(tenant, other.pod.ip, 8080), "east-a's Pod has no http port: the rule skips it"
        assert await reaches(client, named.pod.ip, 8080), "the client's identity is not the rule's peer"
    (report,) = policy_world.compiled("east").reports
    assert (report.enforced, report.reason) == (True, "Enforced")


async def test_policy_that_cannot_be_enforced_never_drops_traffic(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    unsupported: dict[str, Any] = {
        "priority": 1,
        "appliedTo": [{"podSelector": {}}],
        "ingress": [{"action": "Drop", "from": [{"scope": "ClusterSet", "ipBlock": {"cidr": "0.0.0.0/0"}}]}],
    }
    policy_world.policies["east"] = [
        acnp("unsupported-peer", unsupported),
        ingress_from_cluster_set("missing-tier", "Drop", {"role": "tenant"}, tier="nowhere"),
        ingress_from_cluster_set("selects-no-pod", "Drop", {"role": "tenant"}, applied_to={"app": "none"}),
    ]
    outcomes = await clusterset.sync()
    assert await verdicts(topology) == (True, True)
    reports = policy_world.compiled("east").reports
    assert [(r.name, r.reason) for r in reports] == [
        ("unsupported-peer", "UnsupportedPeer"),
        ("missing-tier", "TierNotFound"),
        ("selects-no-pod", "Enforced"),
    ]
    assert outcomes["east-a"].applied


TENANT = {"role": "tenant"}


def _tcp(address: str, port: int) -> ServiceDestination:
    return ServiceDestination(IPv4Address(address), "tcp", port)


async def test_policy_an_egress_to_services_rule_stops_easts_tenant_from_reaching_wests_backends(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    east, west = topology.clusters["east"], topology.clusters["west"]
    backend = west.nodes[1].pod
    await fake_kube_proxy(west, backend.ip)  # west's exported Service 10.102.0.10:80 -> its Pod
    # East's imported antrea-mc-web (ClusterIP 10.101.0.10:80), its Endpoints west's ClusterIP:80.
    await _dnat(east, service_ip(east), service_ip(west), 80)
    mc_service = MultiClusterService("default", "web", (_tcp(service_ip(east), 80), _tcp(service_ip(west), 80)))
    policy_world.services["east"] = [mc_service]
    tenant_pod, client_pod = east.nodes[0].pod, east.nodes[1].pod
    await clusterset.sync()
    async with peer_reporting_server(backend.netns):
        assert await reaches(tenant_pod.netns, service_ip(east), 80)
        policy_world.policies["east"] = [egress_to_services("tenants-no-web", "Drop", ["web"], applied_to=TENANT)]
        await clusterset.sync()
        assert not await reaches(tenant_pod.netns, service_ip(east), 80)
        assert not await reaches(tenant_pod.netns, service_ip(west), 80)
        assert await reaches(client_pod.netns, service_ip(east), 80)
        # Traffic the rule does not select is left alone: the tenant still reaches another west Pod.
        async with peer_reporting_server(west.nodes[0].pod.netns):
            assert await reaches(tenant_pod.netns, west.nodes[0].pod.ip)


@asynccontextmanager
async def _pod_ip_web(topology: Topology) -> AsyncIterator[tuple[str, MultiClusterService]]:
    """East's imported antrea-mc-web in PodIP mode: ClusterIP 10.101.0.10:80, its Endpoints
    west-b's Pod at 8080 (east's kube-proxy DNATs straight to the Pod's targetPort); the Pod
    serves 8080 and another port, 7070."""
    east, backend = topology.clusters["east"], topology.clusters["west"].nodes[1].pod
    await _dnat(east, service_ip(east), backend.ip, 8080)
    web = MultiClusterService("default", "web", (_tcp(service_ip(east), 80), _tcp(backend.ip, 8080)))
    async with peer_reporting_server(backend.netns, 8080), peer_reporting_server(backend.netns, 7070):
        yield backend.ip, web


async def test_policy_a_pod_ip_to_services_drop_stops_the_service_port_but_not_another_port_of_its_pod(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    east = topology.clusters["east"]
    tenant, client = east.nodes[0].pod.netns, east.nodes[1].pod.netns
    async with _pod_ip_web(topology) as (backend_ip, web):
        policy_world.services["east"] = [web]
        policy_world.policies["east"] = [egress_to_services("tenants-no-web", "Drop", ["web"], applied_to=TENANT)]
        await clusterset.sync()
        assert not await reaches(tenant, service_ip(east), 80), "the Service is dropped"
        assert not await reaches(tenant, backend_ip, 8080), "so is its endpoint's own address and port"
        assert await reaches(tenant, backend_ip, 7070), "another port of the same Pod is not the Service"
        assert await reaches(client, service_ip(east), 80), "the rule applies to the tenant only"


async def test_policy_a_pod_ip_to_services_allow_admits_the_service_port_only_before_a_wider_drop(
    world: tuple[PolicyWorld, ClusterSetDriver], topology: Topology
) -> None:
    policy_world, clusterset = world
    east = topology.clusters["east"]
    async with _pod_ip_web(topology) as (backend_ip, web):
        # "pod-all" names both of the Pod's ports (as a second Service backed by it would).
        every_port = MultiClusterService("default", "pod-all", (_tcp(backend_ip, 8080), _tcp(backend_ip, 7070)))
        policy_world.services["east"] = [web, every_port]
        policy_world.policies["east"] = [
            egress_to_services("tenants-web", "Allow", ["web"], priority=1, applied_to=TENANT),
            egress_to_services("tenants-nothing-else", "Drop", ["pod-all"], priority=2, applied_to=TENANT),
        ]
        await clusterset.sync()
        tenant = east.nodes[0].pod.netns
        assert await reaches(tenant, service_ip(east), 80), "the Allow admits the Service"
        assert await reaches(tenant, backend_ip, 8080), "and its endpoint's address and port"
        assert not await reaches(tenant, backend_ip, 7070), "the Allow does not cover the Pod's other port"


async def _dnat(cluster: Any, service: str, to: str, to_port: int) -> None:
    rules = f"""
    table ip mctest_mc_service {{
      chain prerouting {{ type nat hook prerouting priority dstnat; policy accept;
        ip daddr {service} tcp dport 80 dnat to {to}:{to_port}
      }}
    }}
    """
    for node in cluster.nodes:
        await sh("ip", "netns", "exec", node.netns, "nft", "-f", "-", stdin=rules.encode())

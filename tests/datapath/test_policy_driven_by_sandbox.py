"""ClusterSet policy driven from Kubernetes objects (policy suite): sandbox clusters joined to
an in-process hub build the tunnels as in test_driven_by_sandbox.py; each cluster holds its
Pods (labels and IPs of the namespace topology's Pods), the LabelIdentity CRs a member
imports, and, in east, Antrea's policy kinds, whose CRDs this test creates (a minimal
schema: Antrea's own CRDs are not part of mchub). The agents' KubeAgents read them all.

Two ways to the LabelIdentities, one run each: ``through-hub``, the members export their
Pods' label identities (``enableStretchedNetworkPolicy`` in their MultiClusterConfig), the
hub allocates the IDs and every member imports them, end to end; ``hand-written``, the CRs
are written as a member would import them, once the tunnels are up and the members stopped
(a running member removes LabelIdentities the hub did not import), so the agent side is
proven on its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from agent.config import AgentConfig
from agent.kubewatch.policy_status import CONDITION_ENFORCED, EVENT_NOT_ENFORCED
from agent.kubewatch.policy_view import CLUSTER_NETWORK_POLICIES
from agent.main import KubeAgent
from agent.state import Role
from kube.client import KubeClient
from kube.conditions import find_condition
from kube.resources import CRDS, EVENTS, PODS
from mcapi.labels import normalized_label
from mcapi.names import label_identity_import_name
from mcapi.resources import LABEL_IDENTITIES
from tests.datapath.kube_agents import start_agents
from tests.datapath.member_knock import knock_from_the_cluster
from tests.datapath.test_driven_by_sandbox import ClusterSet, Member, routes_to, wait_agent
from tests.datapath.topology import NodeNs, build_topology, destroy_topology
from tests.datapath.traffic import peer_reporting_server, seen_source
from tests.integration.hubrunner import HubRunner
from tests.member.harness import join_member
from tests.member_gateway.kubeobjects import create_node, until

WAIT = 20.0
UPDATE_BUDGET = 5.0
# The default probes (3 misses 0.3 s apart), not the fast ones of the failover tests: east-b, a
# candidate, probes east-a's kernel, and on a busy machine 5 misses 50 ms apart can make it report
# east-a unreachable, which moves the Gateway (and the policy reporting) to east-b mid-test. That
# is the one way found for east-a's skip counter to stay empty while the status said TierNotFound,
# as it did once in CI.
CONFIG = AgentConfig(enable_gateway=True, enable_pod_to_pod_connectivity=True, enable_stretched_network_policy=True)
LABELS = {"west-a": {"role": "tenant"}, "west-b": {"role": "client"}, "east-a": {"app": "web"}, "east-b": {"app": "db"}}
IDENTITIES = {normalized_label("default", {}, labels): 0x20000 + i for i, labels in enumerate(LABELS.values())}
ANTREA_KINDS = (
    ("clusternetworkpolicies", "ClusterNetworkPolicy", "Cluster"),
    ("networkpolicies", "NetworkPolicy", "Namespaced"),
    ("tiers", "Tier", "Cluster"),
)


def antrea_crd(plural: str, kind: str, scope: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.crd.antrea.io"},
        "spec": {
            "group": "crd.antrea.io",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
            "scope": scope,
            "versions": [
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


async def create_pod(client: KubeClient, node: NodeNs) -> None:
    body = {
        "metadata": {"name": f"{node.name}-pod", "namespace": "default", "labels": LABELS[node.name]},
        "spec": {"nodeName": node.name, "containers": [{"name": "c", "image": "example"}]},
    }
    await client.create(PODS, body, "default")
    status = {"status": {"phase": "Running", "podIP": node.pod.ip, "podIPs": [{"ip": node.pod.ip}]}}
    await client.patch_status(PODS, f"{node.name}-pod", status, "default")


async def import_identities(client: KubeClient) -> None:
    for label, identity_id in IDENTITIES.items():
        body = {"metadata": {"name": label_identity_import_name(label)}, "spec": {"label": label, "id": identity_id}}
        await client.create(LABEL_IDENTITIES, body)


@pytest.fixture(params=["through-hub", "hand-written"])
def identities_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def clusterset(
    tmp_path: Path, identities_mode: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ClusterSet]:
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
            if identities_mode == "through-hub":
                config_yaml += "enableStretchedNetworkPolicy: true\n"
            joined = await join_member(hub, cluster.cluster_id, tmp_path, config_yaml=config_yaml)
            stack.push_async_callback(joined.aclose)
            await joined.wait_connected()
            client = joined.client
            if cluster.cluster_id == "east":
                for plural, kind, scope in ANTREA_KINDS:
                    await client.create(CRDS, antrea_crd(plural, kind, scope))
            for node in cluster.nodes:
                await create_node(client, node.name, node.underlay_ip, pod_cidr=node.pod_cidr)
                await create_pod(client, node)
            controller = joined.member.gateway
            assert controller is not None
            member = Member(cluster, joined, controller)
            member.running = await start_agents(stack, client, cluster, CONFIG, tmp_path)
            members[cluster.cluster_id] = member
        yield ClusterSet(topo, members)


def drop_from_tenants(name: str, tier: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "priority": 5,
        "appliedTo": [{"podSelector": {}}],
        "ingress": [
            {"action": "Drop", "from": [{"scope": "ClusterSet", "podSelector": {"matchLabels": {"role": "tenant"}}}]}
        ],
    }
    if tier:
        spec["tier"] = tier
    return {
        "apiVersion": "crd.antrea.io/v1beta1",
        "kind": "ClusterNetworkPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


async def reaches(source: NodeNs, target: NodeNs) -> bool:
    try:
        await seen_source(source.pod.netns, target.pod.ip, deadline=1.0)
    except (OSError, TimeoutError):
        return False
    return True


async def eventually(check: Callable[[], Any], expected: Any, budget: float) -> float:
    """Seconds until ``await check()`` equals ``expected``; fails past ``budget``."""
    started = time.monotonic()
    while (found := await check()) != expected:
        assert time.monotonic() - started < budget, f"{found} is still not {expected} after {budget}s"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_policy_from_kubernetes_objects_drops_the_tenant_follows_relabels_and_reports_a_missing_tier(
    clusterset: ClusterSet, identities_mode: str
) -> None:
    east, west = clusterset.members["east"], clusterset.members["west"]
    east_a, east_b = east.cluster.nodes
    west_a, west_b = west.cluster.nodes
    await wait_agent(clusterset.agent("east-a"), routes_to("west", west_a.underlay_ip, Role.GATEWAY))
    await wait_agent(clusterset.agent("west-a"), routes_to("east", east_a.underlay_ip, Role.GATEWAY))
    await wait_agent(clusterset.agent("west-b"), routes_to("east", west_a.underlay_ip, Role.MEMBER))
    if identities_mode == "hand-written":
        # Every LabelIdentity of a cluster is the member's (it removes those the hub did not
        # import): with the tunnels up, the members stop and the identities are written by hand.
        for member in (east, west):
            await member.joined.stop_member()
            await import_identities(member.joined.client)

    def tagged(agent: KubeAgent) -> bool:
        policy = agent.agent.desired.policy if agent.agent.desired else None
        return policy is not None and len(policy.pod_identities) == 2

    await wait_agent(clusterset.agent("west-a"), tagged)
    await wait_agent(clusterset.agent("east-a"), tagged)

    async def verdicts() -> tuple[bool, bool]:
        return await reaches(west_a, east_b), await reaches(west_b, east_b)

    async with peer_reporting_server(east_b.pod.netns):
        assert await eventually(verdicts, (True, True), WAIT) >= 0
        client = east.joined.client
        await client.create(CLUSTER_NETWORK_POLICIES, drop_from_tenants("no-tenants"))
        assert await eventually(verdicts, (False, True), UPDATE_BUDGET) < UPDATE_BUDGET

        # West relabels its tenant Pod: west's Gateway tags it with the client identity.
        await west.joined.client.patch(PODS, "west-a-pod", {"metadata": {"labels": {"role": "client"}}}, "default")
        assert await eventually(verdicts, (True, True), UPDATE_BUDGET) < UPDATE_BUDGET
        await west.joined.client.patch(PODS, "west-a-pod", {"metadata": {"labels": {"role": "tenant"}}}, "default")
        assert await eventually(verdicts, (False, True), UPDATE_BUDGET) < UPDATE_BUDGET

        def condition(name: str, status: str) -> Callable[[list[dict[str, Any]]], Any]:
            def check(objs: list[dict[str, Any]]) -> Any:
                obj = next((o for o in objs if o["metadata"]["name"] == name), None)
                found = find_condition(((obj or {}).get("status") or {}).get("conditions"), CONDITION_ENFORCED)
                return found if found is not None and found["status"] == status else None

            return check

        enforced = await until(client, CLUSTER_NETWORK_POLICIES, condition("no-tenants", "True"), within=WAIT)
        assert enforced["reason"] == "Enforced"

        # A policy in a Tier that does not exist: not enforced, its status and an Event say why.
        await client.create(CLUSTER_NETWORK_POLICIES, drop_from_tenants("nowhere", tier="nowhere"))
        refused = await until(client, CLUSTER_NETWORK_POLICIES, condition("nowhere", "False"), within=WAIT)
        assert refused["reason"] == "TierNotFound" and "nowhere does not exist" in refused["message"]
        events = (await client.list(EVENTS, "default")).items
        assert any(e["reason"] == EVENT_NOT_ENFORCED and "TierNotFound" in e["message"] for e in events)
        skips = clusterset.agent("east-a").metrics.get_sample_value(
            "mchub_agent_clusterset_policy_skips_total", {"reason": "TierNotFound"}
        )
        assert skips == 1.0

        # Removing the policy restores the tenant's traffic.
        await client.delete(CLUSTER_NETWORK_POLICIES, "no-tenants")
        assert await eventually(verdicts, (True, True), UPDATE_BUDGET) < UPDATE_BUDGET

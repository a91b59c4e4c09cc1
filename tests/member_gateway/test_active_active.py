"""gatewayMode active-active on a sandbox cluster: every eligible candidate has a Gateway CR and the
ClusterInfo lists them all; a candidate that fails leaves the set alone, and the set refuses to
shrink to nothing on reports alone."""

from __future__ import annotations

import asyncio
import contextlib

from kube.client import KubeClient
from kube.resources import NODES
from mcapi.config import MultiClusterConfig
from mcapi.gateway_nodes import ANNOTATION_UNREACHABLE_GATEWAY
from mcapi.resources import GATEWAYS
from member.gateway import ANNOTATION_WIREGUARD_PUBLIC_KEY
from member.gateway.controller import QUARANTINE_RECHECK_SECONDS
from sandbox.server import SandboxServer
from tests.member_gateway.conftest import NAMESPACE, Gateways
from tests.member_gateway.kubeobjects import annotate, create_node, set_ready, until

Cluster = tuple[SandboxServer, KubeClient]
ACTIVE_ACTIVE = MultiClusterConfig(gatewayMode="active-active")


def named(*wanted: str):  # type: ignore[no-untyped-def]
    return lambda gws: sorted(g["metadata"]["name"] for g in gws) == sorted(wanted)


async def exported_ips(gateways: Gateways, *ips: str) -> None:
    await gateways.export_where(
        lambda e: e is not None and [g.gateway_ip for g in e.cluster_info.gateway_infos] == list(ips)
    )


async def three_gateways(client: KubeClient, gateways: Gateways) -> None:
    for n in (1, 2, 3):
        await create_node(client, f"node-{n}", f"192.168.1.{n}")
    await gateways.start(ACTIVE_ACTIVE)
    await until(client, GATEWAYS, named("node-1", "node-2", "node-3"), namespace=NAMESPACE, what="three Gateways")
    await exported_ips(gateways, "192.168.1.1", "192.168.1.2", "192.168.1.3")


async def test_every_ready_candidate_is_a_gateway_and_one_not_ready_leaves_alone(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await three_gateways(client, gateways)
    assert (gateways.transitions("first"), gateways.transitions("added")) == (1, 0)

    await set_ready(client, "node-2", False)
    await until(client, GATEWAYS, named("node-1", "node-3"), namespace=NAMESPACE, what="node-2 leaves")
    await exported_ips(gateways, "192.168.1.1", "192.168.1.3")
    await gateways.controllers[0].wait_idle()
    assert gateways.transitions("ineligible") == 1

    await set_ready(client, "node-2", True)
    await until(client, GATEWAYS, named("node-1", "node-2", "node-3"), namespace=NAMESPACE, what="node-2 back")
    await gateways.controllers[0].wait_idle()
    assert gateways.transitions("added") == 1


async def test_a_reported_gateway_leaves_and_a_cordoned_one_too_but_reports_never_empty_the_set(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await three_gateways(client, gateways)
    await annotate(client, "node-1", ANNOTATION_UNREACHABLE_GATEWAY, "node-3")
    await until(client, GATEWAYS, named("node-1", "node-2"), namespace=NAMESPACE, what="node-3 reported")
    await gateways.controllers[0].wait_idle()
    assert gateways.transitions("unreachable") == 1

    await client.patch(NODES, "node-2", {"spec": {"unschedulable": True}})
    await until(client, GATEWAYS, named("node-1"), namespace=NAMESPACE, what="node-2 cordoned")
    await exported_ips(gateways, "192.168.1.1")


async def test_a_leaving_gateway_is_withdrawn_from_the_cluster_info_before_its_gateway_cr(
    cluster: Cluster, gateways: Gateways
) -> None:
    """Only leaving: the other members re-pair first (they hear of it through the hub), and the
    local writes follow. When node-3's Gateway CR is seen deleted, the ClusterInfo already lacks it."""
    _, client = cluster
    await three_gateways(client, gateways)
    listed = await client.list(GATEWAYS, NAMESPACE)
    seen_deleted: list[list[str]] = []

    async def watch_deletions() -> None:
        async with contextlib.aclosing(
            client.watch(GATEWAYS, NAMESPACE, resource_version=listed.resource_version)
        ) as events:
            async for event in events:
                if event.type == "DELETED" and event.object["metadata"]["name"] == "node-3":
                    export = gateways.exported.get("east-clusterinfo")
                    assert export is not None
                    seen_deleted.append([g.gateway_ip for g in export.cluster_info.gateway_infos])
                    return

    watcher = asyncio.create_task(watch_deletions())
    await annotate(client, "node-1", ANNOTATION_UNREACHABLE_GATEWAY, "node-3")
    async with asyncio.timeout(10):
        await watcher
    assert seen_deleted == [["192.168.1.1", "192.168.1.2"]]


async def test_two_gateways_that_report_each_other_keep_the_one_the_member_reaches(
    cluster: Cluster, gateways: Gateways
) -> None:
    """node-2 is cut off but its agent still reaches the API server: each reports the other at
    once. The member's own probe settles it: node-1 answers, node-2 does not."""
    _, client = cluster
    await create_node(client, "node-1", "192.168.1.1")
    await create_node(client, "node-2", "192.168.1.2")
    gateways.answering.add("192.168.1.1")
    await gateways.start(ACTIVE_ACTIVE)
    await until(client, GATEWAYS, named("node-1", "node-2"), namespace=NAMESPACE)
    await client.patch(NODES, "node-2", {"metadata": {"annotations": {ANNOTATION_UNREACHABLE_GATEWAY: "node-1"}}})
    await client.patch(NODES, "node-1", {"metadata": {"annotations": {ANNOTATION_UNREACHABLE_GATEWAY: "node-2"}}})
    await until(client, GATEWAYS, named("node-1"), namespace=NAMESPACE, what="node-2 out")
    await gateways.controllers[0].wait_idle()
    assert [g["metadata"]["name"] for g in (await client.list(GATEWAYS, NAMESPACE)).items] == ["node-1"]


async def test_a_report_the_member_cannot_confirm_moves_nothing(cluster: Cluster, gateways: Gateways) -> None:
    """Only the link between the two is cut: both answer the member, both stay."""
    _, client = cluster
    await create_node(client, "node-1", "192.168.1.1")
    await create_node(client, "node-2", "192.168.1.2")
    gateways.answering.update({"192.168.1.1", "192.168.1.2"})
    await gateways.start(ACTIVE_ACTIVE)
    await until(client, GATEWAYS, named("node-1", "node-2"), namespace=NAMESPACE)
    await annotate(client, "node-1", ANNOTATION_UNREACHABLE_GATEWAY, "node-2")
    await until(
        client,
        NODES,
        lambda nodes: any(ANNOTATION_UNREACHABLE_GATEWAY in n["metadata"].get("annotations", {}) for n in nodes),
    )
    await gateways.controllers[0].wait_idle()
    assert [g["metadata"]["name"] for g in (await client.list(GATEWAYS, NAMESPACE)).items] == ["node-1", "node-2"]
    assert gateways.transitions("unreachable") == 0


async def test_wireguard_keys_keep_the_cluster_single_active(cluster: Cluster, gateways: Gateways) -> None:
    """One WireGuard key fits in a ClusterInfo: with keys published, one Gateway, as without the mode."""
    _, client = cluster
    await create_node(client, "node-1", "192.168.1.1")
    await create_node(client, "node-2", "192.168.1.2")
    for name in ("node-1", "node-2"):
        await annotate(client, name, ANNOTATION_WIREGUARD_PUBLIC_KEY, f"key-of-{name}=")
    await gateways.start(ACTIVE_ACTIVE)
    await until(client, GATEWAYS, named("node-1"), namespace=NAMESPACE, what="single-active")
    await gateways.controllers[0].wait_idle()
    assert gateways.controllers[0].active_active_blocked(gateways.controllers[0].candidates()) == (
        "trafficEncryptionMode is wireGuard"
    )


async def test_a_gateway_taken_out_on_a_report_stays_out_until_it_answers_the_member_again(
    cluster: Cluster, gateways: Gateways
) -> None:
    """Its peers stop probing a Node that is no longer a Gateway, so their report goes: the member's
    own knock, repeated every second, decides when it comes back."""
    _, client = cluster
    await three_gateways(client, gateways)
    gateways.answering.update({"192.168.1.1", "192.168.1.2"})
    await annotate(client, "node-1", ANNOTATION_UNREACHABLE_GATEWAY, "node-3")
    await until(client, GATEWAYS, named("node-1", "node-2"), namespace=NAMESPACE, what="node-3 out")
    await annotate(client, "node-1", ANNOTATION_UNREACHABLE_GATEWAY, None)
    await until(
        client,
        NODES,
        lambda nodes: not any(ANNOTATION_UNREACHABLE_GATEWAY in n["metadata"].get("annotations", {}) for n in nodes),
    )
    await asyncio.sleep(2 * QUARANTINE_RECHECK_SECONDS + 0.5)  # two rechecks, still silent
    await gateways.controllers[0].wait_idle()
    assert sorted(g["metadata"]["name"] for g in (await client.list(GATEWAYS, NAMESPACE)).items) == ["node-1", "node-2"]

    gateways.answering.add("192.168.1.3")
    await until(client, GATEWAYS, named("node-1", "node-2", "node-3"), namespace=NAMESPACE, what="node-3 back")

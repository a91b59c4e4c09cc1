"""Gateway election on a sandbox cluster: the Gateway CR and the ClusterInfo export follow the Nodes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from kube.client import KubeClient
from kube.errors import NotFound, TemporaryError
from kube.resources import NODES, SERVICES, name_of
from mcapi.config import MultiClusterConfig
from mcapi.gateway_nodes import (
    ANNOTATION_UNREACHABLE_GATEWAY,
    is_handing_over,
    unreachable_gateways,
)
from mcapi.names import ANNOTATION_GATEWAY, ANNOTATION_GATEWAY_IP
from mcapi.resources import GATEWAYS
from member.gateway import ANNOTATION_WIREGUARD_PUBLIC_KEY
from member.gateway import controller as controller_module
from member.gateway.controller import HANDOVER_SECONDS, _departure
from member.gateway.election import Candidate
from member.gateway.service_cidr import PROBE_SERVICE_NAME
from sandbox.server import SandboxServer
from tests.member_gateway.conftest import NAMESPACE, Gateways
from tests.member_gateway.kubeobjects import annotate, create_node, only, set_ready, until

Cluster = tuple[SandboxServer, KubeClient]


def handing_over(name: str) -> Callable[[list[dict[str, Any]]], dict[str, Any] | None]:
    def check(objs: list[dict[str, Any]]) -> dict[str, Any] | None:
        found = next((o for o in objs if o["metadata"]["name"] == name), None)
        return found if found is not None and is_handing_over(found) else None

    return check


async def two_candidates_node_a_elected(client: KubeClient, gateways: Gateways) -> None:
    """Two Ready candidates and the controller started: node-a, the lowest name, is the Gateway."""
    await create_node(client, "node-a", "192.168.1.1")
    await create_node(client, "node-b", "192.168.1.2")
    await gateways.start()
    await until(client, GATEWAYS, only("node-a"), namespace=NAMESPACE, what="lowest name elected")


async def exported_gateway_ip(gateways: Gateways, ip: str) -> None:
    await gateways.export_where(lambda e: e is not None and e.cluster_info.gateway_infos[0].gateway_ip == ip)


async def gateway_stays(client: KubeClient, gateways: Gateways, name: str) -> None:
    """Once the controller has nothing left to do, ``name`` is still the one Gateway."""
    await gateways.controllers[0].wait_idle()
    assert [g["metadata"]["name"] for g in (await client.list(GATEWAYS, NAMESPACE)).items] == [name]


async def test_a_ready_candidate_becomes_the_gateway_and_its_cluster_info_is_exported(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await create_node(client, "node-1", "192.168.1.11")
    await create_node(client, "node-0", "192.168.1.10", gateway=False)
    controller = await gateways.start(MultiClusterConfig(pod_cidrs=["10.10.0.0/16"]))

    gateway = await until(client, GATEWAYS, only("node-1"), namespace=NAMESPACE, what="Gateway node-1")
    assert (gateway["gatewayIP"], gateway["internalIP"], gateway["serviceCIDR"]) == (
        "192.168.1.11",
        "192.168.1.11",
        "10.96.0.0/12",  # discovered from the invalid-ClusterIP error text
    )
    assert "wireGuard" not in gateway
    export = gateways.exported["east-clusterinfo"]
    info = export.cluster_info
    assert (export.cluster_id, export.namespace, export.name) == ("east", NAMESPACE, "east")
    assert (info.cluster_id, info.service_cidr, list(info.pod_cidrs)) == ("east", "10.96.0.0/12", ["10.10.0.0/16"])
    assert [g.gateway_ip for g in info.gateway_infos] == ["192.168.1.11"]
    assert not info.HasField("wire_guard")
    await controller.wait_idle()
    assert gateways.calls == ["set east-clusterinfo"]  # once: elections that change nothing send nothing
    try:
        await client.get(SERVICES, PROBE_SERVICE_NAME, NAMESPACE)
        raise AssertionError("the Service CIDR probe Service was left behind")
    except NotFound:
        pass


async def test_a_gateway_node_turning_not_ready_hands_over_to_another_ready_candidate(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await two_candidates_node_a_elected(client, gateways)

    await set_ready(client, "node-a", False)
    await until(client, GATEWAYS, only("node-b"), namespace=NAMESPACE, what="failover to node-b")
    await exported_gateway_ip(gateways, "192.168.1.2")

    await set_ready(client, "node-a", True)  # the current Gateway stays while it is valid
    await until(client, NODES, lambda nodes: all(n["status"]["conditions"][0]["status"] == "True" for n in nodes))
    await gateway_stays(client, gateways, "node-b")


async def test_cordoning_the_gateway_node_hands_over_before_a_drain_and_uncordoning_does_not_move_it_back(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await two_candidates_node_a_elected(client, gateways)

    loop = asyncio.get_running_loop()
    await client.patch(NODES, "node-a", {"spec": {"unschedulable": True}})  # kubectl cordon (drain's first step)
    # First node-a's Gateway CR says it hands over (its agent masquerades what arrives), then it moves.
    await until(client, GATEWAYS, handing_over("node-a"), namespace=NAMESPACE, what="node-a handing over")
    announced = loop.time()
    await until(client, GATEWAYS, only("node-b"), namespace=NAMESPACE, what="hand-over to node-b")
    assert loop.time() - announced >= HANDOVER_SECONDS * 0.9
    await gateways.controllers[0].wait_idle()
    assert gateways.transitions("cordoned") == 1
    assert not is_handing_over(await client.get(GATEWAYS, "node-b", NAMESPACE))
    await exported_gateway_ip(gateways, "192.168.1.2")

    await client.patch(NODES, "node-a", {"spec": {"unschedulable": None}})  # kubectl uncordon
    await until(client, NODES, lambda nodes: not any(n.get("spec", {}).get("unschedulable") for n in nodes))
    await gateway_stays(client, gateways, "node-b")


async def test_a_gateway_uncordoned_while_it_hands_over_stays_and_stops_handing_over(
    cluster: Cluster, gateways: Gateways, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, client = cluster
    monkeypatch.setattr(controller_module, "HANDOVER_SECONDS", 30.0)
    await two_candidates_node_a_elected(client, gateways)
    await client.patch(NODES, "node-a", {"spec": {"unschedulable": True}})
    await until(client, GATEWAYS, handing_over("node-a"), namespace=NAMESPACE, what="node-a handing over")
    await client.patch(NODES, "node-a", {"spec": {"unschedulable": None}})  # changed their mind

    def settled(objs: list[dict[str, Any]]) -> dict[str, Any] | None:
        found = only("node-a")(objs)
        return found if found is not None and not is_handing_over(found) else None

    await until(client, GATEWAYS, settled, namespace=NAMESPACE, what="node-a no longer handing over")
    await gateway_stays(client, gateways, "node-a")
    assert gateways.transitions("cordoned") == 0


async def test_a_moving_gateway_is_never_absent_the_new_cr_is_written_before_the_old_one_goes(
    cluster: Cluster, gateways: Gateways
) -> None:
    """Agents that saw no Gateway at all would take their tunnels down for a moment, and drop what
    the other clusters still send to the departing Gateway (seen on real nodes during drains)."""
    _, client = cluster
    await two_candidates_node_a_elected(client, gateways)
    listed = await client.list(GATEWAYS, NAMESPACE)
    present = {name_of(obj) for obj in listed.items}
    counts: list[int] = []

    async def follow() -> None:
        watch = client.watch(GATEWAYS, NAMESPACE, resource_version=listed.resource_version)
        async with contextlib.aclosing(watch) as events:
            async for event in events:
                if event.type == "ADDED":
                    present.add(name_of(event.object))
                elif event.type == "DELETED":
                    present.discard(name_of(event.object))
                else:
                    continue
                counts.append(len(present))
                if present == {"node-b"}:
                    return

    following = asyncio.create_task(follow())
    await set_ready(client, "node-a", False)
    await asyncio.wait_for(following, timeout=10)
    assert counts == [2, 1], counts


async def test_a_candidate_reporting_the_gateway_unreachable_takes_over_and_reports_are_damped_after(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await two_candidates_node_a_elected(client, gateways)

    # node-b's agent: its probes of node-a went unanswered (node-a stays Ready all along).
    await annotate(client, "node-b", ANNOTATION_UNREACHABLE_GATEWAY, "node-a")
    await until(client, GATEWAYS, only("node-b"), namespace=NAMESPACE, what="hand-over to node-b")
    await gateways.controllers[0].wait_idle()
    assert (gateways.transitions("first"), gateways.transitions("unreachable")) == (1, 1)
    await exported_gateway_ip(gateways, "192.168.1.2")

    # node-a's agent now says the same of node-b (a flapping link): within the hold, nothing moves.
    await annotate(client, "node-b", ANNOTATION_UNREACHABLE_GATEWAY, None)
    await annotate(client, "node-a", ANNOTATION_UNREACHABLE_GATEWAY, "node-b")
    await until(client, NODES, lambda nodes: any(unreachable_gateways(n) == ("node-b",) for n in nodes))
    await gateway_stays(client, gateways, "node-b")


async def test_a_report_the_member_cannot_confirm_moves_nothing_until_the_node_stops_answering_it(
    cluster: Cluster, gateways: Gateways
) -> None:
    """node-b's probes miss (its Node busy, or only the path between the two cut) while node-a
    answers the member's own knock: node-a stays. When node-a stops answering the member too, the
    standing report moves the Gateway, with no Node event to ask again."""
    _, client = cluster
    gateways.answering.add("192.168.1.1")
    await two_candidates_node_a_elected(client, gateways)

    await annotate(client, "node-b", ANNOTATION_UNREACHABLE_GATEWAY, "node-a")
    await until(client, NODES, lambda nodes: any(unreachable_gateways(n) == ("node-a",) for n in nodes))
    await gateway_stays(client, gateways, "node-a")
    assert gateways.transitions("unreachable") == 0

    gateways.answering.clear()
    await until(client, GATEWAYS, only("node-b"), namespace=NAMESPACE, what="the confirmed report acted on")
    assert gateways.transitions("unreachable") == 1


async def test_removing_the_annotation_hands_over_and_without_candidates_the_export_is_withdrawn(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await create_node(client, "node-a", "192.168.1.1")
    await create_node(client, "node-b", "192.168.1.2", ready=False)
    await gateways.start()
    await until(client, GATEWAYS, only("node-a"), namespace=NAMESPACE)

    await annotate(client, "node-a", ANNOTATION_GATEWAY, None)
    await until(client, GATEWAYS, lambda gws: gws == [], namespace=NAMESPACE, what="no Gateway (node-b NotReady)")
    await gateways.export_where(lambda e: e is None)
    assert gateways.calls[-1] == "remove east-clusterinfo"

    await set_ready(client, "node-b", True)
    await until(client, GATEWAYS, only("node-b"), namespace=NAMESPACE, what="node-b once Ready")
    await gateways.export_where(lambda e: e is not None)


async def test_external_precedence_takes_the_external_ip_and_the_gateway_ip_annotation_overrides_it(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await create_node(client, "node-a", "192.168.1.1", external_ip="203.0.113.1")
    await gateways.start(MultiClusterConfig(gateway_ip_precedence="external", service_cidr="10.96.0.0/16"))
    gateway = await until(client, GATEWAYS, only("node-a"), namespace=NAMESPACE)
    assert (gateway["gatewayIP"], gateway["internalIP"], gateway["serviceCIDR"]) == (
        "203.0.113.1",
        "192.168.1.1",
        "10.96.0.0/16",  # configured: no discovery
    )

    await annotate(client, "node-a", ANNOTATION_GATEWAY_IP, "198.51.100.7")
    gateway = await until(
        client,
        GATEWAYS,
        lambda gws: gws and gws[0]["gatewayIP"] == "198.51.100.7" and gws[0],
        namespace=NAMESPACE,
        what="annotated gateway IP",
    )
    assert gateway["internalIP"] == "192.168.1.1"
    await gateways.export_where(
        lambda e: e is not None and e.cluster_info.gateway_infos[0].gateway_ip == "198.51.100.7"
    )


async def test_internal_precedence_ignores_the_external_ip(cluster: Cluster, gateways: Gateways) -> None:
    _, client = cluster
    await create_node(client, "node-a", "192.168.1.1", external_ip="203.0.113.1")
    await gateways.start()
    gateway = await until(client, GATEWAYS, only("node-a"), namespace=NAMESPACE)
    assert gateway["gatewayIP"] == "192.168.1.1"


async def test_the_agents_wireguard_key_reaches_the_gateway_and_the_cluster_info(
    cluster: Cluster, gateways: Gateways
) -> None:
    _, client = cluster
    await create_node(client, "node-a", "192.168.1.1")
    await gateways.start()
    await until(client, GATEWAYS, only("node-a"), namespace=NAMESPACE)

    await annotate(client, "node-a", ANNOTATION_WIREGUARD_PUBLIC_KEY, "cHVibGljLWtleQ==")
    await until(
        client,
        GATEWAYS,
        lambda gws: gws and (gws[0].get("wireGuard") or {}).get("publicKey") == "cHVibGljLWtleQ==",
        namespace=NAMESPACE,
        what="wireGuard.publicKey",
    )
    await gateways.export_where(lambda e: e is not None and e.cluster_info.wire_guard.public_key == "cHVibGljLWtleQ==")

    await annotate(client, "node-a", ANNOTATION_WIREGUARD_PUBLIC_KEY, None)
    await until(client, GATEWAYS, lambda gws: gws and "wireGuard" not in gws[0], namespace=NAMESPACE, what="no key")
    await gateways.export_where(lambda e: e is not None and not e.cluster_info.HasField("wire_guard"))


async def test_a_stale_gateway_of_a_vanished_node_is_replaced_at_start(cluster: Cluster, gateways: Gateways) -> None:
    _, client = cluster
    stale = {"metadata": {"name": "gone", "namespace": NAMESPACE}, "gatewayIP": "1.1.1.1", "internalIP": "1.1.1.1"}
    await client.create(GATEWAYS, stale)
    await create_node(client, "node-a", "192.168.1.1")
    await gateways.start()
    await until(client, GATEWAYS, only("node-a"), namespace=NAMESPACE, what="stale Gateway replaced")


async def test_a_report_that_comes_during_the_hold_is_acted_on_when_the_hold_ends(
    cluster: Cluster, gateways: Gateways, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Node event need come after the hold: the controller asks again when it ends, instead of
    leaving the Gateway on a dead Node until it turns NotReady."""
    monkeypatch.setattr(controller_module, "REPORT_HOLD_SECONDS", 1.0)
    _, client = cluster
    await two_candidates_node_a_elected(client, gateways)
    await annotate(client, "node-b", ANNOTATION_UNREACHABLE_GATEWAY, "node-a")
    await until(client, GATEWAYS, only("node-b"), namespace=NAMESPACE, what="hand-over to node-b")
    await annotate(client, "node-b", ANNOTATION_UNREACHABLE_GATEWAY, None)
    await annotate(client, "node-a", ANNOTATION_UNREACHABLE_GATEWAY, "node-b")  # within the hold
    await until(client, GATEWAYS, only("node-a"), namespace=NAMESPACE, what="back to node-a after the hold")
    assert gateways.transitions("unreachable") == 2


def test_a_cordoned_gateway_left_because_of_the_cordon_even_if_it_was_also_reported() -> None:
    """So the move starts no report hold (an operator's cordon is not a flapping link)."""
    node_a = Candidate("node-a", True, "192.168.1.1", "192.168.1.1", cordoned=True)
    node_b = Candidate("node-b", True, "192.168.1.2", "192.168.1.2", unreachable_gateways=("node-a",))
    assert _departure("node-a", [node_b], [node_a, node_b])[0] == "cordoned"


async def test_a_move_on_a_report_whose_write_fails_is_finished_on_the_retry_not_undone_by_the_hold(
    cluster: Cluster, gateways: Gateways, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new Gateway's CR could not be written (its connection went through the dead Node): the
    retry writes it, with the report still believed; the hold starts only once the move is written."""
    _, client = cluster
    await two_candidates_node_a_elected(client, gateways)
    real_ensure, failed = controller_module.ensure, []

    async def ensure_failing_once(*args: Any, **kwargs: Any) -> Any:
        if not failed:
            failed.append(True)
            raise TemporaryError("connection timed out")
        return await real_ensure(*args, **kwargs)

    monkeypatch.setattr(controller_module, "ensure", ensure_failing_once)
    await annotate(client, "node-b", ANNOTATION_UNREACHABLE_GATEWAY, "node-a")
    await until(client, GATEWAYS, only("node-b"), namespace=NAMESPACE, what="hand-over to node-b")
    await gateway_stays(client, gateways, "node-b")
    assert failed and gateways.transitions("unreachable") == 1

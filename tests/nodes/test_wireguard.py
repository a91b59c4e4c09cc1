"""The Gateways' tunnel encrypted with WireGuard (issue 24, item 3): ``trafficEncryptionMode:
wireGuard`` in every member's agent; the Gateways publish their keys, and east's Pods reach
west's Service through the encrypted tunnel (the agents' WireGuard peers count the bytes)."""

from __future__ import annotations

import re

import pytest

from hack.nodeset.clusters import Cluster
from hack.nodeset.clusterset import Mode, NodeClusterSet
from hack.nodeset.install import MEMBER_NS
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import client_pod, ensure_namespace, fetch_until, web_server
from tests.nodes.conftest import in_mode
from tests.nodes.drain import drain_while_requests_flow, gateway_off_the_member_node

NS = "wg"
MODE = Mode(encryption="wireGuard")


@pytest.fixture(scope="module")
def clusters(node_clusterset: NodeClusterSet) -> tuple[Cluster, Cluster]:
    clusterset = in_mode(node_clusterset, MODE)
    east, west = clusterset.cluster("east"), clusterset.cluster("west")
    for cluster in (east, west):
        ensure_namespace(cluster, NS)
    web_server(west, NS, "web")
    for node in east.nodes:
        client_pod(east, NS, f"client-{node.name}", node=node.name)
    return east, west


def _gateway_agent(cluster: Cluster) -> str:
    gateway = until("a Gateway", lambda: cluster.kubectl.json("get", "gateway", "-n", MEMBER_NS)["items"])[0]
    pods = cluster.kubectl.json(
        "get",
        "pods",
        "-n",
        MEMBER_NS,
        "-l",
        "component=mchub-agent",
        "--field-selector",
        f"spec.nodeName={gateway['metadata']['name']}",
    )["items"]
    return str(pods[0]["metadata"]["name"])


def _received_bytes(cluster: Cluster) -> int:
    out = cluster.kubectl("-n", MEMBER_NS, "exec", _gateway_agent(cluster), "--", "wg", "show", "all", "transfer")
    return sum(int(found) for found in re.findall(r"\t(\d+)\t\d+$", out, flags=re.MULTILINE))


def test_gateways_publish_their_wireguard_keys_to_each_other(clusters: tuple[Cluster, Cluster]) -> None:
    east, west = clusters
    for cluster, other in ((east, west), (west, east)):
        key = until(
            f"the WireGuard key of {other.name}'s Gateway in {cluster.name}",
            lambda cluster=cluster, other=other: next(
                (
                    item["spec"].get("wireGuard", {}).get("publicKey")
                    for item in cluster.kubectl.json("get", "clusterinfoimport", "-n", MEMBER_NS)["items"]
                    if item["spec"]["clusterID"].endswith(other.name)
                ),
                None,
            ),
        )
        assert len(key) == 44 and key.endswith("=")


def test_east_pods_reach_the_west_service_through_the_encrypted_tunnel(clusters: tuple[Cluster, Cluster]) -> None:
    east, west = clusters
    pods = {pod["metadata"]["name"] for pod in west.kubectl.json("get", "pods", "-n", NS, "-l", "app=web")["items"]}
    service_ip = until(
        "antrea-mc-web",
        lambda: east.kubectl("get", "service", "antrea-mc-web", "-n", NS, "-o", "jsonpath={.spec.clusterIP}"),
    )
    for node in east.nodes:
        assert fetch_until(east, NS, f"client-{node.name}", f"http://{service_ip}/") in pods
    before = _received_bytes(west)
    for node in east.nodes:
        assert fetch_until(east, NS, f"client-{node.name}", f"http://{service_ip}/") in pods
    assert _received_bytes(west) > before, "west's Gateway received nothing over WireGuard"


@pytest.mark.xfail(
    strict=False,
    reason="not yet: a WireGuard drain lost 0-1 requests in 9 drains, then 4 of 89 in a local CI run (timeouts"
    " from 2.0 to 5.8 s, before the Gateway moved at 6.3 s); the cause is not found (docs/operations.md)",
)
def test_draining_the_wireguard_gateway_node_hands_over_losing_at_most_a_few_requests(
    clusters: tuple[Cluster, Cluster],
) -> None:
    """The drain of test_services in WireGuard mode: the old Gateway masquerades what arrives while
    it hands over, and retires with its WireGuard device, so what east still sends to its key before
    the new ClusterInfo reaches it is answered."""
    east, west = clusters
    _, standby = gateway_off_the_member_node(west)
    web_server(west, NS, "web", node=standby)  # the drain moves the Gateway, not the backend
    service_ip = until(
        "antrea-mc-web",
        lambda: east.kubectl("get", "service", "antrea-mc-web", "-n", NS, "-o", "jsonpath={.spec.clusterIP}"),
    )
    client = f"client-{east.nodes[-1].name}"
    drain_while_requests_flow(east, west, NS, f"http://{service_ip}/", "wireguard_drain", client=client)

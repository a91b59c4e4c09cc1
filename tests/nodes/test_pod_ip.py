"""Pod IPs across clusters (issue 24, item 3): with ``endpointIPType: PodIP`` the imported
Service's endpoints are west's Pod IPs, and with ``enablePodToPodConnectivity`` an east Pod on
a node that is not the Gateway reaches a west Pod by its own IP."""

from __future__ import annotations

import pytest

from hack.nodeset.clusters import Cluster
from hack.nodeset.clusterset import Mode, NodeClusterSet
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import client_pod, ensure_namespace, fetch_until, web_server
from tests.nodes.conftest import in_mode

NS = "pod-ip"
MODE = Mode(endpoint_ip_type="PodIP", pod_to_pod=True)


@pytest.fixture(scope="module")
def clusters(node_clusterset: NodeClusterSet) -> tuple[Cluster, Cluster]:
    clusterset = in_mode(node_clusterset, MODE)
    east, west = clusterset.cluster("east"), clusterset.cluster("west")
    for cluster in (east, west):
        ensure_namespace(cluster, NS)
    web_server(west, NS, "web", replicas=2)
    client_pod(east, NS, "client", node=east.nodes[-1].name)
    return east, west


def _west_pods(west: Cluster) -> dict[str, str]:
    pods = west.kubectl.json("get", "pods", "-n", NS, "-l", "app=web")["items"]
    return {pod["status"]["podIP"]: pod["metadata"]["name"] for pod in pods if pod["status"].get("podIP")}


def _endpoint_ips(cluster: Cluster, name: str) -> set[str]:
    endpoints = cluster.kubectl.json("get", "endpoints", name, "-n", NS)
    return {address["ip"] for subset in endpoints.get("subsets") or [] for address in subset.get("addresses") or []}


def test_the_imported_service_lists_west_pod_ips_and_answers_from_east(clusters: tuple[Cluster, Cluster]) -> None:
    east, west = clusters
    pods = _west_pods(west)
    until("antrea-mc-web's endpoints are west's Pod IPs", lambda: _endpoint_ips(east, "antrea-mc-web") == set(pods))
    clusterset_ip = until(
        "ServiceImport web",
        lambda: east.kubectl("get", "serviceimport", "web", "-n", NS, "-o", "jsonpath={.spec.ips[0]}"),
    )
    answers = {fetch_until(east, NS, "client", f"http://{clusterset_ip}/") for _ in range(6)}
    assert answers <= set(pods.values())


def test_an_east_pod_off_the_gateway_reaches_each_west_pod_by_its_ip(clusters: tuple[Cluster, Cluster]) -> None:
    east, west = clusters
    assert east.nodes[-1].name != east.nodes[0].name, "east needs a node besides its Gateway"
    for ip, name in _west_pods(west).items():
        assert fetch_until(east, NS, "client", f"http://{ip}/") == name

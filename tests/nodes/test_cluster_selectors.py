"""KEP-5939 on real nodes (issue 27): a ``@SameAsImporter@`` region selector keeps a region's
requests in the region.

east and north are in one region, west in another (ClusterProperty ``region.topology.k8s.io``
in each cluster, written with kubectl as a user would). The same Service runs in east and west,
each answering with its Pod's name, and both export it through the v1beta1 ServiceExport with the
selector. Every request a north Pod sends to the ClusterSet IP is answered by east, and every
request a west Pod sends by west: the imported Service's endpoints hold only the importer's
region, so kube-proxy never picks another. The other tests' Service ``web`` is left alone: this
module works in Namespace ``regional``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from hack.nodeset.clusters import Cluster
from hack.nodeset.clusterset import Mode, NodeClusterSet
from hack.nodeset.install import cluster_id
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import client_pod, ensure_namespace, fetch, web_server
from tests.nodes.conftest import Members, in_mode

NS = "regional"
REGION = "region.topology.k8s.io"
MCS_GROUP = "multicluster.x-k8s.io"
REGIONS = {"east": "us-east", "north": "us-east", "west": "eu-west"}
REQUESTS = 20


def write_region(cluster: Cluster, region: str) -> None:
    cluster.kubectl.apply(
        yaml.safe_dump(
            {
                "apiVersion": "about.k8s.io/v1alpha1",
                "kind": "ClusterProperty",
                "metadata": {"name": REGION},
                "spec": {"value": region},
            }
        )
    )


def export_to_same_region(cluster: Cluster) -> None:
    cluster.kubectl.apply(
        yaml.safe_dump(
            {
                "apiVersion": "multicluster.x-k8s.io/v1beta1",
                "kind": "ServiceExport",
                "metadata": {"name": "hello", "namespace": NS},
                "spec": {"clusterSelectors": [{"propertySelector": {"matchProperties": {REGION: "@SameAsImporter@"}}}]},
            }
        )
    )


@pytest.fixture(scope="module")
def world(node_clusterset: NodeClusterSet) -> Iterator[Members]:
    clusterset = in_mode(node_clusterset, Mode())
    members = Members.of(clusterset)
    clusters = {"east": members.east, "west": members.west, "north": members.north}
    for name, cluster in clusters.items():
        write_region(cluster, REGIONS[name])
        ensure_namespace(cluster, NS)
    for exporter in (members.east, members.west):
        web_server(exporter, NS, "hello", export=False)
        export_to_same_region(exporter)
    client_pod(members.north, NS, "client", node=members.north.nodes[0].name)
    client_pod(members.west, NS, "client", node=members.west.nodes[0].name)
    yield members
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", NS, "--wait=false", "--ignore-not-found")
        cluster.kubectl("delete", "clusterproperty", REGION, "--ignore-not-found")


def pods_of(cluster: Cluster) -> set[str]:
    pods = cluster.kubectl.json("get", "pods", "-n", NS, "-l", "app=hello")["items"]
    return {pod["metadata"]["name"] for pod in pods}


def answers_from(importer: Cluster) -> list[str]:
    """The Pod names answering REQUESTS requests to the ClusterSet IP, once the import selects."""
    ip = until(
        f"ServiceImport hello in {importer.name}",
        lambda: importer.kubectl("get", "serviceimport", "hello", "-n", NS, "-o", "jsonpath={.spec.ips[0]}"),
    )
    answers = []
    for _ in range(REQUESTS):
        body = until(f"an answer at {ip} from {importer.name}", lambda: fetch(importer, NS, "client", f"http://{ip}/"))
        answers.append(body.strip().removeprefix("hello from "))
    return answers


def selected(importer: Cluster) -> set[str] | None:
    """The exporters north's or west's ServiceImport says its one selector chose (v1beta1 carries
    the results), or None before it says."""
    found = importer.kubectl(
        "get", f"serviceimports.v1beta1.{MCS_GROUP}", "hello", "-n", NS, "--ignore-not-found", "-o", "json"
    )
    results = (json.loads(found).get("status") or {}).get("clusterSelectorResults") if found.strip() else None
    return set(results[0].get("clusters") or ()) if results else None


def test_a_region_selector_keeps_each_regions_requests_in_the_region(world: Members) -> None:
    east_pods, west_pods = pods_of(world.east), pods_of(world.west)
    # Each importer's ServiceImport names its region's exporter only, before any request is counted.
    until("north's ServiceImport selecting east", lambda: selected(world.north) == {cluster_id("east")} or None)
    until("west's ServiceImport selecting west", lambda: selected(world.west) == {cluster_id("west")} or None)

    from_north = answers_from(world.north)
    assert set(from_north) <= east_pods, (from_north, east_pods)
    from_west = answers_from(world.west)
    assert set(from_west) <= west_pods, (from_west, west_pods)

"""The user guide's installation on real nodes (issue 24, item 2): what a user sees once the
manifests are applied, the member Secrets and ClusterSets made and the Gateways annotated."""

from __future__ import annotations

from typing import Any

from hack.nodeset.clusters import Cluster
from hack.nodeset.clusterset import NodeClusterSet
from hack.nodeset.install import CLUSTERSET, HUB_NODE_PORT, LEADER_NS, MEMBER_NS, cluster_id
from hack.nodeset.kubectl import until


def _pods(clusterset: NodeClusterSet, cluster: str, namespace: str, component: str) -> list[dict[str, Any]]:
    selector = f"app=antrea,component={component}"
    items: list[dict[str, Any]] = clusterset.cluster(cluster).kubectl.json(
        "get", "pods", "-n", namespace, "-l", selector
    )["items"]
    return items


def _ready(pod: dict[str, Any]) -> bool:
    conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
    return conditions.get("Ready") == "True"


def _gateway_events(cluster: Cluster) -> list[str]:
    events = cluster.kubectl.json("get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Node")
    return [
        f"{e['involvedObject']['name']} {e['reason']}: {e['message']}"
        for e in events["items"]
        if e["reason"] in ("GatewayElected", "GatewayRemoved")
    ]


def test_hub_member_and_agent_pods_are_ready_through_their_own_probes(node_clusterset: NodeClusterSet) -> None:
    leader = node_clusterset.leader.name
    hubs = _pods(node_clusterset, leader, LEADER_NS, "mchub-hub")
    assert len(hubs) == 2 and all(_ready(pod) for pod in hubs)
    roles = sorted(pod["metadata"]["labels"].get("mchub.antrea.io/hub-role", "") for pod in hubs)
    assert roles == ["follower", "leader"]
    for name, cluster in node_clusterset.clusters.items():
        (member,) = _pods(node_clusterset, name, MEMBER_NS, "mchub-member")
        assert _ready(member)
        agents = _pods(node_clusterset, name, MEMBER_NS, "mchub-agent")
        assert len(agents) == len(cluster.nodes)
        for pod in [member, *agents, *hubs]:
            (container,) = pod["spec"]["containers"]
            # Ready means the kubelet's probe said so: every workload has one.
            assert "readinessProbe" in container, pod["metadata"]["name"]
        assert all(_ready(pod) for pod in agents), [a["metadata"]["name"] for a in agents if not _ready(a)]


def test_members_dial_the_hub_through_its_node_port_from_their_own_clusters(node_clusterset: NodeClusterSet) -> None:
    leader_ips = {node.ip for node in node_clusterset.leader.nodes}
    for cluster in node_clusterset.clusters.values():
        spec = cluster.kubectl.json("get", "clusterset", CLUSTERSET, "-n", MEMBER_NS)["spec"]
        server = spec["leaders"][0]["server"]
        assert server.rpartition(":")[2] == str(HUB_NODE_PORT)
        assert server.removeprefix("https://").rpartition(":")[0] in leader_ips


def test_kubectl_get_clusterset_on_the_leader_shows_every_member_ready(node_clusterset: NodeClusterSet) -> None:
    kubectl = node_clusterset.leader.kubectl
    members = len(node_clusterset.clusters)
    table = kubectl("get", "clusterset", "-n", LEADER_NS)
    header, row = table.strip().splitlines()
    assert header.split()[:5] == ["NAME", "LEADER", "CLUSTER", "NAMESPACE", "TOTAL"]
    assert row.split()[:3] == [CLUSTERSET, str(members), str(members)]
    status = kubectl.json("get", "clusterset", CLUSTERSET, "-n", LEADER_NS)["status"]
    connected = {
        entry["clusterID"]
        for entry in status["clusterStatuses"]
        for condition in entry["conditions"]
        if condition["type"] == "ClusterConnected" and condition["status"] == "True"
    }
    assert connected == {cluster_id(name) for name in node_clusterset.clusters}


def test_every_member_elects_its_gateway_and_imports_the_others_cluster_info(node_clusterset: NodeClusterSet) -> None:
    names = set(node_clusterset.clusters)
    for name, cluster in node_clusterset.clusters.items():
        gateways = until(
            f"the Gateway of {name}",
            lambda cluster=cluster: cluster.kubectl.json("get", "gateway", "-n", MEMBER_NS)["items"] or None,
        )
        (gateway,) = gateways
        # Elected first, and kept: a move (on a report, say) would show in the Nodes' Events.
        assert gateway["metadata"]["name"] == cluster.nodes[0].name, _gateway_events(cluster)
        assert gateway["gatewayIP"] == cluster.nodes[0].ip
        expected = {cluster_id(other) for other in names - {name}}
        until(
            f"the ClusterInfoImports of {name}",
            lambda cluster=cluster, expected=expected: (
                {
                    item["spec"]["clusterID"]
                    for item in cluster.kubectl.json("get", "clusterinfoimport", "-n", MEMBER_NS)["items"]
                }
                == expected
            ),
        )

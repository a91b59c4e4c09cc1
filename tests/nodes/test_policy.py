"""A ClusterSet-scoped ingress policy on real nodes (issue 24, item 3): the user guide's
``drop-tenant-access-to-admin-namespace`` in west drops a client in east's ``role=tenant``
Namespace while a client in another east Namespace gets through.

The guide writes the rule's action as ``Deny``; Antrea's CRD (and mchub's agent) know
Allow, Drop, Reject and Pass, so the policy here says ``Drop``. The members run with
``enableStretchedNetworkPolicy`` (label identities exported, the Gateways carry the source's
identity in the VNI) and Antrea's policy CRDs and default Tiers installed, as INSTALL.md
tells a cluster without Antrea to do.
"""

from __future__ import annotations

import pytest
import yaml

from hack.nodeset.clusters import REPO, Cluster
from hack.nodeset.clusterset import Mode, NodeClusterSet
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import client_pod, ensure_namespace, fetch, fetch_until, web_server
from tests.nodes.conftest import in_mode

MODE = Mode(stretched_policy=True)
SERVER_NS = "admin-apps"
POLICY = {
    "apiVersion": "crd.antrea.io/v1beta1",
    "kind": "ClusterNetworkPolicy",
    "metadata": {"name": "drop-tenant-access-to-admin-namespace"},
    "spec": {
        "appliedTo": [{"namespaceSelector": {"matchLabels": {"role": "admin"}}}],
        "priority": 1,
        "tier": "securityops",
        "ingress": [
            {
                "action": "Drop",
                "from": [{"scope": "ClusterSet", "namespaceSelector": {"matchLabels": {"role": "tenant"}}}],
            }
        ],
    },
}


def _install_antrea_policy_crds(cluster: Cluster) -> None:
    crds = str(REPO / "deploy" / "optional" / "antrea-policy-crds.yml")
    cluster.kubectl("apply", "-f", crds)
    cluster.kubectl("wait", "--for", "condition=Established", "-f", crds, "--timeout=60s")
    cluster.kubectl("apply", "-f", str(REPO / "deploy" / "optional" / "antrea-default-tiers.yml"))


@pytest.fixture(scope="module")
def clusters(node_clusterset: NodeClusterSet) -> tuple[Cluster, Cluster]:
    east, west = node_clusterset.cluster("east"), node_clusterset.cluster("west")
    for cluster in node_clusterset.clusters.values():
        _install_antrea_policy_crds(cluster)
    in_mode(node_clusterset, MODE)
    ensure_namespace(west, SERVER_NS, {"role": "admin"})
    ensure_namespace(east, SERVER_NS)
    web_server(west, SERVER_NS, "admin-web")
    ensure_namespace(east, "tenant-a", {"role": "tenant"})
    ensure_namespace(east, "guest")
    client_pod(east, "tenant-a", "client", node=east.nodes[-1].name)
    client_pod(east, "guest", "client", node=east.nodes[-1].name)
    return east, west


def test_the_guides_clusterset_ingress_rule_drops_the_tenant_and_lets_the_guest_through(
    clusters: tuple[Cluster, Cluster],
) -> None:
    east, west = clusters
    ip = until(
        "the ClusterSet IP of admin-web",
        lambda: east.kubectl("get", "serviceimport", "admin-web", "-n", SERVER_NS, "-o", "jsonpath={.spec.ips[0]}"),
    )
    url = f"http://{ip}/"
    # Before the policy both get through (the path works for either).
    assert fetch_until(east, "tenant-a", "client", url)
    assert fetch_until(east, "guest", "client", url)
    west.kubectl.apply(yaml.safe_dump(POLICY))
    try:
        until(
            "the policy enforced at west's Gateway",
            lambda: any(
                c["type"] == "ClusterSetRulesEnforced" and c["status"] == "True"
                for c in west.kubectl.json("get", "clusternetworkpolicy", POLICY["metadata"]["name"])
                .get("status", {})
                .get("conditions", [])
            ),
            timeout=60,
        )
        until("the tenant dropped", lambda: fetch(east, "tenant-a", "client", url, seconds=2) is None, timeout=30)
        tenant = [fetch(east, "tenant-a", "client", url, seconds=2) for _ in range(5)]
        guest = [fetch(east, "guest", "client", url, seconds=2) for _ in range(5)]
        assert tenant == [None] * 5
        assert all(answer is not None for answer in guest), guest
    finally:
        west.kubectl("delete", "clusternetworkpolicy", POLICY["metadata"]["name"], "--ignore-not-found")
    assert fetch_until(east, "tenant-a", "client", url, timeout=30)

"""`get clusterproperty|clusterprofile|serviceimport` on objects written as the member and the hub write
them (the whole path, with a hub and members, is in tests/e2e/test_cluster_inventory.py)."""

from __future__ import annotations

import json

import yaml

from mcapi import names
from mcapi.resources import CLUSTER_PROFILES, CLUSTER_PROPERTIES, SERVICE_IMPORTS_V1BETA1
from tests.ctl.conftest import Cluster, Mcctl
from tests.kubeenv.cluster import ensure_namespace

NS = names.DEFAULT_LEADER_NAMESPACE


async def test_get_clusterproperty_prints_name_and_value_and_a_missing_one_exits_3(
    mcctl: Mcctl, member: Cluster
) -> None:
    for name, value in (("cluster.clusterset.k8s.io", "east"), ("region.topology.k8s.io", "us-east")):
        body = {"apiVersion": CLUSTER_PROPERTIES.api_version, "kind": "ClusterProperty", "metadata": {"name": name}}
        await member.client.create(CLUSTER_PROPERTIES, {**body, "spec": {"value": value}})

    table = await mcctl("get", "clusterproperty", "--kubeconfig", member.kubeconfig)
    assert table.code == 0, table.err
    assert [line.split() for line in table.out.splitlines()] == [
        ["NAME", "VALUE"],
        ["cluster.clusterset.k8s.io", "east"],
        ["region.topology.k8s.io", "us-east"],
    ]
    one = await mcctl(
        "get", "clusterproperty", "region.topology.k8s.io", "-o", "yaml", "--kubeconfig", member.kubeconfig
    )
    assert yaml.safe_load(one.out)["spec"] == {"value": "us-east"}
    missing = await mcctl("get", "clusterproperty", "zone.topology.k8s.io", "--kubeconfig", member.kubeconfig)
    assert missing.code == 3 and "zone.topology.k8s.io" in missing.err


async def test_get_clusterprofile_without_profiles_says_so(mcctl: Mcctl, leader: Cluster) -> None:
    await ensure_namespace(leader.client, NS)
    empty = await mcctl("get", "clusterprofile", "--kubeconfig", leader.kubeconfig)
    assert empty.code == 0 and empty.out == "" and f"No ClusterProfile in Namespace {NS} found" in empty.err
    assert json.loads((await mcctl("get", "clusterprofile", "-o", "json", "--kubeconfig", leader.kubeconfig)).out) == []
    profile = {
        "apiVersion": CLUSTER_PROFILES.api_version,
        "kind": "ClusterProfile",
        "metadata": {"name": "east", "namespace": NS},
        "spec": {"clusterManager": {"name": "someone-else"}},
    }
    await leader.client.create(CLUSTER_PROFILES, profile, NS)
    table = await mcctl("get", "clusterprofile", "-A", "--kubeconfig", leader.kubeconfig)
    assert table.out.splitlines()[-1].split() == ["east", NS, "Unknown", "<none>"]  # no status yet, no label


async def test_get_serviceimport_shows_each_selectors_clusters_for_this_importer(mcctl: Mcctl, member: Cluster) -> None:
    await ensure_namespace(member.client, "shop")
    region = "region.topology.k8s.io"
    selectors = [
        {"propertySelector": {"matchProperties": {region: "@SameAsImporter@"}}},
        {"propertySelector": {"matchExpressions": [{"key": region, "operator": "Exists"}]}},
    ]
    for name, spec_selectors in (("api", selectors), ("web", [])):
        imported = {
            "apiVersion": SERVICE_IMPORTS_V1BETA1.api_version,
            "kind": "ServiceImport",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"type": "ClusterSetIP", "ports": [{"port": 80}], "clusterSelectors": spec_selectors},
        }
        await member.client.create(SERVICE_IMPORTS_V1BETA1, imported, "shop")
        status: dict[str, object] = {"clusters": [{"cluster": "west"}, {"cluster": "east"}]}
        if spec_selectors:
            status["clusterSelectorResults"] = [{"clusters": ["east"]}, {"clusters": []}]
        await member.client.patch_status(SERVICE_IMPORTS_V1BETA1, name, {"status": status}, "shop")

    table = await mcctl("get", "serviceimport", "--kubeconfig", member.kubeconfig)
    assert table.code == 0, table.err
    assert [line.split() for line in table.out.splitlines()] == [
        ["NAMESPACE", "NAME", "TYPE", "EXPORTERS", "SELECTED"],
        ["shop", "api", "ClusterSetIP", "east,west", "east;<none>"],
        ["shop", "web", "ClusterSetIP", "east,west", "<all>"],
    ]

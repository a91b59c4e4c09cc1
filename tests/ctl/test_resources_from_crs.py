"""`get resourceexport|resourceimport` from the CRs in the leader Namespace (no --hub-url)."""

from __future__ import annotations

import json

import yaml

from mcapi import names
from mcapi.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS
from tests.ctl.conftest import Cluster, Mcctl
from tests.kubeenv.cluster import ensure_namespace

NS = names.DEFAULT_LEADER_NAMESPACE


def resource_export(cluster_id: str, name: str) -> dict[str, object]:
    return {
        "apiVersion": RESOURCE_EXPORTS.api_version,
        "kind": "ResourceExport",
        "metadata": {
            "name": names.service_export_name(cluster_id, "default", name),
            "namespace": NS,
            "labels": {names.LABEL_SOURCE_CLUSTER_ID: cluster_id, names.LABEL_SOURCE_KIND: "Service"},
        },
        "spec": {"clusterID": cluster_id, "name": name, "namespace": "default", "kind": "Service",
                 "service": {"serviceSpec": {"ports": [{"port": 80, "protocol": "TCP"}]}}},
    }  # fmt: skip


async def test_get_resourceexport_prints_antctl_columns_and_filters_by_cluster(mcctl: Mcctl, leader: Cluster) -> None:
    await ensure_namespace(leader.client, NS)
    for cluster_id in ("east", "west"):
        await leader.client.create(RESOURCE_EXPORTS, resource_export(cluster_id, "nginx"), NS)

    table = await mcctl("get", "resourceexport", "--kubeconfig", leader.kubeconfig)
    assert table.code == 0, table.err
    assert table.header() == ["CLUSTER-ID", "NAMESPACE", "NAME", "KIND"]
    assert "east-default-nginx-service" in table.out and "west-default-nginx-service" in table.out

    east = await mcctl("get", "resourceexport", "--cluster-id", "east", "-o", "json", "--kubeconfig", leader.kubeconfig)
    parsed = json.loads(east.out)
    assert [e["metadata"]["name"] for e in parsed] == ["east-default-nginx-service"]
    live = await leader.client.get(RESOURCE_EXPORTS, "east-default-nginx-service", NS)
    assert parsed[0] == live

    one = await mcctl(
        "get", "resourceexport", "west-default-nginx-service", "-o", "yaml", "--kubeconfig", leader.kubeconfig
    )
    assert yaml.safe_load(one.out)["spec"]["clusterID"] == "west"

    missing = await mcctl("get", "resourceexport", "nope", "--kubeconfig", leader.kubeconfig)
    assert missing.code == 3


async def test_get_resourceimport_prints_antctl_columns(mcctl: Mcctl, leader: Cluster) -> None:
    await ensure_namespace(leader.client, NS)
    imported = {
        "apiVersion": RESOURCE_IMPORTS.api_version,
        "kind": "ResourceImport",
        "metadata": {"name": "default-nginx-service", "namespace": NS},
        "spec": {"name": "nginx", "namespace": "default", "kind": "ServiceImport"},
    }
    await leader.client.create(RESOURCE_IMPORTS, imported, NS)
    table = await mcctl("get", "resourceimport", "--kubeconfig", leader.kubeconfig)
    assert table.code == 0, table.err
    assert table.header() == ["NAMESPACE", "NAME", "KIND"]
    assert table.out.splitlines()[-1].split() == [NS, "default-nginx-service", "ServiceImport"]

    empty = await mcctl("get", "resourceimport", "-n", "elsewhere", "-o", "json", "--kubeconfig", leader.kubeconfig)
    assert empty.code == 0
    assert json.loads(empty.out) == []

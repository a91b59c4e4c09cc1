"""`mcctl get clusterinfo`: every member's ranges, its global block and whether NAT applies to it,
from a member cluster (its ClusterInfoImports and its own record) or from the hub."""

from __future__ import annotations

import json

from hub.app import HubApp
from kube.resources import CONFIG_MAPS
from mcapi import global_addresses, names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import CLUSTER_INFO_IMPORTS, CLUSTER_SETS, GATEWAYS
from tests.ctl.conftest import Cluster, Mcctl
from tests.integration.hubclient import MemberFactory
from tests.kubeenv.cluster import ensure_namespace

NS = names.DEFAULT_MEMBER_NAMESPACE


def cluster_info_import(cluster_id: str, block: str, addressed: bool, service_cidr: str) -> dict[str, object]:
    spec: dict[str, object] = {
        "clusterID": cluster_id,
        "serviceCIDR": service_cidr,
        "podCIDRs": ["10.1.0.0/16"],
        "gatewayInfos": [{"gatewayIP": "198.18.0.13"}],
        "globalCIDR": block,
    }
    if addressed:
        spec["globallyAddressed"] = True
    return {
        "apiVersion": CLUSTER_INFO_IMPORTS.api_version,
        "kind": "ClusterInfoImport",
        "metadata": {"name": f"{cluster_id}-clusterinfo", "namespace": NS},
        "spec": spec,
    }


async def test_from_a_member_the_rows_say_which_clusters_are_reached_through_their_global_cidr(
    mcctl: Mcctl, member: Cluster
) -> None:
    client = member.client
    await ensure_namespace(client, NS)
    await client.create(CLUSTER_INFO_IMPORTS, cluster_info_import("west", "242.0.32.0/20", True, "10.97.0.0/16"), NS)
    await client.create(CLUSTER_INFO_IMPORTS, cluster_info_import("north", "242.0.0.0/20", False, "10.96.0.0/16"), NS)
    await client.create(
        CLUSTER_SETS,
        {"apiVersion": CLUSTER_SETS.api_version, "kind": "ClusterSet", "metadata": {"name": "set", "namespace": NS},
         "spec": {"clusterID": "east", "leaders": [{"clusterID": "north"}]}},
        NS,
    )  # fmt: skip
    await client.create(
        GATEWAYS,
        {"apiVersion": GATEWAYS.api_version, "kind": "Gateway", "metadata": {"name": "east-node1", "namespace": NS},
         "gatewayIP": "198.18.0.12", "internalIP": "198.18.0.12", "serviceCIDR": "10.97.0.0/16"},
        NS,
    )  # fmt: skip
    record = global_addresses.GlobalAddresses("242.0.16.0/20", True)
    await client.create(
        CONFIG_MAPS,
        {"metadata": {"name": global_addresses.CONFIGMAP, "namespace": NS}, "data": record.to_data()},
        NS,
    )

    table = await mcctl("get", "clusterinfo", "--kubeconfig", member.kubeconfig)
    assert table.code == 0, table.err
    assert table.header() == ["CLUSTER-ID", "GATEWAY-IP", "SERVICE-CIDR", "POD-CIDRS", "GLOBAL-CIDR", "REACHED-AT"]
    rows = {line.split()[0]: line for line in table.out.splitlines()[1:] if line.strip()}
    assert rows["west"].split()[-3:] == ["global", "CIDR", "(NAT)"] and "242.0.32.0/20" in rows["west"]
    assert rows["north"].endswith("own ranges")
    assert "242.0.16.0/20" in rows["east"] and "(this cluster)" in rows["east"] and rows["east"].endswith("(NAT)")
    assert "overlap another member's" in table.err  # the note under the table

    one = await mcctl("get", "clusterinfo", "west", "-o", "json", "--kubeconfig", member.kubeconfig)
    (west,) = json.loads(one.out)
    assert west == {
        "clusterID": "west",
        "gatewayIP": "198.18.0.13",
        "serviceCIDR": "10.97.0.0/16",
        "podCIDRs": ["10.1.0.0/16"],
        "globalCIDR": "242.0.32.0/20",
        "globallyAddressed": True,
        "reachedAt": "global CIDR (NAT)",
    }
    missing = await mcctl("get", "clusterinfo", "south", "--kubeconfig", member.kubeconfig)
    assert missing.code == 3


async def test_from_the_hub_every_member_shows_as_the_hub_stamped_it(mcctl: Mcctl, hub: HubApp) -> None:
    factory = MemberFactory(hub)
    try:
        for cid in ("east", "west"):
            member = await factory(cid)
            await member.export(
                pb.ResourceExport(
                    export_name=names.cluster_info_export_name(cid), cluster_id=cid, namespace=NS, name=cid,
                    cluster_info=pb.ClusterInfo(cluster_id=cid, service_cidr="10.96.0.0/16",
                                                gateway_infos=[pb.GatewayInfo(gateway_ip="198.18.0.1")]),
                )
            )  # fmt: skip
        assert hub.ca_cert is not None
        shown = await mcctl(
            "get", "clusterinfo", "-o", "json", "--hub-url", hub.rest_url, "--token", hub.admin_token,
            "--hub-ca-file", hub.ca_cert,
        )  # fmt: skip
    finally:
        await factory.close()
    assert shown.code == 0, shown.err
    # This hub has no global CIDR: the overlap is there, nobody is reached through NAT.
    assert {(d["clusterID"], d["reachedAt"]) for d in json.loads(shown.out)} == {
        ("east", "own ranges"),
        ("west", "own ranges"),
    }

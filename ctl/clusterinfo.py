"""`mcctl get clusterinfo`: every member's Gateway and ranges, its global block, and whether it
is reached through it (NAT) or at its own addresses.

With a hub URL: the hub's ClusterInfo imports, one per member with a Gateway, as the hub stamped
them (hub.merge.global_addressing). Otherwise, from a member cluster: its ClusterInfoImports (the
other members) and its own row, from its Gateway, its MultiClusterConfig and the record of its
global addresses (ConfigMap mchub-global-addresses).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ctl.access import HubAccess, HubRest, hub_access, open_cluster
from ctl.errors import EXIT_OK, NotFoundError
from ctl.output import FORMATS, note, print_objects
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import CONFIG_MAPS, Obj
from mcapi import global_addresses, names
from mcapi.config import ConfigError, parse_configmap_data
from mcapi.resources import CLUSTER_INFO_IMPORTS, CLUSTER_SETS, GATEWAYS

HEADER = ("CLUSTER-ID", "GATEWAY-IP", "SERVICE-CIDR", "POD-CIDRS", "GLOBAL-CIDR", "REACHED-AT")
NAT = "global CIDR (NAT)"
DIRECT = "own ranges"

Leaf = Callable[..., argparse.ArgumentParser]


def summary(cluster_id: str, info: dict[str, Any], *, local: bool = False) -> dict[str, Any]:
    """One member as mcctl shows it (also what -o json/yaml prints)."""
    addressed = bool(info.get("globallyAddressed"))
    return {
        "clusterID": cluster_id + (" (this cluster)" if local else ""),
        "gatewayIP": ",".join(str(g.get("gatewayIP", "")) for g in info.get("gatewayInfos") or []),
        "serviceCIDR": str(info.get("serviceCIDR") or ""),
        "podCIDRs": [str(c) for c in info.get("podCIDRs") or []],
        "globalCIDR": str(info.get("globalCIDR") or ""),
        "globallyAddressed": addressed,
        "reachedAt": NAT if addressed else DIRECT,
    }


def rows(data: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return [
        (
            d["clusterID"],
            d["gatewayIP"] or "<none>",
            d["serviceCIDR"] or "<none>",
            ",".join(d["podCIDRs"]) or "<none>",
            d["globalCIDR"] or "<none>",
            d["reachedAt"],
        )
        for d in data
    ]


async def from_hub(hub: HubAccess) -> list[dict[str, Any]]:
    async with HubRest(hub) as rest:
        items = await rest.items("/api/v1/resourceimports", {"kind": names.KIND_CLUSTER_INFO})
    found = []
    for item in items:
        info = (item.get("spec") or {}).get("clusterinfo") or {}  # Antrea's ResourceImport spelling
        found.append(summary(str(info.get("clusterID", "")), info))
    return found


async def from_member(client: KubeClient, namespace: str) -> list[dict[str, Any]]:
    imports = (await client.list_all(CLUSTER_INFO_IMPORTS, namespace)).items
    found = [summary(str((o.get("spec") or {}).get("clusterID", "")), o.get("spec") or {}) for o in imports]
    own = await _own(client, namespace)
    return ([own] if own is not None else []) + found


async def _own(client: KubeClient, namespace: str) -> dict[str, Any] | None:
    clustersets = (await client.list_all(CLUSTER_SETS, namespace)).items
    if not clustersets:
        return None
    cluster_id = str((clustersets[0].get("spec") or {}).get("clusterID", ""))
    gateways = sorted((await client.list_all(GATEWAYS, namespace)).items, key=lambda g: g["metadata"]["name"])
    recorded = await _configmap(client, global_addresses.CONFIGMAP, namespace)
    record = global_addresses.GlobalAddresses.from_data(recorded.get("data"))
    config = await _configmap(client, names.MC_CONTROLLER_CONFIGMAP, namespace)
    try:
        pods = list(parse_configmap_data(config.get("data") or {}).pod_cidrs)
    except ConfigError:
        pods = []
    info = {
        "gatewayInfos": [{"gatewayIP": g.get("gatewayIP", "")} for g in gateways[:1]],
        "serviceCIDR": gateways[0].get("serviceCIDR", "") if gateways else "",
        "podCIDRs": list(pods),
        "globalCIDR": record.block,
        "globallyAddressed": record.globally_addressed and bool(record.block),
    }
    return summary(cluster_id, info, local=True)


async def _configmap(client: KubeClient, name: str, namespace: str) -> Obj:
    try:
        return await client.get(CONFIG_MAPS, name, namespace)
    except NotFound:
        return {}


async def get_clusterinfo(args: argparse.Namespace) -> int:
    hub = hub_access(args.hub_url, args.token, args.token_file, required=False, ca_file=args.hub_ca_file)
    if hub is not None:
        data = await from_hub(hub)
    else:
        client = await open_cluster(args.kubeconfig)
        try:
            data = await from_member(client, args.namespace)
        except NotFound:
            raise NotFoundError(
                "this cluster serves no ClusterInfoImports: point --kubeconfig at a member cluster, "
                "or read the hub with --hub-url"
            ) from None
        finally:
            await client.close()
    if args.cluster_id:
        data = [d for d in data if d["clusterID"].split(" ")[0] == args.cluster_id]
        if not data:
            raise NotFoundError(f"no ClusterInfo of cluster {args.cluster_id!r}")
    print_objects(data, args.output, HEADER, rows)
    if args.output == "table" and any(d["globallyAddressed"] for d in data):
        note(
            "A cluster reached through its global CIDR has Service or Pod CIDRs that overlap another member's: "
            "its exported Services and Pods answer at addresses of that block, and its own cross-cluster "
            "traffic leaves SNATed to the block's first address."
        )
    return EXIT_OK


def register(leaf: Leaf, get_kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`mcctl get clusterinfo [CLUSTER_ID] [-n NAMESPACE] [-o ...]`."""
    parser = leaf(
        get_kinds,
        "clusterinfo",
        "print every member's Gateway, ranges and global CIDR, and whether NAT applies to it "
        "(the hub's with --hub-url, else a member cluster's ClusterInfoImports)",
        get_clusterinfo,
    )
    parser.add_argument("cluster_id", nargs="?", help="only this member")
    default = names.DEFAULT_MEMBER_NAMESPACE
    parser.add_argument("-n", "--namespace", default=default, help=f"the member's Namespace (default {default})")
    parser.add_argument("-o", "--output", choices=FORMATS, default="table", help="table (default), json or yaml")

"""The Endpoints import as local objects: the Endpoints ``antrea-mc-<name>`` and MCS
EndpointSlices, one set per source cluster (pure functions).

The hub tags every subset with its exporting cluster. Endpoints get the subsets
without that tag; EndpointSlices are grouped by (cluster, address type, ports), at
most 1000 endpoints each, and named ``antrea-mc-<name>.<cluster>[.<n>]``: Service
names and cluster IDs are DNS labels without dots, so the name is unambiguous.
Node names are dropped: a remote cluster's Node means nothing here and would
mislead node-local traffic policies. An address a globally addressed exporter gave a global
address (hub.merge.global_addressing) is written as that address: only it is routed here.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from kube.resources import ENDPOINT_SLICES, Obj
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.ownership import (
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    LABEL_SKIP_MIRROR,
    MANAGED_BY,
    imported_service_annotations,
    imported_service_labels,
)

MAX_ENDPOINTS_PER_SLICE = 1000
# A subset the hub did not tag (it always does) still needs a slice name.
UNKNOWN_CLUSTER = "unknown"

PortKey = tuple[tuple[str, int, str], ...]


def _port(port: pb.EndpointPort) -> dict[str, Any]:
    entry: dict[str, Any] = {"port": port.port, "protocol": port.protocol or "TCP"}
    if port.name:
        entry["name"] = port.name
    return entry


def reachable_ip(address: pb.EndpointAddress) -> str:
    """Where this cluster reaches an endpoint: its global address when it has one."""
    return address.global_ip or address.ip


def _address(address: pb.EndpointAddress) -> dict[str, Any]:
    entry: dict[str, Any] = {"ip": reachable_ip(address)}
    if address.hostname:
        entry["hostname"] = address.hostname
    return entry


def desired_endpoints(message: pb.ResourceImport) -> Obj:
    subsets = [
        {"addresses": [_address(a) for a in s.addresses], "ports": [_port(p) for p in s.ports]}
        for s in message.endpoints.subsets
        if s.addresses
    ]
    return {
        "metadata": {
            "name": names.imported_object_name(message.name),
            "namespace": message.namespace,
            "annotations": imported_service_annotations(),
            "labels": {LABEL_SKIP_MIRROR: "true", **imported_service_labels()},
        },
        "subsets": subsets or None,
    }


def _address_type(ip: str) -> str:
    try:
        return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"
    except ValueError:
        return "FQDN"


def desired_endpoint_slices(message: pb.ResourceImport) -> list[Obj]:
    groups: dict[tuple[str, str, PortKey], list[pb.EndpointAddress]] = {}
    ports_of: dict[PortKey, list[dict[str, Any]]] = {}
    for subset in message.endpoints.subsets:
        cluster = subset.cluster_id or UNKNOWN_CLUSTER
        port_key: PortKey = tuple(sorted((p.name, p.port, p.protocol or "TCP") for p in subset.ports))
        ports_of.setdefault(port_key, [_port(p) for p in subset.ports])
        for address in subset.addresses:
            ip = reachable_ip(address)
            group = groups.setdefault((cluster, _address_type(ip), port_key), [])
            if all(reachable_ip(seen) != ip for seen in group):
                group.append(address)
    slices: list[Obj] = []
    index_of_cluster: dict[str, int] = {}
    for (cluster, address_type, port_key), addresses in sorted(groups.items()):
        for start in range(0, len(addresses), MAX_ENDPOINTS_PER_SLICE):
            index = index_of_cluster.get(cluster, 0)
            index_of_cluster[cluster] = index + 1
            chunk = addresses[start : start + MAX_ENDPOINTS_PER_SLICE]
            slices.append(
                _slice(
                    message, cluster, index=index, address_type=address_type, ports=ports_of[port_key], addresses=chunk
                )
            )
    return slices


def slice_name(service_name: str, cluster: str, index: int) -> str:
    base = f"{names.imported_object_name(service_name)}.{cluster}"
    return base if index == 0 else f"{base}.{index}"


def _slice(
    message: pb.ResourceImport,
    cluster: str,
    *,
    index: int,
    address_type: str,
    ports: list[dict[str, Any]],
    addresses: list[pb.EndpointAddress],
) -> Obj:
    endpoints = []
    for address in addresses:
        endpoint: dict[str, Any] = {"addresses": [reachable_ip(address)], "conditions": {"ready": True}}
        if address.hostname:
            endpoint["hostname"] = address.hostname
        endpoints.append(endpoint)
    return {
        "apiVersion": ENDPOINT_SLICES.api_version,
        "kind": ENDPOINT_SLICES.kind,
        "metadata": {
            "name": slice_name(message.name, cluster, index),
            "namespace": message.namespace,
            "annotations": imported_service_annotations(),
            "labels": {
                names.LABEL_MCS_SERVICE_NAME: message.name,
                names.LABEL_MCS_SOURCE_CLUSTER: cluster,
                LABEL_SERVICE_NAME: names.imported_object_name(message.name),
                LABEL_MANAGED_BY: MANAGED_BY,
                **imported_service_labels(),
            },
        },
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": ports,
    }

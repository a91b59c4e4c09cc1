"""This cluster's own share of an Endpoints import: its Service's ready endpoints, not what it exported.

In ``endpointIPType: ClusterIP`` a member exports its Service's ClusterIP as the one endpoint,
and the hub hands that subset back to every member, the exporter included. Other clusters reach
it through their Gateways, where the ClusterIP is translated once more. In the exporting cluster
itself nothing does that: kube-proxy translates the ClusterSet IP to an endpoint once (iptables
does not translate the result again), so a Pod that connects to ``antrea-mc-<name>`` or the
ClusterSet IP would be sent to a ClusterIP that no route leads to (the mcs-api conformance suite's
Connectivity cases from the exporting cluster). So the importer writes, for the subset of its own
cluster, the local Service's ready endpoints (Pod IPs, with the target ports) instead, keeping the
ports the hub merged for it (their names: a port that lost a PortConflict stays out) and the
place of the subset. Remote clusters' subsets are written as the hub merged them.

The local Endpoints come from the ServiceExportController's watch of this cluster's Endpoints (no
request of its own); the importer is told when they change and writes the import again, only
what differs. In PodIP mode and for Headless Services the exported subset already holds these
addresses: writing the local ones only makes them current sooner. An import without a subset of
this cluster (it does not export the Service, or none of its ports is merged) is left as it is.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from kube.informer import Handler
from kube.resources import Obj
from mcapi.convert import ConversionError, endpoints_from_endpoints_json
from mcapi.mchub.v1 import common_area_pb2 as pb


class LocalEndpoints(Protocol):
    """This cluster's Endpoints as a watch shows them, and their changes (an Informer)."""

    synced: asyncio.Event

    def get(self, name: str, namespace: str | None = None) -> Obj | None: ...

    def add_handler(self, handler: Handler) -> None: ...


def has_subset_of(message: pb.ResourceImport, cluster_id: str) -> bool:
    return message.HasField("endpoints") and any(s.cluster_id == cluster_id for s in message.endpoints.subsets)


def _local_subsets(local: Obj | None, ports: set[tuple[str, str]], cluster_id: str) -> list[pb.EndpointSubset]:
    """The ready addresses of the local Endpoints, with the ports named in ``ports`` (name, protocol)."""
    subsets = []
    for subset in endpoints_from_endpoints_json(local or {}).subsets:
        kept = [p for p in subset.ports if (p.name, p.protocol) in ports]
        if kept and subset.addresses:
            subsets.append(pb.EndpointSubset(addresses=subset.addresses, ports=kept, cluster_id=cluster_id))
    return subsets


def with_local_endpoints(
    message: pb.ResourceImport, cluster_id: str, local: LocalEndpoints | None
) -> pb.ResourceImport:
    """The Endpoints import with this cluster's subsets replaced by its Service's ready endpoints;
    the import itself when it has none of this cluster, or the local Endpoints are not known
    (no watch, not synced yet, or not readable: the hub's subsets are kept then)."""
    if local is None or not local.synced.is_set() or not has_subset_of(message, cluster_id):
        return message
    ports = {
        (p.name, p.protocol or "TCP") for s in message.endpoints.subsets if s.cluster_id == cluster_id for p in s.ports
    }
    try:
        mine = _local_subsets(local.get(message.name, message.namespace), ports, cluster_id)
    except ConversionError:
        return message
    subsets: list[pb.EndpointSubset] = []
    for subset in message.endpoints.subsets:
        if subset.cluster_id != cluster_id:
            subsets.append(subset)
        elif mine:  # at the place of the first subset of this cluster
            subsets.extend(mine)
            mine = []
    replaced = pb.ResourceImport()
    replaced.CopyFrom(message)
    del replaced.endpoints.subsets[:]
    replaced.endpoints.subsets.extend(subsets)
    return replaced

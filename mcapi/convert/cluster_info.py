"""ClusterInfo: the wire message <-> the CRD shape (a ResourceExport payload,
a ResourceImport payload, the spec of a ClusterInfoImport)."""

from __future__ import annotations

from mcapi.crds.base import ObjectMeta
from mcapi.crds.gateway import ClusterInfo, ClusterInfoImport, GatewayInfo, WireGuardInfo
from mcapi.mchub.v1 import common_area_pb2 as pb


def cluster_info_to_pb(info: ClusterInfo) -> pb.ClusterInfo:
    message = pb.ClusterInfo(
        cluster_id=info.cluster_id,
        service_cidr=info.service_cidr,
        gateway_infos=[pb.GatewayInfo(gateway_ip=g.gateway_ip) for g in info.gateway_infos],
        pod_cidrs=list(info.pod_cidrs),
        global_cidr=info.global_cidr or "",
        globally_addressed=bool(info.globally_addressed),
    )
    if info.wire_guard is not None:
        message.wire_guard.CopyFrom(pb.WireGuardInfo(public_key=info.wire_guard.public_key))
    return message


def cluster_info_from_pb(message: pb.ClusterInfo) -> ClusterInfo:
    return ClusterInfo(
        cluster_id=message.cluster_id,
        service_cidr=message.service_cidr,
        gateway_infos=[GatewayInfo(gateway_ip=g.gateway_ip) for g in message.gateway_infos],
        pod_cidrs=list(message.pod_cidrs),
        wire_guard=(
            WireGuardInfo(public_key=message.wire_guard.public_key) if message.HasField("wire_guard") else None
        ),
        # Absent unless set, so a ClusterSet without global addressing keeps Antrea's shape.
        global_cidr=message.global_cidr or None,
        globally_addressed=message.globally_addressed or None,
    )


def build_cluster_info_import(message: pb.ClusterInfo, namespace: str, name: str) -> ClusterInfoImport:
    """The ClusterInfoImport a member writes for another member's ClusterInfo."""
    return ClusterInfoImport(metadata=ObjectMeta(namespace=namespace, name=name), spec=cluster_info_from_pb(message))

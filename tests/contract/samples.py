"""Realistic objects for store tests: names follow Antrea, payloads are typed.

Times are whole seconds: a backend that stores RFC3339 timestamps (as
Kubernetes does) need not keep sub-second precision to pass the contract.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf import struct_pb2, timestamp_pb2

from hub.store.base import MemberRecord, WriteBatch
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def service_export(cluster_id: str, namespace: str, name: str, *, port: int = 80) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.service_export_name(cluster_id, namespace, name),
        cluster_id=cluster_id,
        namespace=namespace,
        name=name,
        service=pb.ServiceSpec(
            type="ClusterIP",
            ports=[pb.ServicePort(name="http", protocol="TCP", port=port)],
            cluster_ip="10.96.0.10",
            cluster_ips=["10.96.0.10"],
            session_affinity="None",
            ip_families=["IPv4"],
        ),
        create_time=timestamp_pb2.Timestamp(seconds=int(T0.timestamp())),
        status=pb.ExportStatus(verdict=pb.VERDICT_CONFLICT, reason="PortConflict", message="port http differs"),
    )


def endpoints_export(cluster_id: str, namespace: str, name: str) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.endpoints_export_name(cluster_id, namespace, name),
        cluster_id=cluster_id,
        namespace=namespace,
        name=name,
        endpoints=pb.EndpointsSpec(
            subsets=[
                pb.EndpointSubset(
                    addresses=[pb.EndpointAddress(ip="10.244.1.5", node_name="node-1")],
                    ports=[pb.EndpointPort(name="http", port=8080, protocol="TCP")],
                )
            ]
        ),
        create_time=timestamp_pb2.Timestamp(seconds=int(T0.timestamp()) + 1),
        status=pb.ExportStatus(verdict=pb.VERDICT_ACCEPTED),
    )


def cluster_info_export(cluster_id: str) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.cluster_info_export_name(cluster_id),
        cluster_id=cluster_id,
        namespace="kube-system",
        name=cluster_id,
        cluster_info=pb.ClusterInfo(
            cluster_id=cluster_id,
            service_cidr="10.96.0.0/12",
            gateway_infos=[pb.GatewayInfo(gateway_ip="172.18.0.2")],
            pod_cidrs=["10.244.0.0/16"],
            wire_guard=pb.WireGuardInfo(public_key="c2VjcmV0LWtleQ=="),
        ),
        create_time=timestamp_pb2.Timestamp(seconds=int(T0.timestamp()) + 2),
        status=pb.ExportStatus(verdict=pb.VERDICT_ACCEPTED),
    )


def acnp_export(name: str) -> pb.ResourceExport:
    policy = struct_pb2.Struct()
    policy.update(
        {
            "priority": 10,
            "tier": "securityops",
            "appliedTo": [{"namespaceSelector": {"matchLabels": {"env": "prod"}}}],
            "ingress": [{"action": "Drop", "from": [{"namespaces": {"match": "Self"}}]}],
        }
    )
    return pb.ResourceExport(
        export_name=f"admin-{name}",
        cluster_id="leader",
        namespace="antrea-multicluster",
        name=name,
        cluster_network_policy=policy,
        status=pb.ExportStatus(verdict=pb.VERDICT_ACCEPTED),
    )


def label_identity_export(cluster_id: str, normalized_label: str) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.label_identity_export_name(cluster_id, normalized_label),
        cluster_id=cluster_id,
        label_identity=pb.LabelIdentityExport(normalized_label=normalized_label),
    )


def service_import(namespace: str, name: str, *, clusters: tuple[str, ...] = ("east",)) -> pb.ResourceImport:
    return pb.ResourceImport(
        import_name=names.service_import_name(namespace, name),
        namespace=namespace,
        name=name,
        service_import=pb.ServiceImportSpec(
            type="ClusterSetIP",
            ports=[pb.ServicePort(name="http", protocol="TCP", port=80)],
            session_affinity="None",
            ip_families=["IPv4"],
            clusters=sorted(clusters),
        ),
    )


def endpoints_import(namespace: str, name: str) -> pb.ResourceImport:
    return pb.ResourceImport(
        import_name=names.endpoints_import_name(namespace, name),
        namespace=namespace,
        name=name,
        endpoints=pb.EndpointsSpec(
            subsets=[
                pb.EndpointSubset(
                    addresses=[pb.EndpointAddress(ip="10.96.0.10")],
                    ports=[pb.EndpointPort(name="http", port=80, protocol="TCP")],
                    cluster_id="east",
                )
            ]
        ),
    )


def cluster_info_import(cluster_id: str, *, targets: tuple[str, ...] = ()) -> pb.ResourceImport:
    return pb.ResourceImport(
        import_name=names.cluster_info_import_name(cluster_id),
        namespace="kube-system",
        name=cluster_id,
        cluster_ids=list(targets),
        cluster_info=pb.ClusterInfo(cluster_id=cluster_id, service_cidr="10.96.0.0/12"),
    )


def label_identity_import(normalized_label: str, identity: int) -> pb.ResourceImport:
    return pb.ResourceImport(
        import_name=names.label_identity_import_name(normalized_label),
        label_identity=pb.LabelIdentity(label=normalized_label, id=identity),
    )


def member(cluster_id: str, *, heartbeat_after: timedelta = timedelta(seconds=10)) -> MemberRecord:
    return MemberRecord(
        cluster_id=cluster_id,
        cluster_set_id="clusterset1",
        leader_cluster_id="leader",
        joined=T0,
        last_heartbeat=T0 + heartbeat_after,
    )


def puts_one_import(n: int) -> WriteBatch:
    """A batch whose only change is the ServiceImport default/svc-<n>."""
    return WriteBatch(put_imports=[service_import("default", f"svc-{n}")])

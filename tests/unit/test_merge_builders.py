"""Builders of exports for the merge engine's tests (no tests here).

Ages are seconds since the epoch in create_time: a smaller age is an older
export, which wins conflicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from google.protobuf import struct_pb2, timestamp_pb2

from hub.merge import MergeConfig, MergeContext
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

NAMESPACE = "demo"
SERVICE = "web"
CTX = MergeContext(config=MergeConfig())
STRICT_CTX = MergeContext(config=MergeConfig(strict_ports=True))
HTTP = ("http", "TCP", 80)

PortTuple = tuple[str, str, int]


def stamp(age: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=1_700_000_000 + age)


def service_export(
    cluster: str,
    *,
    age: int = 0,
    ports: Sequence[PortTuple] = (HTTP,),
    service_type: str = "ClusterIP",
    cluster_ip: str = "10.96.0.10",
    affinity: str = "",
    timeout: int = 0,
    internal_traffic_policy: str = "",
    traffic_distribution: str = "",
    ip_families: Sequence[str] = (),
    exported_labels: Mapping[str, str] | None = None,
    exported_annotations: Mapping[str, str] | None = None,
    namespace: str = NAMESPACE,
    name: str = SERVICE,
) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.service_export_name(cluster, namespace, name),
        cluster_id=cluster,
        namespace=namespace,
        name=name,
        create_time=stamp(age),
        service=pb.ServiceSpec(
            type=service_type,
            ports=[pb.ServicePort(name=n, protocol=p, port=num) for n, p, num in ports],
            cluster_ip=cluster_ip,
            session_affinity=affinity,
            session_affinity_timeout_seconds=timeout,
            internal_traffic_policy=internal_traffic_policy,
            traffic_distribution=traffic_distribution,
            ip_families=list(ip_families),
            exported_labels=exported_labels or {},
            exported_annotations=exported_annotations or {},
        ),
    )


def endpoints_export(
    cluster: str,
    ips: Sequence[str],
    *,
    age: int = 0,
    ports: Sequence[PortTuple] = (HTTP,),
    namespace: str = NAMESPACE,
    name: str = SERVICE,
) -> pb.ResourceExport:
    """ClusterIP shape: one address, the Service's ClusterIP; PodIP shape: the Pod IPs."""
    subset = pb.EndpointSubset(
        addresses=[pb.EndpointAddress(ip=ip) for ip in ips],
        ports=[pb.EndpointPort(name=n, protocol=p, port=num) for n, p, num in ports],
    )
    return pb.ResourceExport(
        export_name=names.endpoints_export_name(cluster, namespace, name),
        cluster_id=cluster,
        namespace=namespace,
        name=name,
        create_time=stamp(age),
        endpoints=pb.EndpointsSpec(subsets=[subset]),
    )


def cluster_info_export(cluster: str, *, age: int = 0, gateway_ip: str = "172.18.0.2") -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.cluster_info_export_name(cluster),
        cluster_id=cluster,
        namespace="kube-system",
        name=cluster,
        create_time=stamp(age),
        cluster_info=pb.ClusterInfo(
            cluster_id=cluster,
            service_cidr="10.96.0.0/12",
            gateway_infos=[pb.GatewayInfo(gateway_ip=gateway_ip)],
            pod_cidrs=["10.244.0.0/16"],
        ),
    )


def acnp_export(name: str = "deny-all", *, cluster: str = "admin", age: int = 0) -> pb.ResourceExport:
    policy = struct_pb2.Struct()
    policy.update({"priority": 1, "tier": "securityops", "ingress": [{"action": "Drop"}]})
    return pb.ResourceExport(
        export_name=f"{name}-acnp",
        cluster_id=cluster,
        namespace="antrea-multicluster",
        name=name,
        create_time=stamp(age),
        cluster_network_policy=policy,
    )


def label_export(cluster: str, label: str = "ns:kubernetes.io/metadata.name=demo&pod:app=web") -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.label_identity_export_name(cluster, label),
        cluster_id=cluster,
        label_identity=pb.LabelIdentityExport(normalized_label=label),
    )


def service_import_name() -> str:
    return names.service_import_name(NAMESPACE, SERVICE)


def endpoints_import_name() -> str:
    return names.endpoints_import_name(NAMESPACE, SERVICE)


def port_tuples(ports: Sequence[pb.ServicePort]) -> list[PortTuple]:
    return [(p.name, p.protocol, p.port) for p in ports]

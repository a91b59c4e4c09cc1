"""Wire imports as the hub sends them, for driving ImportApplier.handle directly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcapi import names
from mcapi.convert import dict_to_struct
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import Upsert


def service_import(
    namespace: str,
    name: str,
    ports: Sequence[tuple[str, int, str]] = (("http", 80, "TCP"),),
    *,
    import_type: str = "ClusterSetIP",
    clusters: Sequence[str] = ("east",),
    affinity: str = "None",
    affinity_timeout: int = 0,
    ip_families: Sequence[str] = (),
) -> Upsert:
    spec = pb.ServiceImportSpec(
        type=import_type,
        ports=[pb.ServicePort(name=n, port=p, protocol=proto) for n, p, proto in ports],
        session_affinity=affinity,
        session_affinity_timeout_seconds=affinity_timeout,
        ip_families=list(ip_families),
        clusters=sorted(clusters),
    )
    return Upsert(
        pb.ResourceImport(
            import_name=names.service_import_name(namespace, name), namespace=namespace, name=name, service_import=spec
        )
    )


def endpoints_import(
    namespace: str, name: str, ips_by_cluster: Mapping[str, Sequence[str]], port: int = 8080
) -> Upsert:
    subsets = [
        pb.EndpointSubset(
            addresses=[pb.EndpointAddress(ip=ip, node_name="remote-node") for ip in ips],
            ports=[pb.EndpointPort(name="http", port=port, protocol="TCP")],
            cluster_id=cluster,
        )
        for cluster, ips in ips_by_cluster.items()
    ]
    return Upsert(
        pb.ResourceImport(
            import_name=names.endpoints_import_name(namespace, name),
            namespace=namespace,
            name=name,
            endpoints=pb.EndpointsSpec(subsets=subsets),
        )
    )


def acnp_import(name: str, spec: Mapping[str, Any]) -> Upsert:
    return Upsert(
        pb.ResourceImport(
            import_name=names.acnp_import_name(name), name=name, cluster_network_policy=dict_to_struct(spec)
        )
    )


def cluster_info_import(cluster_id: str, gateway_ip: str = "172.18.0.2") -> Upsert:
    info = pb.ClusterInfo(
        cluster_id=cluster_id,
        service_cidr="10.112.0.0/16",
        gateway_infos=[pb.GatewayInfo(gateway_ip=gateway_ip)],
        pod_cidrs=["10.244.0.0/16"],
    )
    return Upsert(pb.ResourceImport(import_name=names.cluster_info_import_name(cluster_id), cluster_info=info))


def label_identity_import(label: str, identity: int) -> Upsert:
    return Upsert(
        pb.ResourceImport(
            import_name=names.label_identity_import_name(label),
            label_identity=pb.LabelIdentity(label=label, id=identity),
        )
    )

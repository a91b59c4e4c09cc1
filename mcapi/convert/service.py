"""core/v1 Service and Endpoints <-> the wire's ServiceSpec and EndpointsSpec.

``*_to_pb``/``*_from_pb`` map the CRD models field for field (pb -> model ->
pb is the identity). The ``*_json`` functions read objects as the API server
returns them and apply its defaults for omitted fields (type ClusterIP,
sessionAffinity None, protocol TCP), so exports compare equal however the
object was written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from mcapi.convert.errors import ConversionError
from mcapi.crds.core import (
    ClientIPConfig,
    EndpointAddress,
    EndpointPort,
    EndpointSubset,
    ServicePort,
    ServiceSpec,
    SessionAffinityConfig,
)
from mcapi.mchub.v1 import common_area_pb2 as pb

DEFAULT_SERVICE_TYPE = "ClusterIP"
DEFAULT_SESSION_AFFINITY = "None"
DEFAULT_PROTOCOL = "TCP"
# core/v1 EndpointSubset has no cluster field; a ResourceImport CR keeps the
# hub's per-subset cluster ID under this extra key (its schema preserves it).
SUBSET_CLUSTER_ID_KEY = "clusterID"
# Nor has core/v1 EndpointAddress a global address: kept under this extra key (mchub's).
ADDRESS_GLOBAL_IP_KEY = "globalIP"


def service_spec_to_pb(spec: ServiceSpec) -> pb.ServiceSpec:
    timeout = 0
    if spec.session_affinity_config and spec.session_affinity_config.client_ip:
        timeout = spec.session_affinity_config.client_ip.timeout_seconds or 0
    return pb.ServiceSpec(
        type=spec.type,
        ports=[
            pb.ServicePort(name=p.name, protocol=p.protocol, port=p.port, app_protocol=p.app_protocol or "")
            for p in spec.ports
        ],
        cluster_ip=spec.cluster_ip,
        cluster_ips=list(spec.cluster_ips),
        session_affinity=spec.session_affinity,
        session_affinity_timeout_seconds=timeout,
        ip_families=list(spec.ip_families),
        internal_traffic_policy=spec.internal_traffic_policy,
        traffic_distribution=spec.traffic_distribution,
    )


def service_spec_from_pb(message: pb.ServiceSpec) -> ServiceSpec:
    return ServiceSpec(
        type=message.type,
        ports=[
            ServicePort(name=p.name, protocol=p.protocol, port=p.port, app_protocol=p.app_protocol or None)
            for p in message.ports
        ],
        cluster_ip=message.cluster_ip,
        cluster_ips=list(message.cluster_ips),
        session_affinity=message.session_affinity,
        session_affinity_config=session_affinity_config(message.session_affinity_timeout_seconds),
        ip_families=list(message.ip_families),
        internal_traffic_policy=message.internal_traffic_policy,
        traffic_distribution=message.traffic_distribution,
    )


def session_affinity_config(timeout_seconds: int) -> SessionAffinityConfig | None:
    """The sessionAffinityConfig for a ClientIP timeout; None when 0 (unset)."""
    if not timeout_seconds:
        return None
    return SessionAffinityConfig(client_ip=ClientIPConfig(timeout_seconds=timeout_seconds))


def service_spec_from_service_json(service: Mapping[str, Any]) -> pb.ServiceSpec:
    """A core/v1 Service object (as JSON) -> the spec a member exports."""
    try:
        spec = ServiceSpec.model_validate(service.get("spec") or {})
    except ValidationError as err:
        raise ConversionError(f"invalid Service spec: {err}") from None
    message = service_spec_to_pb(spec)
    message.type = message.type or DEFAULT_SERVICE_TYPE
    message.session_affinity = message.session_affinity or DEFAULT_SESSION_AFFINITY
    for port in message.ports:
        port.protocol = port.protocol or DEFAULT_PROTOCOL
    return message


def endpoint_subsets_to_pb(subsets: Sequence[EndpointSubset]) -> pb.EndpointsSpec:
    """Ready addresses only: notReadyAddresses are not exported."""
    return pb.EndpointsSpec(
        subsets=[
            pb.EndpointSubset(
                addresses=[
                    pb.EndpointAddress(
                        ip=a.ip,
                        hostname=a.hostname,
                        node_name=a.node_name,
                        global_ip=str((a.model_extra or {}).get(ADDRESS_GLOBAL_IP_KEY, "")),
                    )
                    for a in s.addresses
                ],
                ports=[pb.EndpointPort(name=p.name, port=p.port, protocol=p.protocol) for p in s.ports],
                cluster_id=str((s.model_extra or {}).get(SUBSET_CLUSTER_ID_KEY, "")),
            )
            for s in subsets
        ]
    )


def _address_from_pb(address: pb.EndpointAddress) -> EndpointAddress:
    model = EndpointAddress(ip=address.ip, hostname=address.hostname, node_name=address.node_name)
    if address.global_ip:
        setattr(model, ADDRESS_GLOBAL_IP_KEY, address.global_ip)
    return model


def endpoint_subsets_from_pb(message: pb.EndpointsSpec) -> list[EndpointSubset]:
    subsets = []
    for s in message.subsets:
        subset = EndpointSubset(
            addresses=[_address_from_pb(a) for a in s.addresses],
            ports=[EndpointPort(name=p.name, port=p.port, protocol=p.protocol) for p in s.ports],
        )
        if s.cluster_id:
            setattr(subset, SUBSET_CLUSTER_ID_KEY, s.cluster_id)
        subsets.append(subset)
    return subsets


def endpoints_from_endpoints_json(endpoints: Mapping[str, Any]) -> pb.EndpointsSpec:
    """A core/v1 Endpoints object (as JSON) -> the spec a member exports."""
    try:
        subsets = [EndpointSubset.model_validate(s) for s in endpoints.get("subsets") or []]
    except ValidationError as err:
        raise ConversionError(f"invalid Endpoints subsets: {err}") from None
    message = endpoint_subsets_to_pb(subsets)
    for subset in message.subsets:
        subset.cluster_id = ""
        for port in subset.ports:
            port.protocol = port.protocol or DEFAULT_PROTOCOL
    return message

"""The wire's ServiceImportSpec <-> MCS ServiceImport specs (v1alpha1, v1beta1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

from mcapi.cluster_selection import InvalidClusterSelectors, selectors_from_json, selectors_to_json
from mcapi.convert.errors import ConversionError
from mcapi.convert.service import session_affinity_config
from mcapi.crds.base import ObjectMeta
from mcapi.crds.mcs import (
    ClusterSelector,
    MCSServicePort,
    ServiceImportClusterStatus,
    ServiceImportSpecV1alpha1,
    ServiceImportSpecV1beta1,
    ServiceImportStatusV1alpha1,
    ServiceImportStatusV1beta1,
    ServiceImportType,
    ServiceImportV1alpha1,
    ServiceImportV1beta1,
)
from mcapi.mchub.v1 import common_area_pb2 as pb


def _ports(message: pb.ServiceImportSpec) -> list[MCSServicePort]:
    return [
        MCSServicePort(name=p.name, protocol=p.protocol, port=p.port, app_protocol=p.app_protocol or None)
        for p in message.ports
    ]


def cluster_selector_models(selectors: Sequence[pb.ClusterSelector]) -> list[ClusterSelector]:
    """The wire's cluster selectors as the CRD models (spec.clusterSelectors)."""
    return [ClusterSelector.model_validate(entry) for entry in selectors_to_json(selectors)]


def cluster_selectors_from_models(models: Sequence[ClusterSelector], where: str) -> list[pb.ClusterSelector]:
    """spec.clusterSelectors of a stored object back to the wire; ConversionError naming ``where``."""
    try:
        return selectors_from_json([m.model_dump(mode="json", by_alias=True, exclude_defaults=True) for m in models])
    except InvalidClusterSelectors as err:
        raise ConversionError(f"{where}: {err}") from None


def _type(message: pb.ServiceImportSpec) -> ServiceImportType:
    if message.type not in ("ClusterSetIP", "Headless"):
        raise ConversionError(f"ServiceImport type {message.type!r} is not ClusterSetIP or Headless")
    return cast(ServiceImportType, message.type)


def service_import_spec_v1beta1(message: pb.ServiceImportSpec, ips: Sequence[str] = ()) -> ServiceImportSpecV1beta1:
    """The v1beta1 spec; ``ips`` is the ClusterSetIP the member allocated (none when headless)."""
    return ServiceImportSpecV1beta1(
        type=_type(message),
        ports=_ports(message),
        ips=list(ips),
        session_affinity=message.session_affinity,
        session_affinity_config=session_affinity_config(message.session_affinity_timeout_seconds),
        ip_families=list(message.ip_families),
        internal_traffic_policy=message.internal_traffic_policy,
        traffic_distribution=message.traffic_distribution,
        cluster_selectors=cluster_selector_models(message.cluster_selectors),
    )


def service_import_spec_v1alpha1(message: pb.ServiceImportSpec, ips: Sequence[str] = ()) -> ServiceImportSpecV1alpha1:
    """The v1alpha1 spec: no internalTrafficPolicy or trafficDistribution."""
    return ServiceImportSpecV1alpha1(
        type=_type(message),
        ports=_ports(message),
        ips=list(ips),
        session_affinity=message.session_affinity,
        session_affinity_config=session_affinity_config(message.session_affinity_timeout_seconds),
        ip_families=list(message.ip_families),
    )


def service_import_spec_to_pb(spec: ServiceImportSpecV1alpha1, clusters: Sequence[str] = ()) -> pb.ServiceImportSpec:
    """Back to the wire; v1alpha1 specs carry no traffic policies."""
    timeout = 0
    if spec.session_affinity_config and spec.session_affinity_config.client_ip:
        timeout = spec.session_affinity_config.client_ip.timeout_seconds or 0
    message = pb.ServiceImportSpec(
        type=spec.type,
        ports=[
            pb.ServicePort(name=p.name, protocol=p.protocol, port=p.port, app_protocol=p.app_protocol or "")
            for p in spec.ports
        ],
        session_affinity=spec.session_affinity,
        session_affinity_timeout_seconds=timeout,
        ip_families=list(spec.ip_families),
        clusters=sorted(clusters),
    )
    if isinstance(spec, ServiceImportSpecV1beta1):
        message.internal_traffic_policy = spec.internal_traffic_policy
        message.traffic_distribution = spec.traffic_distribution
        message.cluster_selectors.extend(cluster_selectors_from_models(spec.cluster_selectors, "spec.clusterSelectors"))
    return message


def build_service_import(
    message: pb.ServiceImportSpec,
    namespace: str,
    name: str,
    ips: Sequence[str] = (),
    version: Literal["v1alpha1", "v1beta1"] = "v1beta1",
) -> ServiceImportV1alpha1 | ServiceImportV1beta1:
    """The MCS ServiceImport a member writes for an import, clusters in status."""
    metadata = ObjectMeta(namespace=namespace, name=name)
    clusters = [ServiceImportClusterStatus(cluster=c) for c in message.clusters]
    if version == "v1alpha1":
        return ServiceImportV1alpha1(
            metadata=metadata,
            spec=service_import_spec_v1alpha1(message, ips),
            status=ServiceImportStatusV1alpha1(clusters=clusters),
        )
    return ServiceImportV1beta1(
        metadata=metadata,
        spec=service_import_spec_v1beta1(message, ips),
        status=ServiceImportStatusV1beta1(clusters=clusters),
    )

"""Structural checks of one export, before anything is merged or stored.

Each problem is a sentence a user can act on; an empty list means valid. The
hub answers INVALID_ARGUMENT when there is any and changes nothing. Names
follow Kubernetes: export names become object names (DNS-1123 subdomains);
cluster IDs, Namespaces and Service names are DNS-1123 labels. Values the
client sent are quoted with hub.errors.quote, so a problem stays short
whatever the client sent.
"""

from __future__ import annotations

import ipaddress

from hub.errors import quote
from hub.merge.label_format import normalized_label_problems
from mcapi import label_syntax, names
from mcapi.addresses import is_ip_address
from mcapi.cluster_selection import selector_problems
from mcapi.mchub.v1 import common_area_pb2 as pb

PROTOCOLS = ("TCP", "UDP", "SCTP")
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
SESSION_AFFINITIES = ("None", "ClientIP")
MAX_AFFINITY_TIMEOUT_SECONDS = 86400
IP_FAMILIES = ("IPv4", "IPv6")
INTERNAL_TRAFFIC_POLICIES = ("Cluster", "Local")
MAX_PORT = 65535


def _is_cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return True


def _is_ipv4(value: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(value), ipaddress.IPv4Address)
    except ValueError:
        return False


def _check_label(problems: list[str], what: str, value: str) -> None:
    if not value:
        problems.append(f"The {what} is missing.")
    elif not names.is_dns1123_label(value):
        problems.append(
            f"The {what} {quote(value)} is not a DNS-1123 label "
            "(at most 63 lowercase letters, digits and '-', starting and ending with an alphanumeric)."
        )


def _check_protocol_and_port(problems: list[str], where: str, protocol: str, port: int) -> None:
    if not 1 <= port <= MAX_PORT:
        problems.append(f"{where} has port number {port}; it must be within 1..{MAX_PORT}.")
    if protocol not in PROTOCOLS:
        problems.append(f"{where} has protocol {quote(protocol)}; it must be one of {', '.join(PROTOCOLS)}.")


def _check_service(problems: list[str], spec: pb.ServiceSpec) -> None:
    if spec.type and spec.type not in SERVICE_TYPES:
        problems.append(f"The Service type {quote(spec.type)} is not one of {', '.join(SERVICE_TYPES)}.")
    seen_names: set[str] = set()
    for port in spec.ports:
        where = f"Service port {quote(port.name)}"
        _check_protocol_and_port(problems, where, port.protocol, port.port)
        if port.name in seen_names:
            problems.append(f"The Service port name {quote(port.name)} appears more than once.")
        seen_names.add(port.name)
    for ip in ([spec.cluster_ip] if spec.cluster_ip else []) + list(spec.cluster_ips):
        if ip != "None" and not is_ip_address(ip):
            problems.append(f"The Service cluster IP {quote(ip)} is not an IP address (nor 'None').")
    if spec.session_affinity and spec.session_affinity not in SESSION_AFFINITIES:
        problems.append(
            f"The session affinity {quote(spec.session_affinity)} is not one of {', '.join(SESSION_AFFINITIES)}."
        )
    if not 0 <= spec.session_affinity_timeout_seconds <= MAX_AFFINITY_TIMEOUT_SECONDS:
        problems.append(
            f"The session affinity timeout {spec.session_affinity_timeout_seconds}s is outside "
            f"0..{MAX_AFFINITY_TIMEOUT_SECONDS}."
        )
    families = list(spec.ip_families)
    for family in families:
        if family not in IP_FAMILIES:
            problems.append(f"The IP family {quote(family)} is not one of {', '.join(IP_FAMILIES)}.")
    if len(families) != len(set(families)) or len(families) > len(IP_FAMILIES):
        problems.append(f"The IP families {quote(', '.join(families))} must name each family at most once.")
    if spec.internal_traffic_policy and spec.internal_traffic_policy not in INTERNAL_TRAFFIC_POLICIES:
        problems.append(
            f"The internalTrafficPolicy {quote(spec.internal_traffic_policy)} is not one of "
            f"{', '.join(INTERNAL_TRAFFIC_POLICIES)}."
        )
    # Every member writes them on its ServiceImport: what its API server would refuse stops here.
    label_problems = label_syntax.label_problems(spec.exported_labels, quote)
    if label_problems:
        problems.append(label_syntax.sentence("exported labels", label_problems))
    annotation_problems = label_syntax.annotation_problems(spec.exported_annotations, quote)
    if annotation_problems:
        problems.append(label_syntax.sentence("exported annotations", annotation_problems))
    problems.extend(
        f"The cluster selectors are invalid: {problem}." for problem in selector_problems(spec.cluster_selectors)
    )


def _check_endpoints(problems: list[str], spec: pb.EndpointsSpec) -> None:
    for index, subset in enumerate(spec.subsets):
        for address in subset.addresses:
            if not is_ip_address(address.ip):
                problems.append(f"Endpoints subset {index} has address {quote(address.ip)}, not an IP address.")
            if address.global_ip and not _is_ipv4(address.global_ip):
                problems.append(
                    f"Endpoints subset {index} has global address {quote(address.global_ip)}, not an IPv4 address."
                )
        for port in subset.ports:
            _check_protocol_and_port(
                problems, f"Endpoints subset {index} port {quote(port.name)}", port.protocol, port.port
            )


def _check_cluster_info(problems: list[str], export: pb.ResourceExport) -> None:
    info = export.cluster_info
    if info.cluster_id != export.cluster_id:
        problems.append(
            f"The ClusterInfo describes cluster {quote(info.cluster_id)} but is exported by cluster "
            f"{quote(export.cluster_id)}; they must be the same."
        )
    if info.service_cidr and not _is_cidr(info.service_cidr):
        problems.append(f"The ClusterInfo Service CIDR {quote(info.service_cidr)} is not a CIDR.")
    for cidr in info.pod_cidrs:
        if not _is_cidr(cidr):
            problems.append(f"The ClusterInfo Pod CIDR {quote(cidr)} is not a CIDR.")
    for gateway in info.gateway_infos:
        if not is_ip_address(gateway.gateway_ip):
            problems.append(f"The ClusterInfo gateway IP {quote(gateway.gateway_ip)} is not an IP address.")
    if info.global_cidr or info.globally_addressed:
        problems.append(
            "The ClusterInfo sets global_cidr or globally_addressed; the hub sets them in imports, "
            "members leave them empty."
        )


def validate_export(export: pb.ResourceExport) -> list[str]:
    """Every structural problem of the export, each a sentence; empty when valid."""
    problems: list[str] = []
    if not export.export_name:
        problems.append("The export name is missing.")
    elif not names.is_dns1123_subdomain(export.export_name):
        problems.append(f"The export name {quote(export.export_name)} is not a valid object name (DNS-1123 subdomain).")
    _check_label(problems, "cluster ID", export.cluster_id)
    kind = export.WhichOneof("payload")
    if kind is None:
        problems.append(
            "The export carries no payload; it must be one of Service, Endpoints, ClusterInfo, "
            "AntreaClusterNetworkPolicy or LabelIdentity."
        )
    elif kind in ("service", "endpoints"):
        _check_label(problems, "Namespace", export.namespace)
        _check_label(problems, "Service name", export.name)
        if kind == "service":
            _check_service(problems, export.service)
        else:
            _check_endpoints(problems, export.endpoints)
    elif kind == "cluster_info":
        _check_cluster_info(problems, export)
    elif kind == "cluster_network_policy":
        if not export.name:
            problems.append("The AntreaClusterNetworkPolicy name is missing.")
        elif not names.is_dns1123_subdomain(export.name):
            problems.append(f"The AntreaClusterNetworkPolicy name {quote(export.name)} is not a DNS-1123 subdomain.")
    elif kind == "label_identity":
        if not export.label_identity.normalized_label:
            problems.append("The label identity's normalized label is empty.")
        else:
            problems.extend(normalized_label_problems(export.label_identity.normalized_label))
    return problems

"""The member's Gateway side: Gateway Node election, the Gateway CR, the ClusterInfo export,
and CIDR overlap conditions on ClusterInfoImports.

``GatewayController`` is the entry point (see its module); ``election``, ``cluster_info``,
``overlap`` and ``service_cidr`` hold the pure rules and the Service CIDR discovery.
"""

from member.gateway.cluster_info import ClusterInfoPublisher, ClusterRanges, build_cluster_info_export
from member.gateway.controller import GatewayController
from member.gateway.election import ANNOTATION_WIREGUARD_PUBLIC_KEY, Candidate, candidate_from_node, elect
from member.gateway.overlap import CONDITION_CIDR_CONFLICT, find_overlaps
from member.gateway.service_cidr import ServiceCIDRUnknown, discover_service_cidr

__all__ = [
    "ANNOTATION_WIREGUARD_PUBLIC_KEY",
    "CONDITION_CIDR_CONFLICT",
    "Candidate",
    "ClusterInfoPublisher",
    "ClusterRanges",
    "GatewayController",
    "ServiceCIDRUnknown",
    "build_cluster_info_export",
    "candidate_from_node",
    "discover_service_cidr",
    "elect",
    "find_overlaps",
]

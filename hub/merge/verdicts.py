"""Reasons and constructors of the export statuses the merge engine hands out.

Conflict reasons are the MCS API's ServiceExport Conflict reasons (KEP-1645);
ConvergeFailure is Antrea's ResourceExport Failure reason.
"""

from __future__ import annotations

from mcapi.crds.exchange import REASON_CONVERGE_FAILURE as REASON_CONVERGE_FAILURE  # noqa: PLC0414 (re-exported)
from mcapi.mchub.v1 import common_area_pb2 as pb

REASON_TYPE_CONFLICT = "TypeConflict"
REASON_PORT_CONFLICT = "PortConflict"
REASON_SESSION_AFFINITY_CONFLICT = "SessionAffinityConflict"
REASON_SESSION_AFFINITY_CONFIG_CONFLICT = "SessionAffinityConfigConflict"
REASON_INTERNAL_TRAFFIC_POLICY_CONFLICT = "InternalTrafficPolicyConflict"
REASON_TRAFFIC_DISTRIBUTION_CONFLICT = "TrafficDistributionConflict"
REASON_IP_FAMILY_CONFLICT = "IPFamilyConflict"
REASON_LABELS_CONFLICT = "LabelsConflict"
REASON_ANNOTATIONS_CONFLICT = "AnnotationsConflict"
# KEP-5939: the exporters' cluster selectors differ.
REASON_CLUSTER_SELECTORS_CONFLICT = "ClusterSelectorsConflict"
REASON_INVALID_SERVICE_TYPE = "InvalidServiceType"
# Two exports of one group from the same cluster: only the oldest counts.
REASON_DUPLICATE_EXPORT = "DuplicateExport"
# An Endpoints export whose cluster has not (validly) exported the Service.
REASON_AWAITING_SERVICE = "AwaitingService"


def accepted(message: str, reason: str = "") -> pb.ExportStatus:
    return pb.ExportStatus(verdict=pb.VERDICT_ACCEPTED, reason=reason, message=message)


def conflict(reason: str, message: str) -> pb.ExportStatus:
    return pb.ExportStatus(verdict=pb.VERDICT_CONFLICT, reason=reason, message=message)


def rejected(reason: str, message: str) -> pb.ExportStatus:
    return pb.ExportStatus(verdict=pb.VERDICT_REJECTED, reason=reason, message=message)


def invalid(reason: str, message: str) -> pb.ExportStatus:
    return pb.ExportStatus(verdict=pb.VERDICT_INVALID, reason=reason, message=message)


def is_merged(status: pb.ExportStatus) -> bool:
    """Accepted and conflicting exports are part of their import; the others are not."""
    return status.verdict in (pb.VERDICT_ACCEPTED, pb.VERDICT_CONFLICT)

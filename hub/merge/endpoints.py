"""Merging the Endpoints exports of one Service into one Endpoints import.

The import is the concatenation of the subsets of every cluster whose Service
export was merged (accepted or in conflict), each subset tagged with its
cluster, clusters in ID order. Members export in either endpointIPType: the
exported Service's ClusterIP as the one address (ClusterIP) or the Pod IPs
(PodIP); the merge treats both alike. A port is kept with its own number even
when it lost a PortConflict: traffic for that port name must reach the port
the exporting cluster really serves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hub.merge import verdicts
from hub.merge.ordering import first_per_cluster, oldest_first
from mcapi.mchub.v1 import common_area_pb2 as pb


@dataclass(frozen=True)
class EndpointsMerge:
    spec: pb.EndpointsSpec
    statuses: dict[str, pb.ExportStatus]


def _tagged_subsets(export: pb.ResourceExport) -> list[pb.EndpointSubset]:
    subsets: list[pb.EndpointSubset] = []
    for subset in export.endpoints.subsets:
        fresh = pb.EndpointSubset()
        fresh.CopyFrom(subset)
        fresh.cluster_id = export.cluster_id
        subsets.append(fresh)
    return subsets


def _status_following_service(
    export: pb.ResourceExport, service_status: pb.ExportStatus | None, import_name: str
) -> pb.ExportStatus:
    if service_status is None:
        return verdicts.accepted(
            f"Held: waits for the Service export of cluster {export.cluster_id} before joining {import_name}.",
            reason=verdicts.REASON_AWAITING_SERVICE,
        )
    if verdicts.is_merged(service_status):
        return verdicts.accepted(f"Merged into {import_name}.")
    # The Service export was skipped or invalid: its endpoints go with it.
    return pb.ExportStatus(
        verdict=service_status.verdict,
        reason=service_status.reason,
        message=(
            f"Left out of {import_name}: the Service export of cluster {export.cluster_id} "
            f"was not merged ({service_status.reason})."
        ),
    )


def merge_endpoints(
    exports: Sequence[pb.ResourceExport],
    service_by_cluster: Mapping[str, pb.ExportStatus],
    *,
    import_name: str,
) -> EndpointsMerge:
    """Concatenate the endpoints of the clusters whose Service export was merged."""
    counted, duplicates = first_per_cluster(oldest_first(exports))
    statuses: dict[str, pb.ExportStatus] = {}
    for export in duplicates:
        statuses[export.export_name] = verdicts.rejected(
            verdicts.REASON_DUPLICATE_EXPORT,
            f"Cluster {export.cluster_id} exports these Endpoints more than once; only its oldest export counts.",
        )
    subsets: list[pb.EndpointSubset] = []
    for export in sorted(counted, key=lambda e: e.cluster_id):
        service_status = service_by_cluster.get(export.cluster_id)
        statuses[export.export_name] = _status_following_service(export, service_status, import_name)
        if service_status is not None and verdicts.is_merged(service_status):
            subsets.extend(_tagged_subsets(export))
    return EndpointsMerge(spec=pb.EndpointsSpec(subsets=subsets), statuses=statuses)

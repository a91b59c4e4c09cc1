"""Merging the Endpoints exports of one Service into one Endpoints import.

The import is the concatenation of the subsets of every cluster whose Service
export was merged (accepted or in conflict), each subset tagged with its
cluster, clusters in ID order. Members export in either endpointIPType: the
exported Service's ClusterIP as the one address (ClusterIP) or the Pod IPs
(PodIP); the merge treats both alike.

A cluster's endpoints keep only the ports whose name its Service exports with
the protocol and number the import exposes under that name (the Service
merge's served_ports): a port that lost a PortConflict (``tcp`` is 4242 in
this cluster but 42 in the import, the oldest export's) would otherwise send
part of the traffic of the import's port to a port this cluster serves under
another number. Which ports agree is read from the Service exports, not from
the endpoints: in PodIP mode an endpoint port is the target port, which may
equal the import's port by chance. A subset left without ports is dropped. In
strict-ports mode every merged exporter has the import's ports, so only
endpoint ports its Service does not have are left out.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from hub.errors import quote
from hub.merge import verdicts
from hub.merge.ordering import first_per_cluster, oldest_first
from mcapi.mchub.v1 import common_area_pb2 as pb


@dataclass(frozen=True)
class EndpointsMerge:
    spec: pb.EndpointsSpec
    statuses: dict[str, pb.ExportStatus]


def _tagged_subsets(
    export: pb.ResourceExport, served: Collection[tuple[str, str]]
) -> tuple[list[pb.EndpointSubset], set[str]]:
    """The export's subsets with the ports its cluster serves as the import does, tagged with
    the cluster; and the names of the ports left out."""
    subsets: list[pb.EndpointSubset] = []
    left_out: set[str] = set()
    for subset in export.endpoints.subsets:
        ports = [p for p in subset.ports if (p.name, p.protocol) in served]
        left_out.update(p.name for p in subset.ports if (p.name, p.protocol) not in served)
        if not ports:
            continue
        fresh = pb.EndpointSubset(addresses=subset.addresses, ports=ports, cluster_id=export.cluster_id)
        subsets.append(fresh)
    return subsets, left_out


def _merged_status(import_name: str, left_out: set[str]) -> pb.ExportStatus:
    if not left_out:
        return verdicts.accepted(f"Merged into {import_name}.")
    return verdicts.accepted(
        f"Merged into {import_name} without the ports {', '.join(quote(n) for n in sorted(left_out))}: "
        "the import exposes them with another protocol or number (see the Service export's Conflict)."
    )


def _status_unmerged(
    export: pb.ResourceExport, service_status: pb.ExportStatus | None, import_name: str
) -> pb.ExportStatus:
    """The status of endpoints whose cluster's Service export is not merged (not yet, or not at all)."""
    if service_status is None:
        return verdicts.accepted(
            f"Held: waits for the Service export of cluster {export.cluster_id} before joining {import_name}.",
            reason=verdicts.REASON_AWAITING_SERVICE,
        )
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
    served_ports: Mapping[str, Collection[tuple[str, str]]],
    *,
    import_name: str,
) -> EndpointsMerge:
    """Concatenate the endpoints of the clusters whose Service export was merged, each with the
    ports (name, protocol) ``served_ports`` names for its cluster."""
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
        if service_status is not None and verdicts.is_merged(service_status):
            tagged, left_out = _tagged_subsets(export, served_ports.get(export.cluster_id, ()))
            subsets.extend(tagged)
            statuses[export.export_name] = _merged_status(import_name, left_out)
        else:
            statuses[export.export_name] = _status_unmerged(export, service_status, import_name)
    return EndpointsMerge(spec=pb.EndpointsSpec(subsets=subsets), statuses=statuses)

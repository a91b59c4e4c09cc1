"""ClusterInfo: one import per exporting cluster, delivered to every other member."""

from __future__ import annotations

from collections.abc import Sequence

from hub.merge import verdicts
from hub.merge.contract import GroupResult
from hub.merge.ordering import oldest_first
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb


def merge_cluster_info(exports: Sequence[pb.ResourceExport]) -> GroupResult:
    """Copy the oldest ClusterInfo export of the (single) cluster into its import."""
    ordered = oldest_first(exports)
    if not ordered:
        return GroupResult()
    source = ordered[0]
    import_name = names.cluster_info_import_name(source.cluster_id)
    info = pb.ClusterInfo()
    info.CopyFrom(source.cluster_info)
    imp = pb.ResourceImport(
        import_name=import_name,
        namespace=source.namespace,
        name=source.cluster_id,
        # Empty: every member; delivers_to keeps it from the cluster it describes.
        cluster_ids=[],
        cluster_info=info,
    )
    statuses = {source.export_name: verdicts.accepted(f"Imported as {import_name} by the other members.")}
    for extra in ordered[1:]:
        statuses[extra.export_name] = verdicts.rejected(
            verdicts.REASON_DUPLICATE_EXPORT,
            f"Cluster {extra.cluster_id} already exports its ClusterInfo as {source.export_name}.",
        )
    return GroupResult(imports={import_name: imp}, statuses=statuses)

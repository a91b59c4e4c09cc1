"""ClusterInfo: one import per exporting cluster, delivered to every other member, stamped
with the cluster's global block and whether it is globally addressed (hub.merge.global_addressing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hub.merge.contract import GroupResult
from hub.merge.global_addressing import Addressing, stamped
from hub.merge.single_source import merge_single_source
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb


def _cluster_info_import(source: pb.ResourceExport, addressing: Addressing | None) -> pb.ResourceImport:
    info = stamped(source.cluster_info, addressing)
    return pb.ResourceImport(
        import_name=names.cluster_info_import_name(source.cluster_id),
        namespace=source.namespace,
        name=source.cluster_id,
        # Empty: every member; delivers_to keeps it from the cluster it describes.
        cluster_ids=[],
        cluster_info=info,
    )


def merge_cluster_info(exports: Sequence[pb.ResourceExport], addressing: Mapping[str, Addressing]) -> GroupResult:
    """Copy the oldest ClusterInfo export of the (single) cluster into its import, stamped with
    the cluster's ``addressing``."""
    return merge_single_source(
        exports,
        lambda source: _cluster_info_import(source, addressing.get(source.cluster_id)),
        lambda imp: f"Imported as {imp.import_name} by the other members.",
        lambda source, extra: f"Cluster {extra.cluster_id} already exports its ClusterInfo as {source.export_name}.",
    )

"""Groups whose import is a copy of one export (ClusterInfo, ClusterNetworkPolicy):
the oldest export is the source, any other is a duplicate and refused."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hub.merge import verdicts
from hub.merge.contract import GroupResult
from hub.merge.ordering import oldest_first
from mcapi.mchub.v1 import common_area_pb2 as pb


def merge_single_source(
    exports: Sequence[pb.ResourceExport],
    build_import: Callable[[pb.ResourceExport], pb.ResourceImport],
    accepted: Callable[[pb.ResourceImport], str],
    duplicate: Callable[[pb.ResourceExport, pb.ResourceExport], str],
) -> GroupResult:
    """`accepted(import)` and `duplicate(source, extra)` word the verdict messages."""
    ordered = oldest_first(exports)
    if not ordered:
        return GroupResult()
    source = ordered[0]
    imp = build_import(source)
    statuses = {source.export_name: verdicts.accepted(accepted(imp))}
    for extra in ordered[1:]:
        statuses[extra.export_name] = verdicts.rejected(verdicts.REASON_DUPLICATE_EXPORT, duplicate(source, extra))
    return GroupResult(imports={imp.import_name: imp}, statuses=statuses)

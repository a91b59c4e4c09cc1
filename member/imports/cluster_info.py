"""A ClusterInfo import -> the ClusterInfoImport ``<clusterID>-clusterinfo`` in the member
Namespace, spec = the other member's ClusterInfo.

Only the spec is written here; the status (Ready, and later overlap and gateway
health) is set through ``cluster_info_status``, so other reconcilers can own parts of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kube.resources import Obj
from mcapi.convert import build_cluster_info_import
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import CLUSTER_INFO_IMPORTS
from member.imports.cluster_info_status import CONDITION_READY, set_cluster_info_import_condition

if TYPE_CHECKING:
    from member.imports.context import ImportContext

# ClusterInfo fields the spec carries: one the import leaves unset must be absent.
_SPEC_FIELDS = ("clusterID", "serviceCIDR", "gatewayInfos", "podCIDRs", "wireGuard")
REASON_IMPORTED = "Imported"


def desired_cluster_info_import(message: pb.ResourceImport, namespace: str) -> Obj:
    document = build_cluster_info_import(message.cluster_info, namespace, message.import_name).to_dict()
    document.pop("status", None)
    spec = document.setdefault("spec", {})
    for field in _SPEC_FIELDS:
        spec.setdefault(field, None)
    return document


async def apply_cluster_info(ctx: ImportContext, message: pb.ResourceImport) -> Obj:
    """Write the spec (every ClusterInfoImport in the member Namespace is the importer's, as in
    Antrea), then mark it Ready; returns the object as last written. A Ready written from a
    read older than another writer's condition (overlap, gateway health) is a Conflict: the
    import is tried again once the cache has the other write."""
    ctx.require_namespace(ctx.member_namespace)
    kind = ctx.caches.kind(CLUSTER_INFO_IMPORTS)
    desired = desired_cluster_info_import(message, ctx.member_namespace)
    live = await ctx.writer.ensure(kind, desired, import_name=message.import_name)
    written = await set_cluster_info_import_condition(
        ctx.client, live, CONDITION_READY, "True", reason=REASON_IMPORTED, now=ctx.clock()
    )
    if written is not live:
        kind.wrote(written)
    return written

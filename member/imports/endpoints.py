"""An Endpoints import -> the Endpoints ``antrea-mc-<name>`` and its EndpointSlices.

Both, as Antrea users and the MCS API expect them: the Endpoints (what Antrea's member
writes; labelled ``endpointslice.kubernetes.io/skip-mirror`` so kube-controller-manager
does not mirror them into a slice of its own) and one EndpointSlice per source cluster
with the MCS labels. Each is written only when it differs from what the cache shows;
slices of a source cluster that left are found in the cache, not listed. An import with no
address yet (the hub holds a cluster's endpoints back until its Service export is merged)
creates nothing: kube-proxy sees no endpoints either way, and the object is then written
once, with its addresses, instead of twice. This cluster's own subset is written from its
Service's ready endpoints (member.imports.local_endpoints). A Service with cluster selectors
(KEP-5939) has only the endpoints of the clusters this member selects (member.imports.selection).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kube.resources import ENDPOINT_SLICES, ENDPOINTS, name_of
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.local_endpoints import with_local_endpoints
from member.imports.selection import selected_endpoints
from member.imports.slices import desired_endpoint_slices, desired_endpoints

if TYPE_CHECKING:
    from member.imports.context import ImportContext


async def apply_endpoints(ctx: ImportContext, message: pb.ResourceImport) -> None:
    ctx.require_namespace(message.namespace)
    message = with_local_endpoints(message, ctx.cluster_id, ctx.local_endpoints)
    service_import = ctx.desired(names.service_import_name(message.namespace, message.name))
    message = selected_endpoints(message, service_import, ctx.cluster_id)
    imported = message.import_name
    endpoints, desired = ctx.caches.kind(ENDPOINTS), desired_endpoints(message)
    if desired.get("subsets") or endpoints.get(name_of(desired), message.namespace) is not None:
        await ctx.writer.ensure(endpoints, desired, import_name=imported)
    slices = ctx.caches.kind(ENDPOINT_SLICES)
    wanted = desired_endpoint_slices(message)
    for endpoint_slice in wanted:
        await ctx.writer.ensure(slices, endpoint_slice, import_name=imported)
    keep = {name_of(s) for s in wanted}
    for live in slices.of_import(imported):
        if name_of(live) not in keep:
            await ctx.writer.delete(slices, live)

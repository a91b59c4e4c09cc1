"""An Endpoints import -> the Endpoints ``antrea-mc-<name>`` and its EndpointSlices."""

from __future__ import annotations

from kube.resources import ENDPOINT_SLICES, ENDPOINTS, name_of
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.context import ImportContext
from member.imports.ownership import delete_exact, delete_owned, ensure_owned, is_imported_service
from member.imports.slices import desired_endpoint_slices, desired_endpoints


async def apply_endpoints(ctx: ImportContext, message: pb.ResourceImport) -> None:
    await ctx.require_namespace(message.namespace)
    imported = message.import_name
    await ensure_owned(ctx.client, ENDPOINTS, desired_endpoints(message), is_imported_service, import_name=imported)
    wanted = desired_endpoint_slices(message)
    for endpoint_slice in wanted:
        await ensure_owned(ctx.client, ENDPOINT_SLICES, endpoint_slice, is_imported_service, import_name=imported)
    keep = {name_of(s) for s in wanted}
    for live in await _our_slices(ctx, message.namespace, message.name):
        if name_of(live) not in keep:
            await delete_exact(ctx.client, ENDPOINT_SLICES, live)


async def delete_endpoints(ctx: ImportContext, namespace: str, name: str) -> None:
    await delete_owned(ctx.client, ENDPOINTS, names.imported_object_name(name), namespace, is_imported_service)
    for live in await _our_slices(ctx, namespace, name):
        await delete_exact(ctx.client, ENDPOINT_SLICES, live)


async def _our_slices(ctx: ImportContext, namespace: str, name: str) -> list[dict[str, object]]:
    listed = await ctx.client.list_all(
        ENDPOINT_SLICES, namespace, label_selector=f"{names.LABEL_MCS_SERVICE_NAME}={name}"
    )
    return [s for s in listed.items if is_imported_service(s)]

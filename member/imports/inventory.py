"""Every object the importer made in this cluster, each with the import it belongs to.

Names are derived, so the import of a local object needs no bookkeeping and survives
restarts: Service/Endpoints ``antrea-mc-<name>`` in ``<ns>`` belong to
``<ns>-<name>-service``/``-endpoints``, a ServiceImport ``<ns>/<name>`` to
``<ns>-<name>-service``, an EndpointSlice to the Endpoints import of its MCS
service-name label, a ClusterNetworkPolicy ``antrea-mc-<name>`` to
``<name>-antreaclusternetworkpolicy``; LabelIdentities and ClusterInfoImports are
named after their import. Objects without the importer's mark are not listed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kube.errors import NotFound
from kube.resources import (
    CLUSTER_INFO_IMPORTS,
    ENDPOINT_SLICES,
    ENDPOINTS,
    LABEL_IDENTITIES,
    SERVICES,
    Obj,
    Resource,
    name_of,
    namespace_of,
)
from mcapi import names
from member.imports.context import ImportContext
from member.imports.ownership import delete_exact, is_imported_acnp, is_imported_service
from member.imports.policies import served_acnp_resource

ImportNameOf = Callable[[Obj], str | None]


@dataclass(frozen=True)
class ImportedObject:
    resource: Resource
    object: Obj
    import_name: str

    @property
    def ref(self) -> str:
        namespace = namespace_of(self.object)
        return f"{self.resource.kind} {namespace}/{name_of(self.object)}" if namespace else name_of(self.object)


def _unprefixed(obj: Obj) -> str | None:
    name = name_of(obj)
    return name.removeprefix(names.IMPORTED_PREFIX) if name.startswith(names.IMPORTED_PREFIX) else None


def _service_import_of_service(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.service_import_name(namespace_of(obj) or "", base) if base else None


def _endpoints_import_of_endpoints(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.endpoints_import_name(namespace_of(obj) or "", base) if base else None


def _endpoints_import_of_slice(obj: Obj) -> str | None:
    service = ((obj.get("metadata") or {}).get("labels") or {}).get(names.LABEL_MCS_SERVICE_NAME)
    return names.endpoints_import_name(namespace_of(obj) or "", service) if service else None


def _service_import_of_service_import(obj: Obj) -> str | None:
    return names.service_import_name(namespace_of(obj) or "", name_of(obj))


def _acnp_import(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.acnp_import_name(base) if base else None


async def imported_objects(ctx: ImportContext) -> list[ImportedObject]:
    found: list[ImportedObject] = []

    async def collect(
        resource: Resource,
        import_of: ImportNameOf,
        owned: Callable[[Obj], bool] | None,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> None:
        try:
            listed = await ctx.client.list_all(resource, namespace, label_selector=label_selector)
        except NotFound:
            return  # the kind is not served here (a CRD not installed)
        for obj in listed.items:
            if owned is not None and not owned(obj):
                continue
            import_name = import_of(obj)
            if import_name is not None:
                found.append(ImportedObject(resource, obj, import_name))

    await collect(SERVICES, _service_import_of_service, is_imported_service)
    await collect(ENDPOINTS, _endpoints_import_of_endpoints, is_imported_service)
    await collect(
        ENDPOINT_SLICES, _endpoints_import_of_slice, is_imported_service, label_selector=names.LABEL_MCS_SERVICE_NAME
    )
    service_imports = await ctx.service_import_resource()
    if service_imports is not None:
        await collect(service_imports, _service_import_of_service_import, is_imported_service)
    policies = await served_acnp_resource(ctx)
    if policies is not None:
        await collect(policies, _acnp_import, is_imported_acnp)
    await collect(LABEL_IDENTITIES, name_of, None)
    await collect(CLUSTER_INFO_IMPORTS, name_of, None, namespace=ctx.member_namespace)
    return found


async def delete_imported(objects: list[ImportedObject], ctx: ImportContext) -> int:
    """Delete these objects (each exactly: by uid); how many deletes were issued."""
    deleted = 0
    for item in objects:
        if await delete_exact(ctx.client, item.resource, item.object):
            deleted += 1
    return deleted

"""Which exports merge together, which imports a group can produce, and the dispatch.

Service and Endpoints exports of one namespace/name are one group: which
endpoints are merged depends on which Service exports were accepted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hub.merge.acnp import merge_acnp
from hub.merge.cluster_info import merge_cluster_info
from hub.merge.contract import GroupKey, GroupResult, MergeContext
from hub.merge.endpoints import merge_endpoints
from hub.merge.errors import MixedGroup, UnknownExportKind, UnknownGroupKind
from hub.merge.label_identity import merge_label_identity
from hub.merge.selection import select_for_members
from hub.merge.service import merge_services
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

GROUP_SERVICE = "service"
GROUP_CLUSTER_INFO = "clusterinfo"
GROUP_ACNP = "acnp"
GROUP_LABEL_IDENTITY = "labelidentity"


def service_group_key(namespace: str, name: str) -> GroupKey:
    return (GROUP_SERVICE, namespace, name)


def group_key(export: pb.ResourceExport) -> GroupKey:
    kind = export.WhichOneof("payload")
    if kind in ("service", "endpoints"):
        return service_group_key(export.namespace, export.name)
    if kind == "cluster_info":
        return (GROUP_CLUSTER_INFO, export.cluster_id)
    if kind == "cluster_network_policy":
        return (GROUP_ACNP, export.name)
    if kind == "label_identity":
        return (GROUP_LABEL_IDENTITY, export.label_identity.normalized_label)
    raise UnknownExportKind(export.export_name)


def import_names_for_group(key: GroupKey) -> list[str]:
    """Every import name the group can produce, so the hub can delete those it no longer does."""
    match key:
        case (kind, namespace, name) if kind == GROUP_SERVICE:
            return [names.service_import_name(namespace, name), names.endpoints_import_name(namespace, name)]
        case (kind, cluster_id) if kind == GROUP_CLUSTER_INFO:
            return [names.cluster_info_import_name(cluster_id)]
        case (kind, name) if kind == GROUP_ACNP:
            return [names.acnp_import_name(name)]
        case (kind, label) if kind == GROUP_LABEL_IDENTITY:
            return [names.label_identity_import_name(label)]
    raise UnknownGroupKind(key)


def _merge_service_group(exports: Sequence[pb.ResourceExport], ctx: MergeContext) -> GroupResult:
    namespace, name = exports[0].namespace, exports[0].name
    service_import_name = names.service_import_name(namespace, name)
    endpoints_import_name = names.endpoints_import_name(namespace, name)
    services = merge_services(
        [e for e in exports if e.HasField("service")],
        import_name=service_import_name,
        strict_ports=ctx.config.strict_ports,
    )
    endpoints = merge_endpoints(
        [e for e in exports if e.HasField("endpoints")],
        services.by_cluster,
        services.served_ports,
        import_name=endpoints_import_name,
    )
    imports: dict[str, pb.ResourceImport] = {}
    if services.spec is not None:
        reached = select_for_members(services.spec, endpoints.spec, ctx.member_properties)
        for cluster, importers in reached.items():
            services.by_cluster[cluster].clusters.extend(importers)
        imports[service_import_name] = pb.ResourceImport(
            import_name=service_import_name, namespace=namespace, name=name, service_import=services.spec
        )
        imports[endpoints_import_name] = pb.ResourceImport(
            import_name=endpoints_import_name, namespace=namespace, name=name, endpoints=endpoints.spec
        )
    return GroupResult(imports=imports, statuses={**services.statuses, **endpoints.statuses})


def merge_group(
    exports: Sequence[pb.ResourceExport],
    previous_imports: Mapping[str, pb.ResourceImport],
    ctx: MergeContext,
) -> GroupResult:
    """Merge ALL current exports of one group into the imports it produces now.

    No exports: no imports (the hub deletes the group's imports). Raises
    MixedGroup when the exports do not share one group key,
    LabelIdentityExhausted when a new label identity finds no free ID.
    """
    if not exports:
        return GroupResult()
    key = group_key(exports[0])
    strangers = sorted(e.export_name for e in exports if group_key(e) != key)
    if strangers:
        raise MixedGroup(key, strangers)
    kind = key[0]
    if kind == GROUP_SERVICE:
        return _merge_service_group(exports, ctx)
    if kind == GROUP_CLUSTER_INFO:
        return merge_cluster_info(exports, ctx.addressing)
    if kind == GROUP_ACNP:
        return merge_acnp(exports)
    return merge_label_identity(exports, previous_imports, ctx.used_label_ids)

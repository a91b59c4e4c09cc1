"""`get resourceexport` and `get resourceimport`: from the hub's REST facade when a hub URL is
given, else from the ResourceExport/ResourceImport CRs in the leader Namespace (what the
hub's kube store writes). -n is the Namespace of the CRs, as in antctl."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctl.access import HubAccess, HubRest
from ctl.errors import NotFoundError
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import Obj, Resource
from mcapi import names
from mcapi.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS

EXPORT_HEADER = ("CLUSTER-ID", "NAMESPACE", "NAME", "KIND")
IMPORT_HEADER = ("NAMESPACE", "NAME", "KIND")
# `-o wide`: how each member fared applying the import (status.clusterStatuses).
IMPORT_WIDE_HEADER = (*IMPORT_HEADER, "OUTCOMES")


@dataclass(frozen=True)
class Query:
    name: str | None
    namespace: str | None  # None: every Namespace (-A)
    cluster_id: str


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _select(items: list[Obj], query: Query, what: str) -> Obj | list[Obj]:
    if query.namespace is not None:
        items = [i for i in items if _meta(i).get("namespace") == query.namespace]
    if query.name is None:
        return items
    for item in items:
        if _meta(item).get("name") == query.name:
            return item
    where = f" in Namespace {query.namespace}" if query.namespace else ""
    raise NotFoundError(f"no {what} {query.name!r}{where}: `mcctl get {what.lower()}` lists them")


async def _from_cluster(client: KubeClient, resource: Resource, query: Query, label_selector: str | None) -> list[Obj]:
    if query.name is not None and query.namespace is not None:
        try:
            return [await client.get(resource, query.name, query.namespace)]
        except NotFound:
            return []
    try:
        return (await client.list_all(resource, query.namespace, label_selector=label_selector)).items
    except NotFound:
        # The CRD itself is missing: the cluster is not a leader running the kube store.
        raise NotFoundError(
            f"this cluster serves no {resource.qualified_name}: point --kubeconfig at the leader cluster, "
            "or read the hub with --hub-url"
        ) from None


async def resource_exports(client: KubeClient | None, hub: HubAccess | None, query: Query) -> Obj | list[Obj]:
    if hub is not None:
        async with HubRest(hub) as rest:
            items = await rest.items("/api/v1/resourceexports", {"clusterID": query.cluster_id})
    else:
        assert client is not None
        selector = f"{names.LABEL_SOURCE_CLUSTER_ID}={query.cluster_id}" if query.cluster_id else None
        items = await _from_cluster(client, RESOURCE_EXPORTS, query, selector)
        if query.cluster_id:
            items = [i for i in items if export_cluster_id(i) == query.cluster_id]
    return _select(items, query, "ResourceExport")


async def resource_imports(client: KubeClient | None, hub: HubAccess | None, query: Query) -> Obj | list[Obj]:
    if hub is not None:
        async with HubRest(hub) as rest:
            items = await rest.items("/api/v1/resourceimports", {"clusterID": query.cluster_id})
    else:
        assert client is not None
        items = await _from_cluster(client, RESOURCE_IMPORTS, query, None)
    return _select(items, query, "ResourceImport")


def export_cluster_id(obj: Obj) -> str:
    labels = _meta(obj).get("labels") or {}
    return str(labels.get(names.LABEL_SOURCE_CLUSTER_ID) or (obj.get("spec") or {}).get("clusterID", ""))


def _as_list(data: Obj | list[Obj]) -> list[Obj]:
    return data if isinstance(data, list) else [data]


def export_rows(data: Obj | list[Obj]) -> list[tuple[str, ...]]:
    return [
        (
            export_cluster_id(o),
            str(_meta(o).get("namespace", "")),
            str(_meta(o).get("name", "")),
            str((o.get("spec") or {}).get("kind", "")),
        )
        for o in _as_list(data)
    ]


def import_rows(data: Obj | list[Obj]) -> list[tuple[str, ...]]:
    return [
        (str(_meta(o).get("namespace", "")), str(_meta(o).get("name", "")), str((o.get("spec") or {}).get("kind", "")))
        for o in _as_list(data)
    ]


def _outcomes(obj: Obj) -> list[tuple[str, bool, str, str]]:
    """(cluster ID, succeeded, reason, message) per member that reported on this import."""
    found = []
    for entry in (obj.get("status") or {}).get("clusterStatuses") or []:
        conditions = [c for c in entry.get("conditions") or [] if c.get("type") == "Succeeded"]
        if conditions:
            condition = conditions[0]
            found.append(
                (
                    str(entry.get("clusterID", "")),
                    condition.get("status") == "True",
                    str(condition.get("reason", "")),
                    str(condition.get("message", "")),
                )
            )
    return found


def outcome_summary(obj: Obj) -> str:
    """``cluster=Succeeded,cluster=Reason`` (``<none>`` before any member reported)."""
    parts = [f"{cluster}={reason or ('Succeeded' if ok else 'Failed')}" for cluster, ok, reason, _ in _outcomes(obj)]
    return ",".join(parts) or "<none>"


def import_rows_wide(data: Obj | list[Obj]) -> list[tuple[str, ...]]:
    return [(*row, outcome_summary(o)) for row, o in zip(import_rows(data), _as_list(data), strict=True)]


def import_failures(data: Obj | list[Obj]) -> list[str]:
    """One sentence per member that could not apply an import, for a note under the table."""
    return [
        f"{cluster} could not apply {_meta(o).get('name', '')}: {message or reason}"
        for o in _as_list(data)
        for cluster, ok, reason, message in _outcomes(o)
        if not ok
    ]

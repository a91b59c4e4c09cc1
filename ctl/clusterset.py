"""ClusterSet CRs: the manifests init and join create, the lookup every verb needs,
and the rows of `get clusterset` (one per cluster status condition, as antctl prints)."""

from __future__ import annotations

from typing import Any

from ctl.errors import NotFoundError
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import Obj
from mcapi import names
from mcapi.resources import CLUSTER_SETS

CREATED_BY = names.ANNOTATION_CREATED_BY_ANTCTL
# Where init records the hub's gRPC URL on the leader ClusterSet, so `get joinconfig` can print it.
ANNOTATION_HUB_SERVER = "multicluster.antrea.io/hub-server"

CLUSTERSET_HEADER = ("CLUSTER-ID", "NAMESPACE", "CLUSTERSET-ID", "TYPE", "STATUS", "REASON")


def created_by_ctl_meta(name: str, namespace: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """metadata marking an object as mcctl's (annotation, as antctl, and a label to select it by)."""
    return {
        "name": name,
        "namespace": namespace,
        "labels": {CREATED_BY: "true"},
        "annotations": {CREATED_BY: "true", **(annotations or {})},
    }


def is_created_by_ctl(obj: Obj) -> bool:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(CREATED_BY) == "true"


def leader_clusterset(clusterset_id: str, namespace: str, leader_cluster_id: str, hub_server: str) -> Obj:
    annotations = {ANNOTATION_HUB_SERVER: hub_server} if hub_server else {}
    return {
        "apiVersion": CLUSTER_SETS.api_version,
        "kind": "ClusterSet",
        "metadata": created_by_ctl_meta(clusterset_id, namespace, annotations),
        "spec": {"clusterID": leader_cluster_id, "leaders": [{"clusterID": leader_cluster_id}]},
    }


def member_clusterset(
    *,
    clusterset_id: str,
    namespace: str,
    cluster_id: str,
    leader_cluster_id: str,
    leader_namespace: str,
    hub_server: str,
    secret_name: str,
) -> Obj:
    return {
        "apiVersion": CLUSTER_SETS.api_version,
        "kind": "ClusterSet",
        "metadata": created_by_ctl_meta(clusterset_id, namespace),
        "spec": {
            "clusterID": cluster_id,
            "namespace": leader_namespace,
            "leaders": [{"clusterID": leader_cluster_id, "server": hub_server, "secret": secret_name}],
        },
    }


async def list_clustersets(client: KubeClient, namespaces: list[str] | None) -> list[Obj]:
    """ClusterSets in the given Namespaces (every Namespace when None)."""
    if namespaces is None:
        return (await client.list_all(CLUSTER_SETS)).items
    found: list[Obj] = []
    for namespace in namespaces:
        found.extend((await client.list_all(CLUSTER_SETS, namespace)).items)
    return found


async def the_clusterset(client: KubeClient, namespace: str, clusterset_id: str | None, hint: str) -> Obj:
    """The ClusterSet of a Namespace (there is at most one); `hint` says what to run when there is none."""
    if clusterset_id:
        try:
            return await client.get(CLUSTER_SETS, clusterset_id, namespace)
        except NotFound:
            raise NotFoundError(f"no ClusterSet {clusterset_id!r} in namespace {namespace}: {hint}") from None
    items = (await client.list_all(CLUSTER_SETS, namespace)).items
    if not items:
        raise NotFoundError(f"no ClusterSet in namespace {namespace}: {hint}")
    return items[0]


def clusterset_rows(clustersets: list[Obj]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for cs in clustersets:
        meta = cs.get("metadata") or {}
        ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        statuses = (cs.get("status") or {}).get("clusterStatuses") or []
        conditions = [(s.get("clusterID", ""), c) for s in statuses for c in s.get("conditions") or []]
        if not conditions:
            rows.append(("", ns, name, "", "", ""))
        for cluster_id, cond in conditions:
            rows.append(
                (
                    str(cluster_id),
                    ns,
                    name,
                    str(cond.get("type", "")),
                    str(cond.get("status", "")),
                    str(cond.get("reason", "")),
                )
            )
    return rows

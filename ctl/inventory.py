"""`mcctl get clusterproperty|clusterprofile|serviceimport`: the sig-multicluster inventory and each
importer's cluster selection, as tables (or the objects, with -o json|yaml).

- ``clusterproperty`` (any cluster): its ClusterProperties (about.k8s.io, KEP-2149), name and value;
- ``clusterprofile`` (the leader): the ClusterProfile the hub keeps for every member (KEP-4322), with
  its ControlPlaneHealthy condition, Kubernetes version and properties;
- ``serviceimport`` (a member): its ServiceImports, the clusters exporting each, and, for an export
  with cluster selectors (KEP-5939), the clusters each selector selected for this importer.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

from ctl.access import open_cluster
from ctl.errors import EXIT_OK, NotFoundError
from ctl.output import FORMATS, note, print_objects
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import Obj, Resource
from mcapi import names
from mcapi.crds import CONDITION_CONTROL_PLANE_HEALTHY, LABEL_CLUSTER_MANAGER
from mcapi.resources import CLUSTER_PROFILES, CLUSTER_PROPERTIES, SERVICE_IMPORTS, SERVICE_IMPORTS_V1BETA1

Leaf = Callable[..., argparse.ArgumentParser]
Row = tuple[str, ...]

PROPERTY_HEADER = ("NAME", "VALUE")
PROFILE_HEADER = ("CLUSTER-ID", "NAMESPACE", "MANAGER", "HEALTHY", "REASON", "VERSION", "PROPERTIES")
IMPORT_HEADER = ("NAMESPACE", "NAME", "TYPE", "EXPORTERS", "SELECTED")
# SELECTED when the export has no cluster selectors: every exporting cluster serves the importer.
ALL_EXPORTERS = "<all>"


def _joined(values: list[str]) -> str:
    return ",".join(values) if values else "<none>"


def property_rows(items: list[Obj]) -> list[Row]:
    return [(str(p["metadata"]["name"]), str((p.get("spec") or {}).get("value", ""))) for p in items]


def profile_rows(items: list[Obj]) -> list[Row]:
    rows: list[Row] = []
    for profile in items:
        meta, status = profile.get("metadata") or {}, profile.get("status") or {}
        conditions = [c for c in status.get("conditions") or [] if c.get("type") == CONDITION_CONTROL_PLANE_HEALTHY]
        healthy: Obj = conditions[0] if conditions else {}
        properties = [f"{p.get('name')}={p.get('value')}" for p in status.get("properties") or []]
        rows.append(
            (
                str(meta.get("name", "")),
                str(meta.get("namespace", "")),
                str((meta.get("labels") or {}).get(LABEL_CLUSTER_MANAGER, "")),
                str(healthy.get("status", "Unknown")),
                str(healthy.get("reason", "")),
                str((status.get("version") or {}).get("kubernetes", "")),
                _joined(properties),
            )
        )
    return rows


def selected(service_import: Obj) -> str:
    """Each selector's clusters for this importer, in order (``;`` between selectors): the importer
    uses the first with a ready endpoint, else every exporter."""
    if not (service_import.get("spec") or {}).get("clusterSelectors"):
        return ALL_EXPORTERS
    results = (service_import.get("status") or {}).get("clusterSelectorResults") or []
    return ";".join(_joined([str(c) for c in r.get("clusters") or []]) for r in results) or "<pending>"


def import_rows(items: list[Obj]) -> list[Row]:
    rows: list[Row] = []
    for imported in items:
        meta, spec, status = imported.get("metadata") or {}, imported.get("spec") or {}, imported.get("status") or {}
        exporters = sorted(str(c.get("cluster", "")) for c in status.get("clusters") or [])
        rows.append(
            (
                str(meta.get("namespace", "")),
                str(meta.get("name", "")),
                str(spec.get("type", "")),
                _joined(exporters),
                selected(imported),
            )
        )
    return rows


async def _list(client: KubeClient, resource: Resource, namespace: str | None) -> list[Obj]:
    return (await client.list_all(resource, namespace)).items


async def _list_imports(client: KubeClient, namespace: str | None) -> list[Obj]:
    """v1beta1, which carries the selectors, where the cluster serves it; else v1alpha1."""
    try:
        return await _list(client, SERVICE_IMPORTS_V1BETA1, namespace)
    except NotFound:
        return await _list(client, SERVICE_IMPORTS, namespace)


def _namespace(args: argparse.Namespace) -> str | None:
    return None if args.all_namespaces else args.namespace


async def _print(
    args: argparse.Namespace,
    read: Callable[[KubeClient], Awaitable[list[Obj]]],
    header: tuple[str, ...],
    rows_of: Callable[[list[Obj]], list[Row]],
    missing: str,
) -> int:
    client = await open_cluster(args.kubeconfig)
    try:
        items = await read(client)
    finally:
        await client.close()
    if args.name:
        items = [i for i in items if i["metadata"]["name"] == args.name]
        if not items:
            raise NotFoundError(f"no {missing} {args.name!r}")
    elif not items and args.output == "table":
        note(f"No {missing} found")
        return EXIT_OK
    print_objects(items[0] if args.name else items, args.output, header, lambda _: rows_of(items))
    return EXIT_OK


async def get_clusterproperty(args: argparse.Namespace) -> int:
    return await _print(
        args, lambda c: _list(c, CLUSTER_PROPERTIES, None), PROPERTY_HEADER, property_rows, "ClusterProperty"
    )


async def get_clusterprofile(args: argparse.Namespace) -> int:
    where = _namespace(args)
    return await _print(
        args,
        lambda c: _list(c, CLUSTER_PROFILES, where),
        PROFILE_HEADER,
        profile_rows,
        f"ClusterProfile{f' in Namespace {where}' if where else ''}",
    )


async def get_serviceimport(args: argparse.Namespace) -> int:
    where = _namespace(args)
    return await _print(
        args,
        lambda c: _list_imports(c, where),
        IMPORT_HEADER,
        import_rows,
        f"ServiceImport{f' in Namespace {where}' if where else ''}",
    )


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", choices=FORMATS, default="table", help="table (default), json or yaml")


def register(leaf: Leaf, get_kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = leaf(get_kinds, "clusterproperty", "print this cluster's ClusterProperties (KEP-2149)", get_clusterproperty)
    p.add_argument("name", nargs="?", help="ClusterProperty name, e.g. cluster.clusterset.k8s.io")
    _output(p)

    leader = names.DEFAULT_LEADER_NAMESPACE
    p = leaf(
        get_kinds,
        "clusterprofile",
        "print the ClusterProfile the hub keeps for every member in the leader cluster (KEP-4322)",
        get_clusterprofile,
    )
    p.add_argument("name", nargs="?", help="the member's cluster ID")
    p.add_argument("-n", "--namespace", default=leader, help=f"the leader Namespace (default {leader})")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="across all Namespaces")
    _output(p)

    p = leaf(
        get_kinds,
        "serviceimport",
        "print a member's ServiceImports: their exporters and the clusters each cluster selector selected "
        "for this member (KEP-5939)",
        get_serviceimport,
    )
    p.add_argument("name", nargs="?", help="ServiceImport name")
    p.add_argument("-n", "--namespace", default=None, help="only this Namespace (default: all)")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="across all Namespaces (the default)")
    _output(p)

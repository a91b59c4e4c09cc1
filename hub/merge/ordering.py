"""Oldest-first order of exports: conflicts are won by the oldest export.

The hub stamps create_time when it first accepts an export; ties (same
instant) are broken by cluster ID, then export name, so the order never
depends on the order the hub happened to pass the exports in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mcapi.mchub.v1 import common_area_pb2 as pb


def age_key(export: pb.ResourceExport) -> tuple[int, int, str, str]:
    return (export.create_time.seconds, export.create_time.nanos, export.cluster_id, export.export_name)


def oldest_first(exports: Iterable[pb.ResourceExport]) -> list[pb.ResourceExport]:
    return sorted(exports, key=age_key)


def first_per_cluster(
    ordered: Sequence[pb.ResourceExport],
) -> tuple[list[pb.ResourceExport], list[pb.ResourceExport]]:
    """Split oldest-first exports into the oldest of each cluster and the rest.

    The hub's naming rule allows one export per cluster and group; if a second
    ever appears it must not count twice, so it is set aside.
    """
    seen: set[str] = set()
    firsts: list[pb.ResourceExport] = []
    extras: list[pb.ResourceExport] = []
    for export in ordered:
        if export.cluster_id in seen:
            extras.append(export)
        else:
            seen.add(export.cluster_id)
            firsts.append(export)
    return firsts, extras


def clusters_text(cluster_ids: Iterable[str]) -> str:
    """Cluster IDs as a sentence fragment, sorted and deduplicated."""
    return ", ".join(sorted(set(cluster_ids)))

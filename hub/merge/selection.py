"""Which clusters each member imports a selective Service from (KEP-5939), as the merge writes it.

A ServiceImport whose exporters give cluster selectors carries, for every member of the
ClusterSet, the results of those selectors among the exporting clusters (mcapi.cluster_selection
resolves them from the members' ClusterProperties): members whose results are equal share one
entry. The exporters learn, in their Service export's status, which members' traffic they
receive now: an importer sends it to the clusters of its first result that has a ready endpoint,
else to every exporting cluster (the consuming rule the members' importers follow too).
"""

from __future__ import annotations

from collections.abc import Mapping

from mcapi.cluster_selection import preferred_clusters, selections
from mcapi.mchub.v1 import common_area_pb2 as pb

Properties = Mapping[str, str]


def select_for_members(
    spec: pb.ServiceImportSpec, endpoints: pb.EndpointsSpec, members: Mapping[str, Properties]
) -> dict[str, list[str]]:
    """Write the members' selections into ``spec`` (cleared without selectors); return, per
    exporting cluster, the members whose traffic it receives now (sorted)."""
    del spec.selections[:]
    if not spec.cluster_selectors:
        return {}
    exporters = list(spec.clusters)
    spec.selections.extend(selections(spec.cluster_selectors, exporters, members))
    ready = {subset.cluster_id for subset in endpoints.subsets if subset.addresses}
    reached: dict[str, list[str]] = {cluster: [] for cluster in exporters}
    for selection in spec.selections:
        results = [list(result.clusters) for result in selection.results]
        for cluster in preferred_clusters(results, ready, exporters):
            reached[cluster].extend(selection.importers)
    return {cluster: sorted(importers) for cluster, importers in reached.items()}

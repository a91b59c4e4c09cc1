"""The clusters this member imports a selective Service from (KEP-5939, the consuming side).

The hub resolves a ServiceImport's cluster selectors for every member (hub.merge.selection); this
member takes its own results and, for its ServiceImport's ``status.clusterSelectorResults``,
writes them as they are. Its Endpoints ``antrea-mc-<name>`` (what kube-proxy sends the
ClusterSet IP's traffic to) and MCS EndpointSlices hold the endpoints of the clusters of the first
result that has a ready endpoint, or of every exporting cluster when none has: the endpoints of
other clusters are left out, so requests reach only the selected clusters, and an unselected
cluster's slices are deleted. Which endpoints are ready is read from the Endpoints import as this
member writes it (its own cluster's share from its local Endpoints), so its choice follows
readiness without waiting for the hub.
"""

from __future__ import annotations

from typing import Any

from mcapi.cluster_selection import Results, preferred_clusters, results_for
from mcapi.mchub.v1 import common_area_pb2 as pb


def own_results(service_import: pb.ResourceImport | None, cluster_id: str) -> Results | None:
    """This member's results of the ServiceImport's selectors (None: it has none, or not for us yet)."""
    if service_import is None or not service_import.HasField("service_import"):
        return None
    return results_for(service_import.service_import, cluster_id)


def selector_results_status(service_import: pb.ResourceImport, cluster_id: str) -> list[dict[str, Any]] | None:
    """``status.clusterSelectorResults`` of this member's ServiceImport (None: no selectors)."""
    results = own_results(service_import, cluster_id)
    if results is None:
        return None
    return [{"clusters": clusters} for clusters in results]


def selected_endpoints(
    endpoints: pb.ResourceImport, service_import: pb.ResourceImport | None, cluster_id: str
) -> pb.ResourceImport:
    """The Endpoints import with only the subsets of the clusters this member prefers; itself
    when the Service has no selectors (for this member)."""
    results = own_results(service_import, cluster_id)
    if results is None:
        return endpoints
    subsets = endpoints.endpoints.subsets
    ready = {subset.cluster_id for subset in subsets if subset.addresses}
    exporters = {subset.cluster_id for subset in subsets}
    preferred = preferred_clusters(results, ready, exporters)
    selected = pb.ResourceImport()
    selected.CopyFrom(endpoints)
    del selected.endpoints.subsets[:]
    selected.endpoints.subsets.extend(s for s in subsets if s.cluster_id in preferred)
    return selected

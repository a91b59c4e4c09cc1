"""The dashboard: its view model (pure, built from the REST shapes) and its page.

The view model is what `/api/v1/events` streams. It is derived from the same
CRD-shaped items the REST API returns (hub.rest.shapes), so the page and
`mcctl` speak one vocabulary: verdicts are named as in the ResourceExport
annotation, per-cluster import status is read from `status.clusterStatuses`.

It has two parts because they change at different rates: `liveness`
(ClusterSet status and members: heartbeats move every few seconds) and
`resources` (exports, imports, gateways: change only on commits or import
status reports). The live stream compares each part with what it last sent.

The page itself (`/` and `/static/*`) is public so a browser can show the
token prompt; every data call it makes carries the token.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hub.rest import shapes
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

if TYPE_CHECKING:
    from hub.rest import RestHub

STATIC_DIR = Path(__file__).parent / "static"
_CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
# Everything the page loads comes from this origin; data arrives only via fetch/EventSource.
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    # The token travels in the EventSource URL: never leak it in a Referer.
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


# ---- view model --------------------------------------------------------------


def _verdict(item: dict[str, Any]) -> str:
    annotation = item["metadata"].get("annotations", {}).get(names.ANNOTATION_EXPORT_VERDICT, "")
    if not annotation:
        return "Pending"
    return shapes.verdict_name(pb.Verdict.Value(annotation))


def _condition(item: dict[str, Any]) -> dict[str, Any]:
    conditions = (item.get("status") or {}).get("conditions") or [{}]
    first: dict[str, Any] = conditions[0]
    return first


def _cluster_statuses(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per member cluster: did it apply this import (from ResourceImport status)."""
    statuses = {}
    for entry in (item.get("status") or {}).get("clusterStatuses", []):
        condition = entry["conditions"][0]
        statuses[entry["clusterID"]] = {
            "succeeded": condition["status"] == "True",
            "reason": condition.get("reason", ""),
            "message": condition.get("message", ""),
            "reported": condition.get("lastTransitionTime", ""),
        }
    return statuses


def liveness_view(hub: RestHub) -> dict[str, Any]:
    """ClusterSet readiness and each member's connection state."""
    clusterset = shapes.clusterset(hub)
    status = clusterset["status"]
    ready = status["conditions"][0]
    members = [
        {
            "clusterID": item["clusterID"],
            "connected": item["status"]["connected"],
            "heartbeatAgeSeconds": item["status"]["heartbeatAgeSeconds"],
            "lastHeartbeat": item["status"]["lastHeartbeat"],
            "joined": item["metadata"].get("creationTimestamp", ""),
            "kubernetesVersion": item["status"]["kubernetesVersion"],
            "properties": item["status"]["properties"],
        }
        for item in shapes.members(hub)
    ]
    return {
        "clusterSet": {
            "name": clusterset["metadata"]["name"],
            "leaderClusterID": clusterset["spec"]["clusterID"],
            "totalClusters": status["totalClusters"],
            "readyClusters": status["readyClusters"],
            "ready": {k: ready[k] for k in ("status", "reason", "message")},
        },
        "members": members,
    }


def _export_row(item: dict[str, Any]) -> dict[str, Any]:
    spec = item["spec"]
    condition = _condition(item)
    row: dict[str, Any] = {
        "name": item["metadata"]["name"],
        "clusterID": spec.get("clusterID", ""),
        "kind": spec["kind"],
        "namespace": spec.get("namespace", ""),
        "sourceName": spec.get("name", ""),
        "verdict": _verdict(item),
        "reason": condition.get("reason", ""),
        "message": condition.get("message", ""),
        "created": item["metadata"].get("creationTimestamp", ""),
    }
    if spec["kind"] == names.KIND_SERVICE:
        service = spec["service"]["serviceSpec"]
        row["type"] = service.get("type", "ClusterIP")
        row["ports"] = service.get("ports", [])
    return row


def _endpoint_count(item: dict[str, Any] | None) -> int | None:
    if item is None:
        return None
    subsets = item["spec"].get("endpoints", {}).get("subsets", [])
    return sum(len(s.get("addresses", [])) for s in subsets)


def _service_import_row(item: dict[str, Any], endpoints: dict[str, Any] | None) -> dict[str, Any]:
    spec = item["spec"]
    service_import = spec["serviceImport"]
    return {
        "name": item["metadata"]["name"],
        "namespace": spec.get("namespace", ""),
        "sourceName": spec.get("name", ""),
        "type": service_import["spec"].get("type", ""),
        "ports": service_import["spec"].get("ports", []),
        "clusters": [c["cluster"] for c in service_import.get("status", {}).get("clusters", [])],
        "endpoints": _endpoint_count(endpoints),
        "clusterStatuses": _cluster_statuses(item),
        "selective": bool(service_import["spec"].get("clusterSelectors")),
        "selections": _selections(spec),
    }


def _selections(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """With cluster selectors (KEP-5939): per group of importers, the clusters each selector chose."""
    return [
        {
            "importers": selection.get("importers", []),
            "results": [result.get("clusters", []) for result in selection.get("results", [])],
        }
        for selection in spec.get("clusterSelections", [])
    ]


def _policy_row(item: dict[str, Any]) -> dict[str, Any]:
    spec = item["spec"]
    policy = spec.get("clusternetworkpolicy") or {}  # ResourceImport spells it in lower case, as Antrea does
    return {
        "name": item["metadata"]["name"],
        "sourceName": spec.get("name", ""),
        "tier": policy.get("tier", ""),
        "priority": policy.get("priority"),
        # Empty means every member, as in ResourceImport.spec.clusterID.
        "targetClusters": spec.get("clusterID", []),
        "clusterStatuses": _cluster_statuses(item),
    }


def _gateway_row(item: dict[str, Any]) -> dict[str, Any]:
    info = item["spec"]["clusterinfo"]
    return {
        "name": item["metadata"]["name"],
        "clusterID": info.get("clusterID", ""),
        "serviceCIDR": info.get("serviceCIDR", ""),
        "podCIDRs": info.get("podCIDRs", []),
        "gatewayIPs": [g.get("gatewayIP", "") for g in info.get("gatewayInfos", [])],
        "wireGuard": bool((info.get("wireGuard") or {}).get("publicKey")),
        # Where NAT applies: a globally addressed member is reached through its global block.
        "globalCIDR": info.get("globalCIDR", ""),
        "globallyAddressed": bool(info.get("globallyAddressed")),
        # Health as reported by the members that applied this ClusterInfoImport.
        "health": _cluster_statuses(item),
    }


def _link_health(reports: list[dict[str, Any] | None]) -> str:
    known = [r for r in reports if r is not None]
    if any(not r["succeeded"] for r in known):
        return "unhealthy"
    if known and len(known) == len(reports):
        return "healthy"
    return "unknown"


def gateway_links(gateways: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One link per pair of clusters that exchanged ClusterInfo.

    Each side applies the other's ClusterInfoImport; a failure reported by
    either side makes the link unhealthy, two successes make it healthy.
    """
    by_cluster = {g["clusterID"]: g for g in gateways}
    links = []
    for a, b in combinations(sorted(by_cluster), 2):
        reports = [by_cluster[a]["health"].get(b), by_cluster[b]["health"].get(a)]
        links.append({"a": a, "b": b, "health": _link_health(reports)})
    return links


def resources_view(hub: RestHub) -> dict[str, Any]:
    """Exports with verdicts, imports with per-cluster status, gateways and their links."""
    exports = [_export_row(item) for item in shapes.exports(hub) if item["spec"]["kind"] != names.KIND_LABEL_IDENTITY]
    imports = {item["metadata"]["name"]: item for item in shapes.imports(hub)}
    kinds = {name: item["spec"]["kind"] for name, item in imports.items()}
    services = [
        _service_import_row(
            item, imports.get(names.endpoints_import_name(item["spec"]["namespace"], item["spec"]["name"]))
        )
        for name, item in imports.items()
        if kinds[name] == names.KIND_SERVICE_IMPORT
    ]
    gateways = [_gateway_row(item) for name, item in imports.items() if kinds[name] == names.KIND_CLUSTER_INFO]
    policies = [_policy_row(item) for name, item in imports.items() if kinds[name] == names.KIND_ACNP]
    return {
        "exports": exports,
        "serviceImports": services,
        "policies": policies,
        "gateways": gateways,
        "gatewayLinks": gateway_links(gateways),
        "labelIdentities": sum(1 for kind in kinds.values() if kind == names.KIND_LABEL_IDENTITY),
    }


def view_header(hub: RestHub) -> dict[str, Any]:
    """Every event's clock (the page ages heartbeats from it) and the store revision."""
    return {
        "serverTime": hub.now().isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "revision": hub.engine.revision,
    }


# ---- the page ----------------------------------------------------------------


def _static_files() -> dict[str, Path]:
    return {
        f"/static/{path.relative_to(STATIC_DIR).as_posix()}": path
        for path in sorted(STATIC_DIR.rglob("*"))
        if path.is_file() and path.suffix in _CONTENT_TYPES
    }


# Paths the auth middleware lets through without a token: the shell and its assets.
PUBLIC_PATHS: frozenset[str] = frozenset({"/", *_static_files()})


def _file_handler(path: Path) -> Any:
    async def serve(_: web.Request) -> web.FileResponse:
        response = web.FileResponse(path, headers=_PAGE_HEADERS)
        response.content_type = _CONTENT_TYPES[path.suffix]
        return response

    return serve


def add_dashboard_routes(app: web.Application) -> None:
    """`/` (the page) and one route per shipped asset (no directory listing)."""
    app.router.add_get("/", _file_handler(STATIC_DIR / "index.html"))
    for url, path in _static_files().items():
        app.router.add_get(url, _file_handler(path))

"""What the end-to-end tests do in member clusters, as a user would with kubectl.

They run alike on sandbox and real clusters. Budgets follow the mcs-api conformance suite:
20 s per wait, polling every 100 ms, and 5 s for "consistently" checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kube.client import KubeClient
from kube.errors import AlreadyExists, NotFound
from kube.resources import ENDPOINT_SLICES, ENDPOINTS, NAMESPACES, SERVICES
from mcapi.names import LABEL_MCS_SERVICE_NAME, LABEL_MCS_SOURCE_CLUSTER
from mcapi.resources import SERVICE_EXPORTS, SERVICE_EXPORTS_V1BETA1, SERVICE_IMPORTS_V1BETA1

WAIT = 20.0
POLL = 0.1
CONSISTENTLY = 5.0
T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T | None]], within: float = WAIT, what: str = "") -> T:
    """The first truthy value `probe` returns within the budget."""
    deadline = time.monotonic() + within
    last: T | None = None
    while time.monotonic() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(POLL)
    raise AssertionError(f"not within {within}s: {what} (last: {last!r})")


async def consistently(probe: Callable[[], Awaitable[bool]], duration: float = CONSISTENTLY, what: str = "") -> None:
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        assert await probe(), f"stopped holding: {what}"
        await asyncio.sleep(POLL)


def service(
    name: str,
    ports: list[tuple[str, int, str]] | None = None,
    *,
    headless: bool = False,
    service_type: str = "ClusterIP",
    session_affinity: str | None = None,
    affinity_timeout: int | None = None,
    internal_traffic_policy: str | None = None,
    traffic_distribution: str | None = None,
    external_name: str | None = None,
    metadata: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``metadata``: the Service's own labels, also as its annotations (never exported)."""
    # No selector: export() writes the Endpoints that stand in for Pods, and on a real cluster
    # the endpoints controller would empty those of a Service with a selector (no Pods run).
    spec: dict[str, Any] = {"type": service_type}
    if service_type != "ExternalName":
        spec["ports"] = [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports or [("http", 80, "TCP")]]
    if headless:
        spec["clusterIP"] = "None"
    if external_name:
        spec["externalName"] = external_name
    if session_affinity:
        spec["sessionAffinity"] = session_affinity
    if affinity_timeout is not None:
        spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": affinity_timeout}}
    if internal_traffic_policy:
        spec["internalTrafficPolicy"] = internal_traffic_policy
    if traffic_distribution:
        spec["trafficDistribution"] = traffic_distribution
    meta: dict[str, Any] = {"name": name}
    if metadata:
        meta.update(labels=dict(metadata), annotations=dict(metadata))
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


async def ensure_namespace(client: KubeClient, name: str) -> None:
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def export(
    client: KubeClient,
    namespace: str,
    svc: dict[str, Any],
    pod_ips: tuple[str, ...] = ("10.0.0.1",),
    *,
    exported_labels: dict[str, str] | None = None,
    exported_annotations: dict[str, str] | None = None,
    cluster_selectors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Create the Service, Endpoints standing in for its Pods, and the ServiceExport (with
    ``spec.exportedLabels``/``exportedAnnotations`` when given, and KEP-5939's
    ``spec.clusterSelectors`` through v1beta1, where they are served); returns the Service as created."""
    created = await client.create(SERVICES, svc, namespace=namespace)
    name = created["metadata"]["name"]
    ports = [
        {"name": p.get("name", ""), "port": p["port"], "protocol": p.get("protocol", "TCP")}
        for p in created["spec"].get("ports", [])
    ]
    if ports:
        endpoints = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name},
            "subsets": [{"addresses": [{"ip": ip} for ip in pod_ips], "ports": ports}],
        }
        await client.create(ENDPOINTS, endpoints, namespace=namespace)
    export_spec = {
        "exportedLabels": exported_labels,
        "exportedAnnotations": exported_annotations,
        "clusterSelectors": cluster_selectors,
    }
    resource = SERVICE_EXPORTS_V1BETA1 if cluster_selectors else SERVICE_EXPORTS
    service_export: dict[str, Any] = {
        "apiVersion": resource.api_version,
        "kind": "ServiceExport",
        "metadata": {"name": name},
    }
    if any(export_spec.values()):
        service_export["spec"] = {key: value for key, value in export_spec.items() if value}
    await client.create(resource, service_export, namespace=namespace)
    return created


async def unexport(client: KubeClient, namespace: str, name: str) -> None:
    with contextlib.suppress(NotFound):
        await client.delete(SERVICE_EXPORTS, name, namespace)


async def service_import(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(SERVICE_IMPORTS_V1BETA1, name, namespace)
    except NotFound:
        return None


async def imported_service(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(SERVICES, f"antrea-mc-{name}", namespace)
    except NotFound:
        return None


async def export_condition(client: KubeClient, namespace: str, name: str, kind: str) -> dict[str, Any] | None:
    try:
        export_obj = await client.get(SERVICE_EXPORTS, name, namespace)
    except NotFound:
        return None
    for condition in (export_obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


async def mcs_slices(client: KubeClient, namespace: str, name: str) -> dict[str, list[tuple[str, int, list[str]]]]:
    """The MCS EndpointSlices of an import, by source cluster: (port name, number, addresses) of each port."""
    found = await client.list(ENDPOINT_SLICES, namespace, label_selector=f"{LABEL_MCS_SERVICE_NAME}={name}")
    by_cluster: dict[str, list[tuple[str, int, list[str]]]] = {}
    for item in found.items:
        addresses = sorted(a for e in item.get("endpoints") or [] for a in e["addresses"])
        for port in item.get("ports") or []:
            by_cluster.setdefault(item["metadata"]["labels"][LABEL_MCS_SOURCE_CLUSTER], []).append(
                (port.get("name", ""), port["port"], addresses)
            )
    return {cluster: sorted(ports) for cluster, ports in by_cluster.items()}


def import_ports(imp: dict[str, Any]) -> list[tuple[str, int, str]]:
    return sorted((p.get("name", ""), p["port"], p.get("protocol", "TCP")) for p in imp["spec"].get("ports", []))

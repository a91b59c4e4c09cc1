"""ServiceImports and EndpointSlices shaped as the member's importer writes them."""

from __future__ import annotations

from typing import Any

from mcapi import names
from member.imports.ownership import LABEL_IMPORTED_SERVICE, LABEL_MANAGED_BY, MANAGED_BY

IMPORTED = {names.ANNOTATION_IMPORTED_SERVICE: "true"}
# The label the importer's watches select its objects by.
IMPORTED_LABELS = {LABEL_IMPORTED_SERVICE: "true"}


def service_import(
    name: str,
    namespace: str = "default",
    *,
    ips: list[str] | None = None,
    ports: list[tuple[str, int, str]] | None = None,
    headless: bool = False,
    imported: bool = True,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "Headless" if headless else "ClusterSetIP",
        "ports": [
            {**({"name": n} if n else {}), "port": p, "protocol": proto}
            for n, p, proto in (ports if ports is not None else [("http", 80, "TCP")])
        ],
    }
    if ips is not None:
        spec["ips"] = ips
    return {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": dict(IMPORTED) if imported else {},
            "labels": dict(IMPORTED_LABELS) if imported else {},
        },
        "spec": spec,
    }


def endpoint(ip: str | list[str], hostname: str = "", ready: bool | None = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"addresses": ip if isinstance(ip, list) else [ip]}
    if ready is not None:
        entry["conditions"] = {"ready": ready}
    if hostname:
        entry["hostname"] = hostname
    return entry


def endpoint_slice(
    service: str,
    cluster: str,
    endpoints: list[dict[str, Any]],
    namespace: str = "default",
    *,
    ports: list[tuple[str, int, str]] | None = None,
    address_type: str = "IPv4",
    index: int = 0,
) -> dict[str, Any]:
    name = f"antrea-mc-{service}.{cluster}" + (f".{index}" if index else "")
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": dict(IMPORTED),
            "labels": {
                names.LABEL_MCS_SERVICE_NAME: service,
                names.LABEL_MCS_SOURCE_CLUSTER: cluster,
                "kubernetes.io/service-name": f"antrea-mc-{service}",
                LABEL_MANAGED_BY: MANAGED_BY,
                **IMPORTED_LABELS,
            },
        },
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": [
            {**({"name": n} if n else {}), "port": p, "protocol": proto}
            for n, p, proto in (ports if ports is not None else [("http", 8080, "TCP")])
        ],
    }

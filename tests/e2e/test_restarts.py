"""Restarts across the ClusterSet: no orphaned import, no rewrite of unchanged ones.

A hub restart (same data dir and address) and a member restart each happen while
another cluster withdraws an export; afterwards the withdrawn import is gone
everywhere and every other imported object keeps its resourceVersion. On sandbox clusters the
hub's SQLite store resumes its watchers; on the real ones its kube store begins a new epoch,
so members get a snapshot and must drop what it no longer has (tests/e2e/conftest.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import ENDPOINTS, SERVICES
from mchub_cli.localset import LocalClusterSet
from tests.e2e.mcs import eventually, export, imported_service, service, service_import, unexport

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

EAST, WEST = "test-cluster-east", "test-cluster-west"


async def versions(client: KubeClient, namespace: str, name: str) -> dict[str, str]:
    """resourceVersions of every object a member created for one imported Service."""
    imp = await service_import(client, namespace, name)
    svc = await client.get(SERVICES, f"antrea-mc-{name}", namespace)
    eps = await client.get(ENDPOINTS, f"antrea-mc-{name}", namespace)
    assert imp is not None
    return {
        "serviceimport": imp["metadata"]["resourceVersion"],
        "service": svc["metadata"]["resourceVersion"],
        "endpoints": eps["metadata"]["resourceVersion"],
    }


async def both_imported(client: KubeClient, namespace: str) -> dict[str, Any] | None:
    """Both ServiceImports there, kept's status naming its cluster and its Endpoints filled (the
    status and the Endpoints are written after the ServiceImport): only then has the import
    settled, so later writes would be churn."""
    kept = await service_import(client, namespace, "kept")
    dropped = await service_import(client, namespace, "dropped")
    if not (kept and dropped) or not (kept.get("status") or {}).get("clusters"):
        return None
    try:
        endpoints = await client.get(ENDPOINTS, "antrea-mc-kept", namespace)
    except NotFound:
        return None
    filled = any(subset.get("addresses") for subset in endpoints.get("subsets") or [])
    return kept if filled else None


async def only_kept(client: KubeClient, namespace: str) -> bool:
    return (
        await service_import(client, namespace, "dropped") is None
        and await imported_service(client, namespace, "dropped") is None
        and await service_import(client, namespace, "kept") is not None
    )


async def test_a_hub_restart_leaves_no_orphan_and_rewrites_nothing(clusterset: LocalClusterSet, namespace: str) -> None:
    east, west = clusterset.clusters[EAST].client, clusterset.clusters[WEST].client
    await export(west, namespace, service("kept"))
    await export(west, namespace, service("dropped"))
    await eventually(lambda: both_imported(east, namespace), what="both imported in east")
    before = await versions(east, namespace, "kept")

    hub = clusterset.hub
    assert hub is not None
    port = hub.grpc_port
    await hub.stop()
    await unexport(west, namespace, "dropped")  # while the hub is down
    clusterset.hub = None
    await clusterset.start_hub(port)

    await eventually(lambda: only_kept(east, namespace), what="dropped import removed after the hub restart")
    assert await versions(east, namespace, "kept") == before


async def test_a_member_restart_leaves_no_orphan_and_rewrites_nothing(
    clusterset: LocalClusterSet, namespace: str
) -> None:
    east, west = clusterset.clusters[EAST].client, clusterset.clusters[WEST].client
    await export(west, namespace, service("kept"))
    await export(west, namespace, service("dropped"))
    await eventually(lambda: both_imported(east, namespace), what="both imported in east")
    before = await versions(east, namespace, "kept")

    await clusterset.stop_member(EAST)
    await unexport(west, namespace, "dropped")  # while east's member is down
    hub = clusterset.hub
    assert hub is not None
    await eventually(
        lambda: _hub_dropped(hub.engine.index.imports, namespace), what="the hub removed the dropped import"
    )
    await clusterset.start_member(EAST)

    await eventually(lambda: only_kept(east, namespace), what="stale import removed after the member restart")
    assert await versions(east, namespace, "kept") == before


async def _hub_dropped(imports: dict[str, Any], namespace: str) -> bool:
    return f"{namespace}-dropped-service" not in imports

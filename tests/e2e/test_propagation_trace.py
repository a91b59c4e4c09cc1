"""The propagation trace (mcapi.trace) on a whole ClusterSet in one process: one exported Service
marks every hop of its way from west's ServiceExport to east's ServiceImport, in order, and
tracing changes nothing of what the members write.

Fixture `traced_clusterset`: a hub (SQLite store) and east/west sandbox clusters; the hops and
their order are the same on real clusters, and the benchmark (bench/propagation.py) reads them
on sandbox clusters, so this module runs there only.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mcapi import trace
from mchub_cli.localset import LocalClusterSet
from tests.e2e.conftest import make_namespace, new_clusterset
from tests.e2e.mcs import eventually, export, export_condition, imported_service, service, service_import

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

CLUSTER_KINDS = ("sandbox",)
EAST, WEST = "trace-east", "trace-west"
SHOP = f"shop-{secrets.token_hex(2)}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def traced_clusterset(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalClusterSet]:
    local = new_clusterset(cluster_kind, request, tmp_path_factory.mktemp("trace"), cluster_names=(EAST, WEST))
    try:
        await local.start()
        await make_namespace(local, SHOP)
        yield local
    finally:
        trace.stop()
        await local.stop()


async def _exported(clusterset: LocalClusterSet, name: str) -> dict[str, Any]:
    """Export ``name`` from west; what east and west hold once west says it is exported."""
    west, east = clusterset.clusters[WEST].client, clusterset.clusters[EAST].client
    await export(west, SHOP, service(name, [("http", 80, "TCP"), ("dns", 53, "UDP")]))
    imported = await eventually(lambda: service_import(east, SHOP, name), what=f"ServiceImport {name} in east")
    ready = await eventually(
        lambda: _ready(west, name), what=f"ServiceExport {name} Ready in west (the hub's answer written)"
    )
    svc = await eventually(lambda: imported_service(east, SHOP, name), what=f"imported Service {name}")
    return {
        "import_spec": {k: v for k, v in imported["spec"].items() if k != "ips"},
        "import_status": imported.get("status"),
        "import_has_ips": bool(imported["spec"].get("ips")),
        "service_ports": svc["spec"]["ports"],
        "service_type": svc["spec"].get("type"),
        "ready": {k: ready[k] for k in ("status", "reason")},
    }


async def _ready(client: Any, name: str) -> dict[str, Any] | None:
    condition = await export_condition(client, SHOP, name, "Ready")
    return condition if condition is not None and condition.get("status") == "True" else None


async def test_one_export_marks_every_hop_in_order(traced_clusterset: LocalClusterSet) -> None:
    traced = trace.start()
    try:
        await _exported(traced_clusterset, "traced")
    finally:
        trace.stop()
    path = traced.path(SHOP, "traced", WEST, EAST)
    assert list(path) == list(trace.HOPS), f"hops missing: {set(trace.HOPS) - set(path)}"
    times = list(path.values())
    assert times == sorted(times), "the hops were reached out of order: " + ", ".join(
        f"{hop.value} {at:.6f}" for hop, at in path.items()
    )
    # West imports its own export too (MCS): its importer marks the same hops for itself.
    assert traced.path(SHOP, "traced", WEST, WEST).keys() == path.keys()
    spans = trace.spans(path, times[0], times[-1])
    assert sum(spans.values()) == pytest.approx(times[-1] - times[0])


async def test_tracing_changes_nothing_the_members_write(traced_clusterset: LocalClusterSet) -> None:
    assert not trace.enabled()
    untraced = await _exported(traced_clusterset, "plain")
    traced = trace.start()
    try:
        with_trace = await _exported(traced_clusterset, "marked")
    finally:
        trace.stop()
    assert [name for _, name in traced.marks] == ["marked"]  # marked while on, and only then
    assert with_trace == untraced

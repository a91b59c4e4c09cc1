"""The propagation trace (mcapi.trace) on a whole ClusterSet in one process: one exported Service
marks every hop of its way from west's ServiceExport to east's ServiceImport, in order, and
tracing changes nothing of what the members write.

The module's ClusterSet (tests/e2e/conftest.py) on sandbox clusters only: the hops and their
order are the same on real clusters, and the benchmark (bench/propagation.py) reads them on
sandbox clusters. Every test works in a Namespace of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kube.client import KubeClient
from mcapi import trace
from mchub_cli.localset import LocalClusterSet
from tests.e2e.mcs import eventually, export, export_condition, imported_service, service, service_import

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

CLUSTER_KINDS = ("sandbox",)
EAST, WEST = "test-cluster-east", "test-cluster-west"


@pytest.fixture(autouse=True)
def _trace_off_afterwards() -> Iterator[None]:
    yield
    trace.stop()


async def _exported(clusterset: LocalClusterSet, namespace: str, name: str) -> dict[str, Any]:
    """Export ``name`` from west; what east and west hold once west says it is exported."""
    west, east = clusterset.clusters[WEST].client, clusterset.clusters[EAST].client
    await export(west, namespace, service(name, [("http", 80, "TCP"), ("dns", 53, "UDP")]))
    # The ServiceImport is created, then its status written: compare what it settles at.
    imported = await eventually(
        lambda: _with_status(east, namespace, name), what=f"ServiceImport {name} in east, its status written"
    )
    ready = await eventually(
        lambda: _ready(west, namespace, name), what=f"ServiceExport {name} Ready in west (the hub's answer written)"
    )
    svc = await eventually(lambda: imported_service(east, namespace, name), what=f"imported Service {name}")
    return {
        "import_spec": {k: v for k, v in imported["spec"].items() if k != "ips"},
        "import_status": imported.get("status"),
        "import_has_ips": bool(imported["spec"].get("ips")),
        "service_ports": svc["spec"]["ports"],
        "service_type": svc["spec"].get("type"),
        "ready": {k: ready[k] for k in ("status", "reason")},
    }


async def _with_status(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    imported = await service_import(client, namespace, name)
    return imported if imported is not None and (imported.get("status") or {}).get("clusters") else None


async def _ready(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    condition = await export_condition(client, namespace, name, "Ready")
    return condition if condition is not None and condition.get("status") == "True" else None


async def test_one_export_marks_every_hop_in_order(clusterset: LocalClusterSet, namespace: str) -> None:
    traced = trace.start()
    await _exported(clusterset, namespace, "traced")
    trace.stop()
    path = traced.path(namespace, "traced", WEST, EAST)
    assert list(path) == list(trace.HOPS), f"hops missing: {set(trace.HOPS) - set(path)}"
    times = list(path.values())
    assert times == sorted(times), "the hops were reached out of order: " + ", ".join(
        f"{hop.value} {at:.6f}" for hop, at in path.items()
    )
    assert path[trace.Hop.HUB_DURABLE] <= path[trace.Hop.WATCH_SENT]  # no import before its export is durable
    # West imports its own export too (MCS): its importer marks the same hops for itself.
    assert traced.path(namespace, "traced", WEST, WEST).keys() == path.keys()
    spans = trace.spans(path, times[0], times[-1])
    assert sum(spans.values()) == pytest.approx(times[-1] - times[0])


async def test_tracing_changes_nothing_the_members_write(clusterset: LocalClusterSet, namespace: str) -> None:
    assert not trace.enabled()
    untraced = await _exported(clusterset, namespace, "plain")
    traced = trace.start()
    with_trace = await _exported(clusterset, namespace, "marked")
    trace.stop()
    assert [name for _, name in traced.marks] == ["marked"]  # marked while on, and only then
    assert with_trace == untraced

"""Propagation through a local ClusterSet (hub + sandbox clusters + members, one process).

Prints, from one run:
- latency from ServiceExport created (in west) to ServiceImport visible (in east),
  p50/p99 over N Services created one after another, next to the floor: the
  latency of a ServiceImport written straight into east's API server and seen
  by the same watch;
- a burst: M Services exported at once by one cluster, time until every one of
  K importers holds all M ServiceImports, next to the floor: the same objects
  (Service, Endpoints, EndpointSlice, ServiceImport per Service) written straight
  into K clusters by one client.

Usage: python bench/propagation.py [--services 200] [--burst 1000] [--importers 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kube.client import KubeClient
from kube.resources import ENDPOINT_SLICES, ENDPOINTS, SERVICE_EXPORTS, SERVICE_IMPORTS_V1BETA1, SERVICES
from mchub_cli.localset import LocalClusterSet

NAMESPACE = "default"


def _service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }


def _endpoints(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name},
        "subsets": [{"addresses": [{"ip": "10.10.0.1"}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}],
    }


def _export(name: str) -> dict[str, Any]:
    return {"apiVersion": SERVICE_EXPORTS.api_version, "kind": "ServiceExport", "metadata": {"name": name}}


async def export_service(client: KubeClient, name: str) -> None:
    await client.create(SERVICES, _service(name), namespace=NAMESPACE)
    await client.create(ENDPOINTS, _endpoints(name), namespace=NAMESPACE)
    await client.create(SERVICE_EXPORTS, _export(name), namespace=NAMESPACE)


class ImportWatch:
    """Records when each ServiceImport name first appears in one cluster."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.seen: dict[str, float] = {}
        self.changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listed = await self.client.list(SERVICE_IMPORTS_V1BETA1, namespace=NAMESPACE)
        for item in listed.items:
            self.seen.setdefault(item["metadata"]["name"], time.perf_counter())
        self._task = asyncio.create_task(self._run(listed.resource_version))

    async def _run(self, resource_version: str) -> None:
        async for event in self.client.watch(
            SERVICE_IMPORTS_V1BETA1, namespace=NAMESPACE, resource_version=resource_version
        ):
            if event.type in ("ADDED", "MODIFIED"):
                name = event.object["metadata"]["name"]
                if name not in self.seen:
                    self.seen[name] = time.perf_counter()
                    self.changed.set()

    async def wait_for(self, names: set[str], within: float) -> float:
        deadline = time.perf_counter() + within
        while not names <= set(self.seen):
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                missing = len(names - set(self.seen))
                raise TimeoutError(f"{missing} ServiceImports missing after {within}s")
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                continue
        return max(self.seen[n] for n in names)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return p50, p99


async def latency(services: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        clusterset = LocalClusterSet(Path(tmp), cluster_names=("bench-east", "bench-west"))
        await clusterset.start()
        east, west = clusterset.clusters["bench-east"].client, clusterset.clusters["bench-west"].client
        watch = ImportWatch(east)
        await watch.start()
        try:
            samples = []
            for i in range(services):
                name = f"lat-{i}"
                start = time.perf_counter()
                await export_service(west, name)
                seen = await watch.wait_for({name}, 20)
                samples.append(seen - start)
            floor = []
            for i in range(min(services, 50)):
                name = f"floor-{i}"
                start = time.perf_counter()
                await east.create(SERVICE_IMPORTS_V1BETA1, _direct_import(name), namespace=NAMESPACE)
                seen = await watch.wait_for({name}, 20)
                floor.append(seen - start)
        finally:
            await watch.stop()
            await clusterset.stop()
    p50, p99 = _percentiles(samples)
    floor_p50, floor_p99 = _percentiles(floor)
    return {
        "latency_services": services,
        "latency_p50_ms": p50 * 1000,
        "latency_p99_ms": p99 * 1000,
        "floor_p50_ms": floor_p50 * 1000,
        "floor_p99_ms": floor_p99 * 1000,
        "latency_p50_ratio": p50 / floor_p50,
    }


def _direct_import(name: str) -> dict[str, Any]:
    return {
        "apiVersion": SERVICE_IMPORTS_V1BETA1.api_version,
        "kind": "ServiceImport",
        "metadata": {"name": name},
        "spec": {"type": "ClusterSetIP", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }


def _direct_slice(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": f"antrea-mc-{name}-bench", "labels": {"kubernetes.io/service-name": f"antrea-mc-{name}"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.10.0.1"]}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }


async def burst(count: int, importers: int) -> dict[str, float]:
    names = [f"bench-importer-{i}" for i in range(importers)]
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        clusterset = LocalClusterSet(Path(tmp), cluster_names=("bench-exporter", *names))
        await clusterset.start()
        exporter = clusterset.clusters["bench-exporter"].client
        watches = [ImportWatch(clusterset.clusters[n].client) for n in names]
        for watch in watches:
            await watch.start()
        try:
            wanted = {f"burst-{i}" for i in range(count)}
            start = time.perf_counter()
            semaphore = asyncio.Semaphore(32)

            async def one(name: str) -> None:
                async with semaphore:
                    await export_service(exporter, name)

            await asyncio.gather(*(one(n) for n in sorted(wanted)))
            created = time.perf_counter() - start
            done = [await w.wait_for(wanted, 600) for w in watches]
            converge = max(done) - start

            # The floor: the same objects written straight into every importer by one client.
            floor_start = time.perf_counter()

            async def direct(client: KubeClient, name: str) -> None:
                async with semaphore:
                    local = f"antrea-mc-{name}"
                    await client.create(
                        SERVICES,
                        {**_service(local), "spec": {**_service(local)["spec"], "selector": None}},
                        namespace=NAMESPACE,
                    )
                    await client.create(ENDPOINTS, _endpoints(local), namespace=NAMESPACE)
                    await client.create(ENDPOINT_SLICES, _direct_slice(name), namespace=NAMESPACE)
                    await client.create(SERVICE_IMPORTS_V1BETA1, _direct_import(f"floor-{name}"), namespace=NAMESPACE)

            await asyncio.gather(*(direct(clusterset.clusters[n].client, f"x{i}") for n in names for i in range(count)))
            floor = time.perf_counter() - floor_start
        finally:
            for watch in watches:
                await watch.stop()
            await clusterset.stop()
    return {
        "burst_services": count,
        "burst_importers": importers,
        "burst_created_seconds": created,
        "burst_converge_seconds": converge,
        "burst_floor_seconds": floor,
        "burst_ratio": converge / floor,
    }


async def main(args: argparse.Namespace) -> dict[str, float]:
    results = await latency(args.services)
    results.update(await burst(args.burst, args.importers))
    return results


def report(r: dict[str, float]) -> str:
    return "\n".join(
        [
            f"ServiceExport created -> ServiceImport visible, {int(r['latency_services'])} Services one by one:",
            f"  mchub   p50 {r['latency_p50_ms']:7.1f} ms   p99 {r['latency_p99_ms']:7.1f} ms",
            f"  floor   p50 {r['floor_p50_ms']:7.1f} ms   p99 {r['floor_p99_ms']:7.1f} ms"
            "  (a ServiceImport written straight into the importer)",
            f"  ratio   {r['latency_p50_ratio']:.1f}x at p50",
            f"burst of {int(r['burst_services'])} Services from one exporter to {int(r['burst_importers'])} importers:",
            f"  mchub   {r['burst_converge_seconds']:7.1f} s until every importer holds every ServiceImport "
            f"(exports created in {r['burst_created_seconds']:.1f} s)",
            f"  floor   {r['burst_floor_seconds']:7.1f} s to write the same objects straight into the importers",
            f"  ratio   {r['burst_ratio']:.2f}x",
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=200)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--importers", type=int, default=10)
    parser.add_argument("--json", type=Path)
    cli = parser.parse_args()
    figures = asyncio.run(main(cli))
    print(report(figures))
    print(json.dumps(figures, sort_keys=True))
    if cli.json:
        cli.json.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")

"""Propagation of exported Services to importing members, next to floors measured in the same run.

In one process (hub, sandbox API servers and members together, ``mchub_cli.localset``):
- latency from a Service exported in west (its Service, Endpoints and ServiceExport created one
  after another, the clock started before the first) to the ServiceImport visible in east,
  p50/p99 over N Services one after another, next to two floors: a ServiceImport written
  straight into east's API server and seen by the same watch; and, with the members stopped,
  the writes the way cannot do without, one after another (the user's Service, Endpoints and
  ServiceExport, then the importer's Service and ServiceImport: the path floor);
- a burst: M Services exported at once by one cluster, until every one of K importers holds
  all M ServiceImports, next to the floor: with mchub stopped, the same API writes without it —
  the user's M Services, Endpoints and ServiceExports into the exporter, and what a member
  writes per imported Service (Service, Endpoints, EndpointSlice, ServiceImport and its status;
  the very objects, built by the member's own functions from the hub's imports of the run,
  renamed: ``bench.floor_objects``) straight into every cluster that imports it (the K importers
  and the exporter, which imports its own export as MCS says), with the member's concurrency
  (its import workers per cluster);
  and the API requests each importer's member made per imported Service, read from its own
  counter (rest_client_requests_total).

The latency is traced hop by hop (mcapi.trace: the exporter's informer event, its Export stream,
the hub's admission, store commit and fsync, its WatchImports stream, the importer's receipt,
apply and writes): the median and p99 of every span between two hops are printed beside the end
to end figure, over every Service whose hops were all marked.

As deployed, on sandbox API servers (``--deployed-latency N``, default 500; 0 skips it): the same
latency with each part a process of its own (two ``mchub sandbox`` API servers, ``mchub hub``,
two ``mchub member``), traced into files as on the real clusters; N Services back to back as
above, then N more each exported only once every member had made no API request for 0.1 s (the
work the Service before brought, ended), then the path floor on the same API servers.

On real kube-apiservers (v1.28 with kube-controller-manager, from ../shared/envtest, or
KUBEBUILDER_ASSETS; skipped when they cannot be had): one member exports M Services, R
importers; hub and members run as their own processes, as deployed (`mchub hub`, `mchub member`
with its default flags), and the requests are read from each member's /metrics. Before the
burst, N Services (``--real-latency``) are exported one by one, as in one process, and timed from
their creation to the ServiceImport seen by a watch of one importer's API server; the hub and
members trace into files (MCHUB_TRACE_FILE) read after they stopped. One importer's
member is then restarted with nothing changed, and its writes are counted (target: 0). The
floor, with mchub stopped, writes the same objects as the in-process one, from one process per
cluster with the member's concurrency and QPS limit.

Writes the figures as JSON and a PNG per burst of ServiceImports held over time per importer.

The burst runs three times (``--burst-runs``): one run's ratio moves with the machine's load by
more than a tenth, so the run with the median ratio is reported, beside every run's ratio. So
does the latency (``--latency-runs``), each run on a ClusterSet of its own: the run with the
median p50 is reported, beside every run's p50 and p99.

Usage: python bench/propagation.py [--services 500] [--latency-runs 3] [--burst 1000] [--importers 10] [--burst-runs 3]
       [--deployed-latency 500] [--real-burst 1000] [--real-importers 3] [--real-latency 100] [--no-real]
       [--no-local] [--no-burst]
       [--json FILE] [--plots DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web_app
from prometheus_client.parser import text_string_to_metric_families

# The repository's root, so that bench.floor_objects imports however this file is run.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.floor_objects import ImportTemplates, fetch_templates, imported_service, write_imported
from hub.auth.tokens import TokenStore
from kube.client import KubeClient, connect
from kube.errors import AlreadyExists, NotFound
from kube.metrics import WRITE_VERBS
from kube.resources import CRDS, ENDPOINT_SLICES, ENDPOINTS, NAMESPACES, SECRETS, SERVICES
from mcapi import names, trace
from mcapi.resources import CLUSTER_SETS, SERVICE_EXPORTS, SERVICE_IMPORTS_V1BETA1
from mchub_cli.localset import LocalClusterSet
from member.app import MemberApp
from member.config import DEFAULT_KUBE_API_BURST, DEFAULT_KUBE_API_QPS, MemberOptions

ROOT = Path(__file__).resolve().parent.parent
CRD_DIR = ROOT / "deploy" / "crds"
RESULTS = ROOT / "bench" / "results"
NAMESPACE = "default"
REAL_NAMESPACE = "bench"
FLOOR_NAMESPACE = "bench-floor"
LATENCY_NAMESPACE = "bench-latency"
SETTLED_NAMESPACE = "bench-latency-settled"
EXPORT_CONCURRENCY = 32  # how fast the user creates the Services to export
IMPORT_WORKERS = MemberOptions().import_workers

Counts = dict[tuple[str, str, str], float]


# ---- workload -----------------------------------------------------------------------------


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


async def export_service(client: KubeClient, name: str, namespace: str = NAMESPACE) -> float:
    """Create the Service, its Endpoints and its ServiceExport; when the ServiceExport's create was sent."""
    await client.create(SERVICES, _service(name), namespace=namespace)
    with contextlib.suppress(AlreadyExists):  # a real cluster's endpoints controller may be first
        await client.create(ENDPOINTS, _endpoints(name), namespace=namespace)
    exporting = time.perf_counter()
    await client.create(SERVICE_EXPORTS, _export(name), namespace=namespace)
    return exporting


async def export_all(client: KubeClient, wanted: Iterable[str], namespace: str = NAMESPACE) -> None:
    semaphore = asyncio.Semaphore(EXPORT_CONCURRENCY)

    async def one(name: str) -> None:
        async with semaphore:
            await export_service(client, name, namespace)

    await asyncio.gather(*(one(n) for n in sorted(wanted)))


def _direct_import(name: str) -> dict[str, Any]:
    return {
        "apiVersion": SERVICE_IMPORTS_V1BETA1.api_version,
        "kind": "ServiceImport",
        "metadata": {"name": name},
        "spec": {"type": "ClusterSetIP", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }


# ---- watching the importers ---------------------------------------------------------------


class ImportWatch:
    """Records when each ServiceImport name first appears in one cluster (its own client)."""

    def __init__(self, client: KubeClient, namespace: str = NAMESPACE) -> None:
        self.client = client
        self.namespace = namespace
        self.seen: dict[str, float] = {}
        self.changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listed = await self.client.list(SERVICE_IMPORTS_V1BETA1, namespace=self.namespace)
        for item in listed.items:
            self.seen.setdefault(item["metadata"]["name"], time.perf_counter())
        self._task = asyncio.create_task(self._run(listed.resource_version))

    async def _run(self, resource_version: str) -> None:
        while True:
            async for event in self.client.watch(
                SERVICE_IMPORTS_V1BETA1, namespace=self.namespace, resource_version=resource_version
            ):
                resource_version = event.object["metadata"].get("resourceVersion", resource_version)
                if event.type in ("ADDED", "MODIFIED"):
                    name = event.object["metadata"]["name"]
                    if name not in self.seen:
                        self.seen[name] = time.perf_counter()
                        self.changed.set()

    async def wait_for(self, wanted: set[str], within: float) -> float:
        deadline = time.perf_counter() + within
        while not wanted <= set(self.seen):
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                missing = len(wanted - set(self.seen))
                raise TimeoutError(f"{missing} ServiceImports missing after {within}s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)
        return max(self.seen[n] for n in wanted)

    def held(self, wanted: set[str], start: float) -> list[tuple[float, int]]:
        """(seconds since start, ServiceImports held) at every arrival."""
        times = sorted(self.seen[n] - start for n in wanted if n in self.seen)
        return [(0.0, 0)] + [(t, i + 1) for i, t in enumerate(times)]

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.client.close()


async def wait_for_slices(client: KubeClient, namespace: str, count: int, within: float) -> None:
    """Until ``count`` imported EndpointSlices are there (the Endpoints imports settled too)."""
    deadline = time.perf_counter() + within
    selector = names.LABEL_MCS_SERVICE_NAME
    while True:
        listed = await client.list(ENDPOINT_SLICES, namespace, label_selector=selector)
        if len(listed.items) >= count:
            return
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{len(listed.items)} of {count} EndpointSlices after {within}s")
        await asyncio.sleep(0.5)


# ---- request accounting -------------------------------------------------------------------


def grown(before: Counts, after: Counts) -> Counts:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


def summarize(delta: Counts, imported: int) -> dict[str, float]:
    """Requests per imported Service, all and by kind (watches are connections, not counted)."""
    requests = {k: v for k, v in delta.items() if k[0] != "watch"}
    total = sum(requests.values())
    writes = sum(v for k, v in requests.items() if k[0] in WRITE_VERBS)
    failed = sum(v for k, v in requests.items() if not k[2].isdigit() or int(k[2]) >= 400)
    reads = sum(v for k, v in requests.items() if k[0] in ("get", "list"))
    return {
        "requests_per_service": total / imported,
        "writes_per_service": writes / imported,
        "reads_per_service": reads / imported,
        "failed_requests": failed,
    }


def by_verb_resource(delta: Counts) -> dict[str, float]:
    out: dict[str, float] = {}
    for (verb, resource, code), value in sorted(delta.items()):
        if verb != "watch":
            key = f"{verb} {resource or '(discovery)'} {code}"
            out[key] = out.get(key, 0.0) + value
    return out


async def joined_and_synced(member: MemberApp, within: float = 120) -> None:
    """Until the member joined (its ClusterSet read, asynchronously) and its import watch synced."""
    deadline = time.monotonic() + within
    while member.session is None or not member.session.state.imports_synced:
        if time.monotonic() > deadline:
            raise TimeoutError("a member did not join and sync its imports")
        await asyncio.sleep(0.05)


class GcPauses:
    """The longest garbage-collection pause while it is open."""

    def __init__(self) -> None:
        self.longest_ms = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest_ms = max(self.longest_ms, (time.perf_counter() - self._started) * 1000)

    def close(self) -> None:
        gc.callbacks.remove(self._callback)


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return p50, p99


# ---- in one process -----------------------------------------------------------------------


async def latencies(services: int, runs: int, freeze: bool) -> dict[str, Any]:
    """The latency ``runs`` times, each on a ClusterSet of its own (the machine's load moves one
    run's p50 by a tenth or more): the run with the median p50, and every run's p50 and p99."""
    done = []
    for _ in range(runs):
        released()
        done.append(await latency(services, freeze))
    median = sorted(done, key=lambda run: float(run["latency_p50_ms"]))[(runs - 1) // 2]
    return {
        **median,
        "latency_runs": runs,
        "latency_p50s_ms": [r["latency_p50_ms"] for r in done],
        "latency_p99s_ms": [r["latency_p99_ms"] for r in done],
    }


async def latency(services: int, freeze: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        clusterset = LocalClusterSet(Path(tmp), cluster_names=("bench-east", "bench-west"))
        await clusterset.start()
        east = await connect(clusterset.clusters["bench-east"].kubeconfig)
        west = clusterset.clusters["bench-west"].client
        watch = ImportWatch(east)
        await watch.start()
        for member in (clusterset.clusters[n].member for n in ("bench-east", "bench-west")):
            assert member is not None
            await joined_and_synced(member)
        pauses = GcPauses()
        if freeze:
            # Two API servers, a hub and two members share this heap; a full collection of it
            # stalls every one of them at once (50-80 ms here), which no deployed member sees.
            gc.collect()
            gc.freeze()
        traced = trace.start()
        try:
            runs = await one_by_one(west, watch, services)
            trace.stop()
            floor = []
            for i in range(min(services, 50)):
                name = f"floor-{i}"
                start = time.perf_counter()
                await east.create(SERVICE_IMPORTS_V1BETA1, _direct_import(name), namespace=NAMESPACE)
                seen = await watch.wait_for({name}, 20)
                floor.append(seen - start)
            for cluster in ("bench-east", "bench-west"):
                await clusterset.stop_member(cluster)
            path_floor = [await path_floor_run(west, east, watch, f"path-floor-{i}") for i in range(min(services, 100))]
        finally:
            trace.stop()
            await watch.stop()
            await clusterset.stop()
        if freeze:
            gc.unfreeze()
        pauses.close()
    p50, p99 = _percentiles([r.seen - r.start for r in runs])
    floor_p50, floor_p99 = _percentiles(floor)
    path_floor_p50, path_floor_p99 = _percentiles(path_floor)
    return {
        "latency_services": services,
        "latency_heap_frozen": freeze,
        "latency_longest_gc_pause_ms": pauses.longest_ms,
        "latency_p50_ms": p50 * 1000,
        "latency_p99_ms": p99 * 1000,
        "floor_p50_ms": floor_p50 * 1000,
        "floor_p99_ms": floor_p99 * 1000,
        "latency_p50_ratio": p50 / floor_p50,
        "latency_p99_ratio": p99 / floor_p99,
        "path_floor_p50_ms": path_floor_p50 * 1000,
        "path_floor_p99_ms": path_floor_p99 * 1000,
        "latency_p50_path_ratio": p50 / path_floor_p50,
        **breakdown("latency", traced, runs, "bench-west", "bench-east"),
    }


async def path_floor_run(exporter: KubeClient, importer: KubeClient, watch: ImportWatch, name: str) -> float:
    """With the members stopped, the writes an export's way cannot do without, one after another:
    the user's Service, Endpoints and ServiceExport, then the importer's Service and ServiceImport,
    until the watch sees the ServiceImport."""
    start = time.perf_counter()
    await export_service(exporter, name, watch.namespace)
    await importer.create(SERVICES, _service(f"{names.IMPORTED_PREFIX}{name}"), namespace=watch.namespace)
    await importer.create(SERVICE_IMPORTS_V1BETA1, _direct_import(name), namespace=watch.namespace)
    return await watch.wait_for({name}, 20) - start


@dataclass(frozen=True)
class Run:
    """One Service exported alone: when its objects were first created, when its ServiceExport's
    create was sent, and when the importer's watch saw its ServiceImport (perf_counter)."""

    namespace: str
    name: str
    start: float
    exporting: float
    seen: float


async def one_by_one(
    exporter: KubeClient,
    watch: ImportWatch,
    count: int,
    within: float = 20,
    settled: Callable[[], Awaitable[None]] | None = None,
) -> list[Run]:
    """``count`` Services exported one after another, each once the one before was seen imported
    (and, with ``settled``, once that says the work the one before brought has ended)."""
    runs = []
    for i in range(count):
        if settled is not None:
            await settled()
        name = f"lat-{i}"
        start = time.perf_counter()
        exporting = await export_service(exporter, name, watch.namespace)
        seen = await watch.wait_for({name}, within)
        runs.append(Run(watch.namespace, name, start, exporting, seen))
    return runs


# The span before the first hop: the user's Service and Endpoints created, before the ServiceExport.
USER_OBJECTS = "user_objects"


def breakdown(prefix: str, traced: trace.Trace, runs: list[Run], exporter: str, importer: str) -> dict[str, Any]:
    """Median and p99 of every span of the way (ms), over the Services whose every hop was marked."""
    paths = []
    for run in runs:
        path = traced.path(run.namespace, run.name, exporter, importer)
        if len(path) == len(trace.HOPS):
            paths.append({USER_OBJECTS: run.exporting - run.start, **trace.spans(path, run.exporting, run.seen)})
    if not paths:
        return {f"{prefix}_breakdown_traced": 0}
    spans: dict[str, dict[str, float]] = {}
    for span in paths[0]:
        p50, p99 = _percentiles([p[span] for p in paths])
        spans[span] = {"p50_ms": p50 * 1000, "p99_ms": p99 * 1000}
    return {
        f"{prefix}_breakdown_traced": len(paths),
        f"{prefix}_breakdown_untraced": len(runs) - len(paths),
        f"{prefix}_breakdown": spans,
        f"{prefix}_breakdown_p50_sum_ms": sum(s["p50_ms"] for s in spans.values()),
    }


Held = dict[str, list[tuple[float, int]]]


async def burst(count: int, importers: int) -> tuple[dict[str, Any], Held]:
    """One burst's figures, and the ServiceImports each importer held over time (for the plot)."""
    cluster_names = [f"bench-importer-{i}" for i in range(importers)]
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        clusterset = LocalClusterSet(Path(tmp), cluster_names=("bench-exporter", *cluster_names))
        await clusterset.start()
        members = {n: clusterset.clusters[n].member for n in cluster_names}
        exporter = clusterset.clusters["bench-exporter"].client
        # The bench watches with clients of its own: the members' counters count only the members.
        watches = {n: ImportWatch(await connect(clusterset.clusters[n].kubeconfig)) for n in cluster_names}
        for watch in watches.values():
            await watch.start()
        try:
            for member in members.values():
                assert member is not None
                await joined_and_synced(member)
            before = {n: clusterset.clusters[n].client.metrics.counts() for n in cluster_names}
            reports_before = status_reports(clusterset.hub)
            wanted = {f"burst-{i}" for i in range(count)}
            cpu_start, start = time.process_time(), time.perf_counter()
            await export_all(exporter, wanted)
            created = time.perf_counter() - start
            done = [await watches[n].wait_for(wanted, 900) for n in cluster_names]
            converge = max(done) - start
            converge_cpu = time.process_time() - cpu_start
            for n in cluster_names:
                await wait_for_slices(watches[n].client, NAMESPACE, count, 300)
                member = members[n]
                assert member is not None and member.importer is not None
                await member.importer.settled()
            deltas = {n: grown(before[n], clusterset.clusters[n].client.metrics.counts()) for n in cluster_names}
            held = {n: watches[n].held(wanted, start) for n in cluster_names}
            every = [c.member.session for c in clusterset.clusters.values() if c.member and c.member.session]
            await asyncio.gather(*(session.wait_reports_sent() for session in every))
            reports = grown(reports_before, status_reports(clusterset.hub))

            # The floor, with mchub stopped: the user's objects into the exporter as above, and the
            # objects mchub writes straight into every cluster that imports them (the exporter imports
            # its own Services too), each with the member's concurrency.
            hub = clusterset.hub
            assert hub is not None and hub.ca_cert is not None
            templates = await fetch_templates(hub.rest_url, str(hub.ca_cert), hub.admin_token, NAMESPACE, "burst-0")
            for name in clusterset.clusters:
                await clusterset.stop_member(name)
            assert clusterset.hub is not None
            await clusterset.hub.stop()
            clusterset.hub = None
            importing = {n: watches[n].client for n in cluster_names} | {"bench-exporter": exporter}
            objects = {
                cluster: [imported_service(templates, f"x{i}", NAMESPACE, cluster) for i in range(count)]
                for cluster in importing
            }
            floor_cpu_start, floor_start = time.process_time(), time.perf_counter()
            await asyncio.gather(
                export_all(exporter, {f"user-{i}" for i in range(count)}),
                *(write_imported(client, objects[c], IMPORT_WORKERS) for c, client in importing.items()),
            )
            floor = time.perf_counter() - floor_start
            floor_cpu = time.process_time() - floor_cpu_start
        finally:
            for watch in watches.values():
                await watch.stop()
            await clusterset.stop()
    total: Counts = {}
    for delta in deltas.values():
        for key, value in delta.items():
            total[key] = total.get(key, 0.0) + value
    per = summarize(total, count * importers)
    return {
        "burst_services": count,
        "burst_importers": importers,
        "burst_import_workers": IMPORT_WORKERS,
        "burst_created_seconds": created,
        "burst_converge_seconds": converge,
        "burst_floor_seconds": floor,
        "burst_ratio": converge / floor,
        # Everything runs in this process: its CPU time is the work done, whatever else the machine runs.
        "burst_converge_cpu_seconds": converge_cpu,
        "burst_floor_cpu_seconds": floor_cpu,
        "burst_cpu_ratio": converge_cpu / floor_cpu,
        "burst_requests_per_service": per["requests_per_service"],
        "burst_writes_per_service": per["writes_per_service"],
        "burst_reads_per_service": per["reads_per_service"],
        "burst_failed_requests": per["failed_requests"],
        "burst_requests_by_kind": by_verb_resource(total),
        # Every member (the exporter too) reports each import it applied once; in batches.
        "burst_status_reports": reports.get(("reports", "", ""), 0.0),
        "burst_status_report_calls": reports.get(("calls", "", ""), 0.0),
    }, held


def released() -> None:
    """Let go of what earlier runs in this process left behind, so each run starts alike.

    aiohttp caches each handler's middleware chain with the Applications it belongs to
    (``web_app._cached_build_middleware``, up to 1,024 entries), and with them every stopped
    API server and hub of an earlier run: a second burst used to start on a heap holding the
    first one's clusters, and the garbage collector scanned them all again and again.
    A deployed hub or member has its one Application for its whole life.
    """
    web_app._cached_build_middleware.cache_clear()
    gc.collect()


async def bursts(count: int, importers: int, runs: int, plots: Path | None) -> dict[str, Any]:
    """The burst ``runs`` times (the machine's noise shows in one run's ratio): the figures of the
    run with the median ratio, and every run's ratio."""
    done: list[tuple[dict[str, Any], Held]] = []
    for _ in range(runs):
        released()
        done.append(await burst(count, importers))
    median, held = sorted(done, key=lambda run: float(run[0]["burst_ratio"]))[(runs - 1) // 2]
    if plots is not None:
        plot_held(held, plots / "propagation_burst.png", f"{count} Services to {importers} importers, one process")
    return {
        **median,
        "burst_runs": runs,
        "burst_ratios": [r["burst_ratio"] for r, _ in done],
        "burst_cpu_ratios": [r["burst_cpu_ratio"] for r, _ in done],
    }


def status_reports(hub: Any) -> Counts:
    """Import status reports the hub took, and the calls they came in."""
    registry = hub.metrics.registry
    calls = sum(
        registry.get_sample_value("mchub_import_status_report_calls_total", {"method": method}) or 0.0
        for method in ("ReportImportStatus", "ReportImportStatuses")
    )
    taken = registry.get_sample_value("mchub_import_status_reports_total") or 0.0
    return {("calls", "", ""): calls, ("reports", "", ""): taken}


# ---- real kube-apiservers -----------------------------------------------------------------


def envtest_scripts() -> Path | None:
    candidates = [os.environ.get("MCHUB_ENVTEST", ""), str(ROOT.parent / "shared" / "envtest")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "up").is_file():
            return Path(candidate)
    return None


def real_unavailable() -> str | None:
    if envtest_scripts() is None:
        return "no envtest scripts (../shared/envtest or MCHUB_ENVTEST)"
    if not os.environ.get("KUBEBUILDER_ASSETS") and shutil.which("etcd") is None and not Path("/usr/bin/etcd").exists():
        return "no etcd (apt-get install etcd-server) and no KUBEBUILDER_ASSETS"
    return None


@dataclass
class Envtest:
    """Real control planes started with ``up DIR NAME...``, stopped with ``down DIR``."""

    names: tuple[str, ...]
    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="mchub-bench-envtest-")) / "ct")
    kubeconfigs: dict[str, Path] = field(default_factory=dict)

    def up(self) -> None:
        scripts = envtest_scripts()
        assert scripts is not None
        done = subprocess.run(
            ["bash", str(scripts / "up"), str(self.directory), *self.names],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"envtest up exited {done.returncode}: {done.stderr.strip()[-1500:]}")
        for line in done.stdout.splitlines():
            name, _, kubeconfig = line.split()
            self.kubeconfigs[name] = Path(kubeconfig)

    def down(self) -> None:
        scripts = envtest_scripts()
        if scripts is not None:
            down = ["bash", str(scripts / "down"), str(self.directory)]
            subprocess.run(down, check=False, capture_output=True, timeout=120)
        shutil.rmtree(self.directory.parent, ignore_errors=True)


async def install_crds(client: KubeClient) -> None:
    for path in sorted(CRD_DIR.glob("*.yaml")):
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, yaml.safe_load(path.read_text()))
    deadline = time.monotonic() + 60
    while True:
        try:
            await client.list(SERVICE_IMPORTS_V1BETA1, limit=1)
            await client.list(CLUSTER_SETS, limit=1)
            return
        except NotFound:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def start_child(*args: str, ready: str, log: Path) -> tuple[asyncio.subprocess.Process, str]:
    """A child process, once it printed a line containing ``ready``; returns what it printed until
    then (that line last); its stderr goes to ``log``, and its trace to ``trace.jsonl`` beside it."""
    env = {**os.environ, trace.FILE_ENV: str(log.parent / "trace.jsonl")}
    with log.open("ab") as errors:
        process = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=errors, cwd=ROOT, env=env
        )
    assert process.stdout is not None
    printed = ""
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), 120)).decode()
        printed += line
        if not line:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(args[3:6])} exited before it was ready: {tail}")
        if ready in line:
            # Keep its stdout drained, or a chatty child would block on a full pipe.
            asyncio.get_running_loop().create_task(_drain(process))
            return process, printed.strip()


async def _drain(process: asyncio.subprocess.Process) -> None:
    assert process.stdout is not None
    while await process.stdout.readline():
        pass


async def stop_child(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()


@dataclass(frozen=True)
class Limit:
    """A member's client limit (`mchub member --kube-api-qps/--kube-api-burst`)."""

    qps: float = DEFAULT_KUBE_API_QPS
    burst: int = DEFAULT_KUBE_API_BURST


@dataclass
class MemberProcess:
    """`mchub member` of one real cluster, with its health/metrics address."""

    cluster: str
    kubeconfig: Path
    limit: Limit
    port: int = field(default_factory=free_port)
    process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process, _ = await start_child(
            sys.executable, "-m", "mchub_cli.main", "--log-level", "WARNING", "member",
            "--kubeconfig", str(self.kubeconfig), "--health-address", f"127.0.0.1:{self.port}",
            "--kube-api-qps", str(self.limit.qps), "--kube-api-burst", str(self.limit.burst),
            ready="member: health on", log=self.kubeconfig.parent / "member.log",
        )  # fmt: skip

    async def stop(self) -> None:
        if self.process is not None:
            await stop_child(self.process)
            self.process = None

    async def _get(self, path: str) -> tuple[int, str]:
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{self.port}{path}") as response:
            return response.status, await response.text()

    async def wait_ready(self, within: float = 120) -> None:
        deadline = time.monotonic() + within
        while (await self._get("/readyz"))[0] != 200:
            if time.monotonic() > deadline:
                raise TimeoutError(f"member {self.cluster} not connected after {within}s")
            await asyncio.sleep(0.2)

    async def metrics(self) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
        """Every sample of its /metrics: name -> labels -> value."""
        _, text = await self._get("/metrics")
        out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
        return out

    async def quiet_counts(self, within: float = 60, quiet: float = 1.0) -> Counts:
        """Its request counts once they have not changed for ``quiet`` seconds."""
        deadline = time.monotonic() + within
        last = await self.counts()
        while time.monotonic() < deadline:
            await asyncio.sleep(quiet)
            now = await self.counts()
            if now == last:
                return now
            last = now
        raise TimeoutError(f"member {self.cluster} still making requests after {within}s")

    async def counts(self) -> Counts:
        samples = (await self.metrics()).get("rest_client_requests_total", {})
        out: Counts = {}
        for labels, value in samples.items():
            by = dict(labels)
            key = (by["verb"], by["resource"], by["code"])
            out[key] = out.get(key, 0.0) + value
        return out

    async def imports_reconciled(self) -> tuple[float, float]:
        """(reconciles of its import queue so far, that queue's depth)."""
        metrics = await self.metrics()
        controller = f"imports-{self.cluster}"
        done = sum(
            v
            for labels, v in metrics.get("controller_runtime_reconcile_total", {}).items()
            if ("controller", controller) in labels
        )
        depth = sum(v for labels, v in metrics.get("workqueue_depth", {}).items() if ("name", controller) in labels)
        return done, depth


async def join_real(client: KubeClient, cluster: str, token: str, ca: bytes, hub_target: str) -> None:
    import base64  # noqa: PLC0415 - only the real run needs it

    for namespace in ("kube-system", REAL_NAMESPACE):
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    secret = {
        "metadata": {"name": "member-token", "namespace": "kube-system"},
        "type": "Opaque",
        "data": {"token": base64.b64encode(token.encode()).decode(), "ca.crt": base64.b64encode(ca).decode()},
    }
    await client.create(SECRETS, secret)
    clusterset = {
        "metadata": {"name": "test-clusterset", "namespace": "kube-system"},
        "spec": {
            "clusterID": cluster,
            "namespace": names.DEFAULT_LEADER_NAMESPACE,
            "leaders": [{"clusterID": "leader", "server": f"https://{hub_target}", "secret": "member-token"}],
        },
    }
    await client.create(CLUSTER_SETS, clusterset)


@dataclass
class Deployed:
    """`mchub hub` and one `mchub member` per cluster, each a process of its own, as deployed,
    every member joined with a token of its own."""

    data: Path
    hub: asyncio.subprocess.Process | None = None
    target: str = ""
    rest_url: str = ""
    members: dict[str, MemberProcess] = field(default_factory=dict)

    async def start(self, clients: dict[str, KubeClient], kubeconfigs: dict[str, Path], limit: Limit) -> None:
        self.data.mkdir(parents=True)
        store = TokenStore(self.data / "tokens.db")
        tokens = {name: store.create(f"member-{name}", cluster_id=name) for name in kubeconfigs}
        store.close()
        self.hub, printed = await start_child(
            sys.executable, "-m", "mchub_cli.main", "--log-level", "WARNING", "hub",
            "--data-dir", str(self.data), "--grpc-address", "127.0.0.1:0", "--rest-address", "127.0.0.1:0",
            ready="REST on", log=self.data / "hub.log",
        )  # fmt: skip
        self.target = printed.split("gRPC on ", 1)[1].split()[0]
        self.rest_url = printed.split("REST on ", 1)[1].split()[0]
        ca = (self.data / "tls" / "ca.crt").read_bytes()
        for name, kubeconfig in kubeconfigs.items():
            await join_real(clients[name], name, tokens[name], ca, self.target)
            self.members[name] = MemberProcess(name, kubeconfig, limit)
        await asyncio.gather(*(m.start() for m in self.members.values()))
        await asyncio.gather(*(m.wait_ready() for m in self.members.values()))

    async def stop(self) -> None:
        """The members, then the hub (each writes its trace as it stops)."""
        for member in self.members.values():
            await member.stop()
        if self.hub is not None:
            await stop_child(self.hub)
            self.hub = None


@dataclass
class SandboxProcesses:
    """Sandbox API servers, each `mchub sandbox` in a process of its own."""

    names: tuple[str, ...]
    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="mchub-bench-sandboxes-")))
    kubeconfigs: dict[str, Path] = field(default_factory=dict)
    processes: list[asyncio.subprocess.Process] = field(default_factory=list)

    async def up(self) -> None:
        for name in self.names:
            # The member of this cluster keeps its log and trace beside the kubeconfig; the API
            # server's go one level down, so that neither overwrites the other's.
            work = self.directory / name
            (work / "api").mkdir(parents=True)
            process, printed = await start_child(
                sys.executable, "-m", "mchub_cli.main", "--log-level", "WARNING", "sandbox",
                "--name", name, "--work-dir", str(work), ready="kubeconfig:", log=work / "api" / "sandbox.log",
            )  # fmt: skip
            self.processes.append(process)
            self.kubeconfigs[name] = Path(printed.split("kubeconfig: ", 1)[1].split()[0])

    async def down(self) -> None:
        for process in self.processes:
            await stop_child(process)
        self.processes.clear()
        shutil.rmtree(self.directory, ignore_errors=True)


async def real_latency(
    clients: dict[str, KubeClient],
    kubeconfigs: dict[str, Path],
    count: int,
    namespace: str = LATENCY_NAMESPACE,
    settled: Callable[[], Awaitable[None]] | None = None,
) -> list[Run]:
    """``count`` Services exported one by one from the exporter, each seen imported by import-1
    before the next, in a Namespace of their own (the burst's counts and slices leave them out)."""
    if not count:
        return []
    for client in clients.values():
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    watch = ImportWatch(await connect(kubeconfigs["import-1"]), namespace)
    await watch.start()
    try:
        return await one_by_one(clients["exporter"], watch, count, within=60, settled=settled)
    finally:
        await watch.stop()


async def deployed_latency(count: int, floor_count: int) -> dict[str, Any]:
    """The latency as in one process, with each part in a process of its own as deployed: two
    sandbox API servers (`mchub sandbox`), the hub and the two members; then, the members
    stopped, the path floor on the same API servers."""
    sandboxes = SandboxProcesses(("exporter", "import-1"))
    deployed = Deployed(sandboxes.directory / "hub")
    clients: dict[str, KubeClient] = {}
    watch: ImportWatch | None = None
    try:
        await sandboxes.up()
        for name, kubeconfig in sandboxes.kubeconfigs.items():
            clients[name] = await connect(kubeconfig)
            await install_crds(clients[name])
        await deployed.start(clients, sandboxes.kubeconfigs, Limit())
        for member in deployed.members.values():
            await member.quiet_counts()
        runs = await real_latency(clients, sandboxes.kubeconfigs, count)
        members = list(deployed.members.values())

        async def settled() -> None:
            # What the Service before brought has ended once no member made an API request for
            # 0.1 s: the exporter's import of its own export, both members' Endpoints imports,
            # the ServiceExport's status.
            await asyncio.gather(*(m.quiet_counts(quiet=0.1) for m in members))

        alone = await real_latency(clients, sandboxes.kubeconfigs, count, SETTLED_NAMESPACE, settled)
        await deployed.stop()
        traced = trace.read(sandboxes.directory.rglob("trace.jsonl"))
        watch = ImportWatch(clients["import-1"], LATENCY_NAMESPACE)
        await watch.start()
        path_floor = [
            await path_floor_run(clients["exporter"], clients["import-1"], watch, f"path-floor-{i}")
            for i in range(floor_count)
        ]
    finally:
        if watch is not None:
            await watch.stop()
        await deployed.stop()
        for client in clients.values():
            await client.close()
        await sandboxes.down()
    floor_p50, floor_p99 = _percentiles(path_floor)
    return {
        "deployed_path_floor_p50_ms": floor_p50 * 1000,
        "deployed_path_floor_p99_ms": floor_p99 * 1000,
        **latency_figures("deployed_latency", traced, runs),
        **latency_figures("deployed_alone", traced, alone),
    }


def latency_figures(prefix: str, traced: trace.Trace, runs: list[Run]) -> dict[str, Any]:
    """p50 and p99 from the user's first object, and from the ServiceExport's create, to the
    ServiceImport seen; and hop by hop."""
    p50, p99 = _percentiles([r.seen - r.start for r in runs])
    from_export_p50, from_export_p99 = _percentiles([r.seen - r.exporting for r in runs])
    return {
        f"{prefix}_services": len(runs),
        f"{prefix}_p50_ms": p50 * 1000,
        f"{prefix}_p99_ms": p99 * 1000,
        f"{prefix}_from_export_p50_ms": from_export_p50 * 1000,
        f"{prefix}_from_export_p99_ms": from_export_p99 * 1000,
        **breakdown(prefix, traced, runs, "exporter", "import-1"),
    }


def real_traces(envtest: Envtest) -> trace.Trace:
    """The marks the hub and the members wrote as they stopped (MCHUB_TRACE_FILE)."""
    return trace.read(envtest.directory.parent.rglob("trace.jsonl"))


async def real_burst(
    count: int, importers: int, limit: Limit, plots: Path | None, latency_count: int = 0
) -> dict[str, Any]:
    importer_names = tuple(f"import-{i + 1}" for i in range(importers))
    envtest = Envtest(("exporter", *importer_names))
    envtest.up()
    deployed = Deployed(envtest.directory.parent / "hub")
    members: dict[str, MemberProcess] = {}
    clients: dict[str, KubeClient] = {}
    watches: dict[str, ImportWatch] = {}
    try:
        for name, kubeconfig in envtest.kubeconfigs.items():
            clients[name] = await connect(kubeconfig)
            await install_crds(clients[name])
        await deployed.start(clients, envtest.kubeconfigs, limit)
        members = deployed.members
        data = deployed.data
        for name in importer_names:
            watches[name] = ImportWatch(await connect(envtest.kubeconfigs[name]), REAL_NAMESPACE)
            await watches[name].start()
        # Ready means connected; the tail of joining (the ClusterSet's status, the first look at
        # the imported kinds) may still be on its way: count from when every member is quiet.
        before = {name: await members[name].quiet_counts() for name in members}
        runs = await real_latency(clients, envtest.kubeconfigs, latency_count)
        before = {name: await members[name].quiet_counts() for name in members}

        wanted = {f"svc-{i}" for i in range(count)}
        start = time.perf_counter()
        await export_all(clients["exporter"], wanted, REAL_NAMESPACE)
        created = time.perf_counter() - start
        done = [await watches[n].wait_for(wanted, 900) for n in importer_names]
        converge = max(done) - start
        per_importer = {n: done[i] - start for i, n in enumerate(importer_names)}
        for name in importer_names:
            await wait_for_slices(watches[name].client, REAL_NAMESPACE, count, 300)
        deltas = {name: grown(before[name], await members[name].counts()) for name in members}
        held = {n: watches[n].held(wanted, start) for n in importer_names}
        total: Counts = {}
        for name in importer_names:
            for key, value in deltas[name].items():
                total[key] = total.get(key, 0.0) + value
        per = summarize(total, count * importers)
        exporter = summarize(deltas["exporter"], count)

        restart = await restart_unchanged(members[importer_names[0]], expected_keys=2 * (count + latency_count))
        admin_token = (data / "admin.token").read_text().strip()
        templates = await fetch_templates(
            deployed.rest_url, str(data / "tls" / "ca.crt"), admin_token, REAL_NAMESPACE, "svc-0"
        )
        await deployed.stop()
        floor = await real_floor(envtest, clients["exporter"], templates, count, limit)
        traced = real_traces(envtest)
    finally:
        for watch in watches.values():
            await watch.stop()
        await deployed.stop()
        for client in clients.values():
            await client.close()
        envtest.down()
    if plots is not None:
        title = f"{count} Services to {importers} importers, real kube-apiservers v1.28"
        plot_held(held, plots / "propagation_real.png", title)
    return {
        "real_services": count,
        "real_importers": importers,
        "real_member_qps": limit.qps,
        "real_member_burst": limit.burst,
        "real_import_workers": IMPORT_WORKERS,
        "real_created_seconds": created,
        "real_converge_seconds": converge,
        "real_converge_by_importer": per_importer,
        "real_floor_seconds": floor,
        "real_ratio": converge / floor,
        "real_requests_per_service": per["requests_per_service"],
        "real_writes_per_service": per["writes_per_service"],
        "real_reads_per_service": per["reads_per_service"],
        "real_failed_requests": per["failed_requests"],
        "real_requests_by_kind": by_verb_resource(total),
        "real_exporter_requests_per_service": exporter["requests_per_service"],
        "real_exporter_requests_by_kind": by_verb_resource(deltas["exporter"]),
        **restart,
        **(latency_figures("real_latency", traced, runs) if runs else {}),
    }


async def restart_unchanged(member: MemberProcess, expected_keys: int) -> dict[str, Any]:
    """Restart one importer's member with nothing changed; count what it sends until every
    import was looked at once."""
    await member.stop()
    started = time.perf_counter()
    await member.start()
    await member.wait_ready()
    deadline = time.monotonic() + 300
    while True:
        done, depth = await member.imports_reconciled()
        if done >= expected_keys and depth == 0:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"restarted member reconciled {done} of {expected_keys} imports")
        await asyncio.sleep(0.2)
    settled = time.perf_counter() - started
    counts = {k: v for k, v in (await member.counts()).items() if k[0] != "watch"}
    writes = {k: v for k, v in counts.items() if k[0] in WRITE_VERBS}
    # Refused writes store nothing: the one expected is the Service CIDR probe (a dry run).
    stored = {k: v for k, v in writes.items() if k[2].isdigit() and int(k[2]) < 400}
    return {
        "restart_seconds_until_settled": settled,
        "restart_writes": sum(stored.values()),
        "restart_refused_writes": sum(writes.values()) - sum(stored.values()),
        "restart_writes_by_kind": by_verb_resource(writes),
        "restart_reads": sum(v for k, v in counts.items() if k[0] in ("get", "list")),
    }


async def real_floor(
    envtest: Envtest, exporter: KubeClient, templates: ImportTemplates, count: int, limit: Limit
) -> float:
    """With mchub stopped: the user's objects into the exporter as in the run, and the objects
    the members write straight into every cluster that imports them (the exporter too), by one
    process each (as the members are) with a member's import workers and QPS limit."""
    script = str(Path(__file__).resolve())
    with contextlib.suppress(AlreadyExists):
        await exporter.create(NAMESPACES, {"metadata": {"name": FLOOR_NAMESPACE}})
    imports = envtest.directory.parent / "floor-imports.json"
    imports.write_text(json.dumps(templates.to_json()))
    writers = []
    for cluster, kubeconfig in envtest.kubeconfigs.items():
        args = ["-P", script, "--floor-writer", str(kubeconfig), "--floor-count", str(count)]
        args += ["--floor-imports", str(imports), "--floor-cluster", cluster]
        args += ["--real-kube-api-qps", str(limit.qps), "--real-kube-api-burst", str(limit.burst)]
        process = await asyncio.create_subprocess_exec(sys.executable, *args, cwd=ROOT, stdout=asyncio.subprocess.PIPE)
        writers.append(process)
    for writer in writers:
        assert writer.stdout is not None
        await writer.stdout.readline()  # "ready": connected, its Namespace there
    start = time.perf_counter()
    for writer in writers:
        writer.send_signal(signal.SIGUSR1)
    await asyncio.gather(
        export_all(exporter, {f"user-{i}" for i in range(count)}, FLOOR_NAMESPACE),
        *(w.wait() for w in writers),
    )
    return time.perf_counter() - start


async def floor_writer(kubeconfig: Path, imports: Path, cluster: str, count: int, limit: Limit) -> None:
    templates = ImportTemplates.from_json(json.loads(imports.read_text()))
    objects = [imported_service(templates, f"floor-{i}", FLOOR_NAMESPACE, cluster) for i in range(count)]
    client = await connect(kubeconfig, qps=limit.qps, burst=limit.burst)
    go = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, go.set)
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"metadata": {"name": FLOOR_NAMESPACE}})
    print("ready", flush=True)
    await go.wait()
    await write_imported(client, objects, IMPORT_WORKERS)
    await client.close()


# ---- output -------------------------------------------------------------------------------


def plot_held(held: Held, path: Path, title: str) -> None:
    import matplotlib  # noqa: PLC0415 - a dev extra, needed only for the picture

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, axes = plt.subplots(figsize=(8, 4.5))
    for name, series in held.items():
        axes.step([t for t, _ in series], [n for _, n in series], where="post", label=name, linewidth=1)
    axes.set_xlabel("seconds since the exports were created")
    axes.set_ylabel("ServiceImports held")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    if len(held) <= 10:
        axes.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def breakdown_lines(r: dict[str, Any], prefix: str) -> list[str]:
    if not r.get(f"{prefix}_breakdown_traced"):
        return []
    lines = [
        f"  hop by hop, {int(r[f'{prefix}_breakdown_traced'])} Services with every hop marked "
        "(each span ends at the hop it is named after):"
    ]
    for span, figures in r[f"{prefix}_breakdown"].items():
        lines.append(f"    {span:<24} p50 {figures['p50_ms']:6.2f} ms   p99 {figures['p99_ms']:6.2f} ms")
    lines.append(
        f"    {'sum of the p50s':<24}     {r[f'{prefix}_breakdown_p50_sum_ms']:6.2f} ms "
        f"(end to end p50 {r[f'{prefix}_p50_ms']:.2f} ms)"
    )
    return lines


def report(r: dict[str, Any]) -> str:
    lines: list[str] = [
        f"({r['cpus']} CPUs, load average {r['load_average_at_start']:.1f} at start, "
        f"{r['load_average_at_end']:.1f} at end)"
    ]
    if "latency_p50_ms" in r:
        lines += [
            f"Service, Endpoints and ServiceExport created -> ServiceImport visible, {int(r['latency_services'])} "
            "Services one by one:",
            f"  mchub   p50 {r['latency_p50_ms']:7.1f} ms   p99 {r['latency_p99_ms']:7.1f} ms",
            f"  floor   p50 {r['floor_p50_ms']:7.1f} ms   p99 {r['floor_p99_ms']:7.1f} ms"
            "  (a ServiceImport written straight into the importer)",
            f"  ratio   {r['latency_p50_ratio']:.1f}x at p50, {r['latency_p99_ratio']:.1f}x at p99 "
            f"(heap {'frozen after set-up' if r['latency_heap_frozen'] else 'not frozen'}; "
            f"longest GC pause {r['latency_longest_gc_pause_ms']:.0f} ms)",
            f"  path floor p50 {r['path_floor_p50_ms']:5.1f} ms   p99 {r['path_floor_p99_ms']:7.1f} ms  "
            "(members stopped: the user's three writes, then the importer's Service and ServiceImport; "
            f"mchub {r['latency_p50_path_ratio']:.1f}x at p50)",
        ]
        if r.get("latency_runs", 1) > 1:
            lines.append(
                f"  the median of {int(r['latency_runs'])} runs by p50; every run's p50/p99: "
                + ", ".join(
                    f"{a:.1f}/{b:.1f} ms" for a, b in zip(r["latency_p50s_ms"], r["latency_p99s_ms"], strict=True)
                )
            )
        lines += breakdown_lines(r, "latency")
    if "burst_converge_seconds" in r:
        lines += [
            f"burst of {int(r['burst_services'])} Services from one exporter to {int(r['burst_importers'])} importers"
            " (one process):",
            f"  mchub   {r['burst_converge_seconds']:7.1f} s until every importer holds every ServiceImport "
            f"(exports created in {r['burst_created_seconds']:.1f} s)",
            f"  floor   {r['burst_floor_seconds']:7.1f} s for the same API writes with mchub stopped "
            f"(the exports, and the imported objects straight into every importing cluster, "
            f"{int(r['burst_import_workers'])} at a time each)",
            f"  ratio   {r['burst_ratio']:.2f}x"
            + (
                f" (the median of {int(r['burst_runs'])} runs: "
                + ", ".join(f"{x:.2f}x" for x in r["burst_ratios"])
                + "; CPU "
                + ", ".join(f"{x:.2f}x" for x in r["burst_cpu_ratios"])
                + ")"
                if r.get("burst_runs", 1) > 1
                else ""
            ),
            f"  CPU     {r['burst_converge_cpu_seconds']:7.1f} s of this process's CPU time, floor "
            f"{r['burst_floor_cpu_seconds']:.1f} s: {r['burst_cpu_ratio']:.2f}x (the work done, whatever else runs)",
            f"  requests per imported Service {r['burst_requests_per_service']:.2f} "
            f"(writes {r['burst_writes_per_service']:.2f}, reads {r['burst_reads_per_service']:.3f}, "
            f"failed {int(r['burst_failed_requests'])})",
            f"  import status reports to the hub {int(r['burst_status_reports'])} "
            f"in {int(r['burst_status_report_calls'])} calls",
        ]
    if "deployed_latency_p50_ms" in r:
        lines.append(
            "as deployed, on sandbox API servers (each API server, the hub and each member a process): "
            "Service, Endpoints and ServiceExport created -> ServiceImport visible, Services one by one"
        )
        for prefix, how in (
            ("deployed_latency", "each once the one before was seen imported"),
            ("deployed_alone", "each once every member had been idle for 0.1 s"),
        ):
            lines += [
                f" {int(r[f'{prefix}_services'])} Services, {how}:",
                f"  mchub   p50 {r[f'{prefix}_p50_ms']:7.1f} ms   p99 {r[f'{prefix}_p99_ms']:7.1f} ms;"
                f" from the ServiceExport's create p50 {r[f'{prefix}_from_export_p50_ms']:.1f} ms,"
                f" p99 {r[f'{prefix}_from_export_p99_ms']:.1f} ms",
                *breakdown_lines(r, prefix),
            ]
        lines.append(
            f"  path floor p50 {r['deployed_path_floor_p50_ms']:5.1f} ms   p99 {r['deployed_path_floor_p99_ms']:.1f}"
            " ms (members stopped: the user's three writes, then the importer's two)"
        )
    if "real_latency_p50_ms" in r:
        lines += [
            f"real kube-apiservers v1.28, members and hub as processes: Service, Endpoints and ServiceExport "
            f"created -> ServiceImport seen by a watch, {int(r['real_latency_services'])} Services one by one:",
            f"  mchub   p50 {r['real_latency_p50_ms']:7.1f} ms   p99 {r['real_latency_p99_ms']:7.1f} ms",
            *breakdown_lines(r, "real_latency"),
        ]
    if "real_converge_seconds" in r:
        by = ", ".join(f"{n} {s:.1f} s" for n, s in r["real_converge_by_importer"].items())
        lines += [
            f"real kube-apiservers v1.28: {int(r['real_services'])} Services from one member to "
            f"{int(r['real_importers'])} importers (members as processes, "
            f"QPS {r['real_member_qps']:g}/burst {r['real_member_burst']}, "
            f"{int(r['real_import_workers'])} import workers):",
            f"  mchub   {r['real_converge_seconds']:7.1f} s until every importer holds every ServiceImport ({by}; "
            f"exports created in {r['real_created_seconds']:.1f} s)",
            f"  floor   {r['real_floor_seconds']:7.1f} s for the same API writes with mchub stopped "
            "(one process per cluster, same workers and QPS limit)",
            f"  ratio   {r['real_ratio']:.2f}x",
            f"  requests per imported Service {r['real_requests_per_service']:.2f} "
            f"(writes {r['real_writes_per_service']:.2f}, reads {r['real_reads_per_service']:.3f}, "
            f"failed {int(r['real_failed_requests'])}); exporter: {r['real_exporter_requests_per_service']:.2f} "
            "per exported Service",
            f"  restart of an importer with nothing changed: {int(r['restart_writes'])} writes "
            f"({int(r['restart_refused_writes'])} refused: the Service CIDR dry-run probe), "
            f"{int(r['restart_reads'])} reads, settled in {r['restart_seconds_until_settled']:.1f} s",
        ]
    elif "real_skipped" in r:
        lines.append(f"real kube-apiservers: skipped ({r['real_skipped']})")
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    # Other work on the machine shows in every figure: say how busy it was.
    results: dict[str, Any] = {"load_average_at_start": os.getloadavg()[0], "cpus": os.cpu_count()}
    if not args.no_local:
        results.update(await latencies(args.services, args.latency_runs, freeze=not args.no_gc_freeze))
        if not args.no_burst:
            results.update(await bursts(args.burst, args.importers, args.burst_runs, args.plots))
    if args.deployed_latency:
        results.update(await deployed_latency(args.deployed_latency, min(args.deployed_latency, 100)))
    if not args.no_real:
        reason = real_unavailable()
        if reason is None:
            limit = Limit(args.real_kube_api_qps, args.real_kube_api_burst)
            burst = real_burst(args.real_burst, args.real_importers, limit, args.plots, args.real_latency)
            results.update(await burst)
        else:
            results["real_skipped"] = reason
    results["load_average_at_end"] = os.getloadavg()[0]
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=500)
    parser.add_argument(
        "--latency-runs", type=int, default=3, help="how many times the latency runs (the median run is reported)"
    )
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--importers", type=int, default=10)
    parser.add_argument(
        "--burst-runs", type=int, default=3, help="how many times the burst runs (the median run is reported)"
    )
    parser.add_argument("--real-burst", type=int, default=1000)
    parser.add_argument("--real-importers", type=int, default=3)
    parser.add_argument(
        "--real-latency", type=int, default=100, help="Services exported one by one on the real clusters first"
    )
    parser.add_argument(
        "--real-kube-api-qps", type=float, default=DEFAULT_KUBE_API_QPS, help="the members' QPS limit (their default)"
    )
    parser.add_argument(
        "--real-kube-api-burst", type=int, default=DEFAULT_KUBE_API_BURST, help="the members' burst (their default)"
    )
    parser.add_argument(
        "--deployed-latency",
        type=int,
        default=500,
        help="Services exported one by one with API servers, hub and members each a process (0: skip)",
    )
    parser.add_argument("--no-real", action="store_true", help="skip the run on real kube-apiservers")
    parser.add_argument("--no-local", action="store_true", help="skip the runs in one process")
    parser.add_argument("--no-burst", action="store_true", help="in one process, measure the latency only")
    parser.add_argument(
        "--no-gc-freeze", action="store_true", help="latency: leave the shared heap to full collections"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plots", type=Path, default=RESULTS, help="where the PNGs go (default bench/results)")
    parser.add_argument("--floor-writer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--floor-count", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--floor-imports", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--floor-cluster", default="", help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.floor_writer is not None:
        asyncio.run(
            floor_writer(
                cli.floor_writer,
                cli.floor_imports,
                cli.floor_cluster,
                cli.floor_count,
                Limit(cli.real_kube_api_qps, cli.real_kube_api_burst),
            )
        )
        sys.exit(0)
    figures = asyncio.run(main(cli))
    print(report(figures))
    print(json.dumps(figures, sort_keys=True))
    if cli.json:
        cli.json.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")

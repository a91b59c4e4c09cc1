"""Hub scale: many watching members, import deliveries, propagation, one and two watch-serving replicas.

10 exporting members export N Services (a Service and an Endpoints export each: 2N exports) on
one Export stream each, 64 a request as members send what they have (`--export-batch`; 1: one a
request); the hub merges them into 2N imports; M watching members (lightweight
gRPC clients, TLS and a bearer token each, in child processes of 250 at nice 10) receive every
one of them: 2N x M import deliveries (the defaults, 5,000 Services and 100 members: 1,000,000;
`--members 1000 --services 5000`: 10,000,000). Watchers ask for batched WatchImports, as members
do (`--watch single`: one change per message, the hub's earlier comparison). Timed from the first
export until every watcher holds every import.

Prints and writes (JSON, and a PNG of deliveries over time):
- one replica: seconds to converge, deliveries/s, the hub's CPU and RSS, RSS per watching member
  (after they are synced, before the exports) and per 10,000 exports; counts that do not vary
  with load: messages and bytes per delivery (at the watchers), store transactions, SQL
  statements and fsyncs per export (the hub's /metrics);
- the floor, measured in the same run: the hub's messages for the same imports, batched as the
  hub batched them in this run (its changes per message), fanned out to as many clients by a raw
  grpc.aio server (bench/hub_fanout.py's), and the ratio;
- two replicas serving watches: the SQLite leader plus a follower process reading its change
  log (`mchub hub --follow`), watchers split between them, exports to the leader; the ratio to
  one replica;
- propagation: after the burst, `--probes` Services exported one at a time by one member, each
  timed from its export to the first and to the last watcher holding its ServiceImport (p50 and
  p99), through the hub and through the raw floor (the same messages broadcast);
- with --memory-exports N: the hub's RSS as N exports arrive (no watchers), and per 10,000.

Usage: python bench/hub_scale.py [--members 100] [--services 5000] [--watch batched|single]
       [--exporters 10] [--export-batch 64] [--probes 20] [--only one,raw,two] [--memory-exports 100000]
       [--json FILE] [--plot FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import matplotlib
import matplotlib.pyplot as plt
from hub_fanout import (
    Hub,
    answers_in,
    channel_for,
    cpu_seconds,
    endpoints_export,
    export_requests,
    import_events,
    rss_bytes,
    serve_raw,
    service_export,
    start_child,
    start_hub,
    stop_child,
)

from hub.auth.tokens import TokenStore
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
RAW_SERVICE = "bench.Raw"
# Watching members per child process, unless --watcher-processes says how many processes.
WATCHERS_PER_PROCESS = 250
PROGRESS_EVERY = 0.25
# The probes of propagation: Services of this namespace, exported by this member.
PROBE_NAMESPACE = "probe"
PROBE_EXPORTER = "e00"


def workload(exporters: int, services: int) -> dict[str, list[pb.ResourceExport]]:
    """Per exporting cluster: a Service and an Endpoints export of each of its Services."""
    per = services // exporters
    out: dict[str, list[pb.ResourceExport]] = {}
    for e in range(exporters):
        cluster = f"e{e:02d}"
        out[cluster] = []
        for i in range(e * per, (e + 1) * per):
            # Endpoints first: alone they make no import, so each import is sent once, final.
            out[cluster] += [endpoints_export(cluster, i), service_export(cluster, i)]
    return out


# ---- the watching members (child processes) ------------------------------------


def is_probe(import_name: str) -> bool:
    return import_name.startswith(f"{PROBE_NAMESPACE}-")


async def watchers_child(spec_file: Path) -> None:
    """Watch with every (target, cluster, token) of the spec; report progress on stdout.

    At a lower priority than the servers (nice 10), for the hub and the raw floor alike: the
    watchers stand for members on other machines, and must not take the server's core.

    Lines: `ready` once every watcher is synced; `progress TIME HELD` while the burst comes;
    `done TIME RESUMES MESSAGES BYTES` when every watcher holds every import of the burst (the
    messages and bytes that carried it); then `held NAME FIRST LAST` each time every watcher
    holds a probe import (the first and the last to receive it), until the process is stopped."""
    os.nice(10)
    spec = json.loads(spec_file.read_text())
    ca = Path(spec["ca"]).read_bytes()
    expected: int = spec["expected"]
    raw: bool = spec["raw"]
    batched: bool = spec["batched"]
    watchers = len(spec["watchers"])
    counts = [0] * watchers
    tally = {"resumes": 0, "messages": 0, "bytes": 0, "synced": 0, "finished": 0}
    done, all_synced = asyncio.Event(), asyncio.Event()
    # Probe import name -> (time the first watcher received it, watchers holding it).
    probes: dict[str, tuple[float, int]] = {}

    def received(n: int, held: set[str], import_name: str) -> None:
        if is_probe(import_name):
            if import_name.endswith("-service") and import_name not in held:
                held.add(import_name)
                first, holding = probes.get(import_name, (time.time(), 0))
                probes[import_name] = (first, holding + 1)
                if holding + 1 == watchers:
                    print(f"held {import_name} {first:.6f} {time.time():.6f}", flush=True)
            return
        held.add(import_name)
        before, counts[n] = counts[n], len(held)
        if before < expected <= counts[n]:
            tally["finished"] += 1
            if tally["finished"] == watchers:
                done.set()

    async def watch(n: int, target: str, cluster: str, token: str) -> None:
        """As a member does: resume from the last (epoch, revision) when the stream ends."""
        channel = channel_for(target, ca, token)
        held: set[str] = set()
        epoch, revision, was_synced = "", 0, False
        try:
            while True:
                try:
                    if raw:
                        call: Any = channel.unary_stream(f"/{RAW_SERVICE}/Subscribe")(b"")
                    else:
                        stub = pb_grpc.CommonAreaServiceStub(channel)
                        request = pb.WatchImportsRequest(
                            cluster_id=cluster, epoch=epoch, revision=revision, batched=batched
                        )
                        call = stub.WatchImports(request)
                    async for message in call:
                        if raw and message == b"subscribed":
                            tally["synced"] += 1
                            if tally["synced"] == watchers:
                                all_synced.set()
                            continue
                        event = pb.WatchImportsResponse.FromString(message) if raw else message
                        kind = event.WhichOneof("event")
                        epoch, revision = event.epoch, max(revision, event.revision)
                        if kind == "synced" and not was_synced:
                            was_synced = True
                            tally["synced"] += 1
                            if tally["synced"] == watchers:
                                all_synced.set()
                        elif kind in ("upsert", "changes"):
                            if not done.is_set():
                                tally["messages"] += 1
                                tally["bytes"] += len(message) if raw else event.ByteSize()
                            if kind == "upsert":
                                received(n, held, event.upsert.import_name)
                            for change in event.changes.changes:
                                if change.HasField("upsert"):
                                    received(n, held, change.upsert.import_name)
                    raise RuntimeError("the stream ended")
                except grpc.aio.AioRpcError as exc:  # a follower not serving yet, or a watch cut off
                    if exc.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED) or raw:
                        raise
                    tally["resumes"] += 1
                    await asyncio.sleep(0.2 if not was_synced else 0.05)
        finally:
            await channel.close()

    tasks = [asyncio.create_task(watch(n, *w)) for n, w in enumerate(spec["watchers"])]
    await all_synced.wait()
    print("ready", flush=True)
    while not done.is_set():
        print(f"progress {time.time():.3f} {sum(counts)}", flush=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), PROGRESS_EVERY)
    print(f"progress {time.time():.3f} {sum(counts)}", flush=True)
    print(f"done {time.time():.3f} {tally['resumes']} {tally['messages']} {tally['bytes']}", flush=True)
    await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class WatcherGroup:
    """The watcher processes of one measurement and what they reported."""

    processes: list[asyncio.subprocess.Process] = field(default_factory=list)
    # Per process: (wall time, imports its watchers hold), as the process reported it.
    reports: list[list[tuple[float, int]]] = field(default_factory=list)
    finished_at: list[float] = field(default_factory=list)
    resumes: int = 0
    # Messages and bytes that carried the burst, over every watcher.
    messages: int = 0
    bytes: int = 0
    # Probe import -> (first, last receipt) per process that reported it.
    held: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    _readers: list[asyncio.Task[None]] = field(default_factory=list)
    _news: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self, specs: list[dict[str, Any]], tmp: Path) -> None:
        for n, spec in enumerate(specs):
            path = tmp / f"watchers-{n}.json"
            path.write_text(json.dumps(spec))
            process = await asyncio.create_subprocess_exec(
                sys.executable, str(HERE), "--watchers-child", str(path),
                stdout=asyncio.subprocess.PIPE, cwd=ROOT,
            )  # fmt: skip
            self.processes.append(process)
            self.reports.append([])
        for process in self.processes:
            assert process.stdout is not None
            line = (await asyncio.wait_for(process.stdout.readline(), 600)).decode()
            if line.strip() != "ready":
                raise RuntimeError(f"watchers did not get ready: {line!r}")
        self._readers = [asyncio.create_task(self._read(n, p)) for n, p in enumerate(self.processes)]

    async def wait_done(self, within: float) -> float:
        """Until every process holds the burst; the wall time the last one finished."""
        await self._until(lambda: len(self.finished_at) == len(self.processes), within)
        return max(self.finished_at)

    async def wait_held(self, import_name: str, within: float) -> tuple[float, float]:
        """Until every watcher holds the probe import; the first and the last receipt."""
        await self._until(lambda: len(self.held.get(import_name, [])) == len(self.processes), within)
        times = self.held[import_name]
        return min(t for t, _ in times), max(t for _, t in times)

    async def _until(self, condition: Callable[[], bool], within: float) -> None:
        async with asyncio.timeout(within):
            while not condition():
                for reader in self._readers:
                    if reader.done():
                        reader.result()  # a process that ended early: its error
                await self._news.wait()

    def _notify(self) -> None:
        self._news.set()
        self._news = asyncio.Event()

    async def _read(self, n: int, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        try:
            while line := (await process.stdout.readline()).decode():
                words = line.split()
                if words[0] == "progress":
                    self.reports[n].append((float(words[1]), int(words[2])))
                elif words[0] == "done":
                    self.finished_at.append(float(words[1]))
                    self.resumes += int(words[2])
                    self.messages += int(words[3])
                    self.bytes += int(words[4])
                elif words[0] == "held":
                    self.held.setdefault(words[1], []).append((float(words[2]), float(words[3])))
                self._notify()
            raise RuntimeError("a watcher process ended early")
        finally:
            self._notify()

    @property
    def series(self) -> list[tuple[float, int]]:
        """Deliveries over time: at each report, the sum of every process's latest count."""
        latest = [0] * len(self.reports)
        out = []
        for t, n, count in sorted((t, n, c) for n, lines in enumerate(self.reports) for t, c in lines):
            latest[n] = count
            out.append((t, sum(latest)))
        return out

    async def stop(self) -> None:
        for reader in self._readers:
            reader.cancel()
        for process in self.processes:
            await stop_child(process)


def split(items: list[Any], parts: int) -> list[list[Any]]:
    return [items[n::parts] for n in range(parts)]


# ---- measurements ------------------------------------------------------------------


async def export_all(
    target: str, ca: bytes, tokens: dict[str, str], work: dict[str, list[pb.ResourceExport]], batch: int
) -> None:
    """Every exporter announces, then streams its exports without waiting, ``batch`` a request as a
    member sends what it has at once (1: one a request); all acknowledged."""

    async def one(cluster: str, exports: list[pb.ResourceExport]) -> None:
        channel = channel_for(target, ca, tokens[cluster])
        try:
            stub = pb_grpc.CommonAreaServiceStub(channel)
            await stub.Announce(pb.AnnounceRequest(cluster_id=cluster, cluster_set_id="test-clusterset"))
            call = stub.Export()

            async def writer() -> None:
                for request in export_requests(exports, batch):
                    await call.write(request)

            writing = asyncio.create_task(writer())
            answered = 0
            while answered < len(exports):
                for answer in answers_in(await call.read()):
                    # Sequence 0: an unsolicited verdict (an Endpoints export's status changes when its
                    # Service's export commits after it), not the answer to a request.
                    if answer.sequence:
                        accepted(answer)
                        answered += 1
            await writing
            call.cancel()
        finally:
            await channel.close()

    await asyncio.gather(*(one(c, e) for c, e in work.items()))


def accepted(answer: Any) -> None:
    if answer.status.verdict != pb.VERDICT_ACCEPTED:
        raise RuntimeError(f"export not accepted: {answer}")


def make_tokens(data: Path, exporters: list[str], watchers: int) -> tuple[dict[str, str], list[tuple[str, str]]]:
    store = TokenStore(data / "tokens.db")
    try:
        exporting = {c: store.create(f"member-{c}", cluster_id=c) for c in exporters}
        watching = [(f"w{n:04d}", store.create(f"member-w{n:04d}", cluster_id=f"w{n:04d}")) for n in range(watchers)]
    finally:
        store.close()
    return exporting, watching


def watcher_processes(args: argparse.Namespace) -> int:
    return int(args.watcher_processes or max(2, -(-args.watchers // WATCHERS_PER_PROCESS)))


def probe_pair(k: int) -> tuple[pb.ResourceExport, pb.ResourceExport]:
    """Probe k: an Endpoints and a Service export of Service `probe/p{k}` of PROBE_EXPORTER."""
    # Addresses of their own (the workload's Services number fewer than 50,000).
    endpoints, service = endpoints_export(PROBE_EXPORTER, 50_000 + k), service_export(PROBE_EXPORTER, 50_000 + k)
    for export, name_of in ((endpoints, names.endpoints_export_name), (service, names.service_export_name)):
        export.namespace, export.name = PROBE_NAMESPACE, f"p{k}"
        export.export_name = name_of(PROBE_EXPORTER, PROBE_NAMESPACE, f"p{k}")
    return endpoints, service


def probe_import(k: int) -> str:
    return names.service_import_name(PROBE_NAMESPACE, f"p{k}")


def latencies(samples: list[tuple[float, float]]) -> dict[str, float]:
    """p50 and p99 (ms) of the first and of the last watcher's receipt after the export."""
    firsts, lasts = sorted(f for f, _ in samples), sorted(last for _, last in samples)

    def at(values: list[float], q: float) -> float:
        return 1000 * values[min(len(values) - 1, int(q * len(values)))] if values else 0.0

    return {
        "first_p50_ms": at(firsts, 0.5),
        "first_p99_ms": at(firsts, 0.99),
        "last_p50_ms": at(lasts, 0.5),
        "last_p99_ms": at(lasts, 0.99),
    }


async def hub_probes(hub: Hub, token: str, group: WatcherGroup, count: int) -> list[tuple[float, float]]:
    """One Service exported at a time, each after the last reached every watcher: seconds from
    the Service's export (its Endpoints acknowledged before) to the first and the last watcher."""
    channel = channel_for(hub.target, hub.ca, token)
    samples = []
    try:
        call = pb_grpc.CommonAreaServiceStub(channel).Export()
        for k in range(count):
            endpoints, service = probe_pair(k)
            await call.write(pb.ExportRequest(sequence=2 * k + 1, upsert=endpoints))
            accepted(await call.read())
            start = time.time()
            await call.write(pb.ExportRequest(sequence=2 * k + 2, upsert=service))
            first, last = await group.wait_held(probe_import(k), 60)
            samples.append((first - start, last - start))
            accepted(await call.read())
        call.cancel()
    finally:
        await channel.close()
    return samples


async def raw_probes(
    channel: grpc.aio.Channel, group: WatcherGroup, count: int, batched: bool
) -> list[tuple[float, float]]:
    """The same through the raw server: the messages the hub sends for probe k, broadcast."""
    samples = []
    broadcast = channel.unary_unary(f"/{RAW_SERVICE}/Broadcast")
    for k in range(count):
        messages = import_events(list(probe_pair(k)))
        if batched:
            messages = batch_events(messages, len(messages))
        start = time.time()
        for message in messages:
            await broadcast(message)
        first, last = await group.wait_held(probe_import(k), 60)
        samples.append((first - start, last - start))
    return samples


def batch_events(events: list[bytes], size: int) -> list[bytes]:
    """Single-form import events as batched ones (Changes) of `size` changes, as the hub packs them."""
    out = []
    for first in range(0, len(events), size):
        singles = [pb.WatchImportsResponse.FromString(e) for e in events[first : first + size]]
        message = pb.WatchImportsResponse(epoch=singles[-1].epoch, revision=singles[-1].revision)
        message.changes.changes.extend(pb.ImportChange(revision=e.revision, upsert=e.upsert) for e in singles)
        out.append(message.SerializeToString())
    return out


def per(total: float, count: int) -> float:
    return total / count if count else 0.0


async def hub_run(args: argparse.Namespace, replicas: int) -> dict[str, Any]:
    work = workload(args.exporters, args.services)
    expected = sum(len(e) for e in work.values())  # one import per export here (no merging)
    with tempfile.TemporaryDirectory(prefix="mchub-scale-") as tmp:
        data = Path(tmp) / "hub"
        data.mkdir()
        exporting, watching = make_tokens(data, list(work), args.watchers)
        leader = await start_hub(data)
        idle = rss_bytes(leader.process.pid)
        hubs = [leader]
        group = WatcherGroup()
        rss_series: list[tuple[float, int]] = []
        try:
            if replicas == 2:
                hubs.append(await start_hub(data, "--follow", "--leader-address", leader.target))
            ca_path = data / "tls" / "ca.crt"
            specs = [
                {
                    "ca": str(ca_path),
                    "expected": expected,
                    "raw": False,
                    "batched": args.watch == "batched",
                    "watchers": [(hubs[n % len(hubs)].target, c, t) for c, t in part],
                }
                for n, part in enumerate(split(watching, watcher_processes(args)))
            ]
            await group.start(specs, Path(tmp))
            watching_rss = rss_bytes(leader.process.pid)
            counters = await leader.counters()
            cpu_before = [cpu_seconds(h.process.pid) for h in hubs]
            start = time.time()
            sampling = asyncio.create_task(sample_rss(leader.process.pid, rss_series))
            await export_all(leader.target, ca_path.read_bytes(), exporting, work, args.export_batch)
            exported = time.time()
            end = await group.wait_done(args.timeout)
            sampling.cancel()
            rss = [rss_bytes(h.process.pid) for h in hubs]
            cpu = [cpu_seconds(h.process.pid) - before for h, before in zip(hubs, cpu_before, strict=True)]
            written = {k: v - counters.get(k, 0.0) for k, v in (await leader.counters()).items()}
            probes = await hub_probes(leader, exporting[PROBE_EXPORTER], group, args.probes)
        finally:
            await group.stop()
            for hub in hubs:
                await hub.stop()
    delivered = expected * args.watchers
    seconds = end - start
    return {
        "replicas": replicas,
        "exports": expected,
        "deliveries": delivered,
        "seconds": seconds,
        "exports_acknowledged_seconds": exported - start,
        "deliveries_per_second": delivered / seconds,
        "watch_resumes": group.resumes,
        "messages_per_delivery": per(group.messages, delivered),
        "bytes_per_delivery": per(group.bytes, delivered),
        "changes_per_message": per(delivered, group.messages),
        "store_transactions_per_export": per(written.get("mchub_store_transactions_total", 0.0), expected),
        "store_statements_per_export": per(written.get("mchub_store_statements_total", 0.0), expected),
        "store_fsyncs_per_export": per(written.get("mchub_store_syncs_total", 0.0), expected),
        "hub_rss_bytes": rss,
        # CPU each hub process spent: with a core per replica (and the members elsewhere) the
        # fan-out would take about the largest of these.
        "hub_cpu_seconds": cpu,
        "hub_cpu_us_per_delivery": 1e6 * cpu[0] / delivered,
        "hub_rss_idle_bytes": idle,
        "hub_rss_per_watcher_bytes": (watching_rss - idle) / max(1, args.watchers),
        "rss_per_10000_exports_bytes": (rss[0] - watching_rss) / (expected / 10_000),
        "propagation": latencies(probes),
        "series": sorted((t - start, n) for t, n in group.series if t >= start),
        "rss_series": [(t - start, r) for t, r in rss_series],
    }


async def sample_rss(pid: int, into: list[tuple[float, int]]) -> None:
    """The process's RSS every PROGRESS_EVERY seconds, until cancelled."""
    while True:
        into.append((time.time(), rss_bytes(pid)))
        await asyncio.sleep(PROGRESS_EVERY)


async def raw_run(args: argparse.Namespace, batch: int) -> dict[str, Any]:
    """The floor: the hub's messages for the workload, `batch` imports a message (1: one each),
    fanned out by raw grpc.aio to as many watchers, and the same probes."""
    work = workload(args.exporters, args.services)
    imports = sum(len(e) for e in work.values())
    with tempfile.TemporaryDirectory(prefix="mchub-scale-") as tmp:
        tls = Path(tmp) / "tls"
        process, target = await start_child(
            sys.executable, str(HERE), "--serve-raw", str(tls), "--raw-batch", str(batch),
            "--services", str(args.services), "--exporters", str(args.exporters),
        )  # fmt: skip
        group = WatcherGroup()
        try:
            watchers = [(target, f"w{n:04d}", "mch_raw") for n in range(args.watchers)]
            specs = [
                {"ca": str(tls / "ca.crt"), "expected": imports, "raw": True, "batched": batch > 1, "watchers": part}
                for part in split(watchers, watcher_processes(args))
            ]
            await group.start(specs, Path(tmp))
            channel = channel_for(target, (tls / "ca.crt").read_bytes(), "mch_raw")
            cpu_before, start = cpu_seconds(process.pid), time.time()
            await channel.unary_unary(f"/{RAW_SERVICE}/Burst")(str(-(-imports // batch)).encode())
            end = await group.wait_done(args.timeout)
            cpu = cpu_seconds(process.pid) - cpu_before
            probes = await raw_probes(channel, group, args.probes, batch > 1)
            await channel.close()
        finally:
            await group.stop()
            await stop_child(process)
    delivered = imports * args.watchers
    return {
        "deliveries": delivered,
        "imports_per_message": batch,
        "seconds": end - start,
        "deliveries_per_second": delivered / (end - start),
        "messages_per_delivery": per(group.messages, delivered),
        "bytes_per_delivery": per(group.bytes, delivered),
        "server_cpu_us_per_delivery": 1e6 * cpu / delivered,
        "propagation": latencies(probes),
        "series": sorted((t - start, n) for t, n in group.series if t >= start),
    }


async def memory_run(args: argparse.Namespace) -> dict[str, Any]:
    """The hub's RSS as exports arrive in steps of 10,000 (no watchers)."""
    services = args.memory_exports // 2
    work = workload(args.exporters, services)
    with tempfile.TemporaryDirectory(prefix="mchub-scale-") as tmp:
        data = Path(tmp) / "hub"
        data.mkdir()
        exporting, _ = make_tokens(data, list(work), 0)
        hub = await start_hub(data)
        process, target = hub.process, hub.target
        ca = (data / "tls" / "ca.crt").read_bytes()
        steps: list[tuple[int, int]] = [(0, rss_bytes(process.pid))]
        try:
            per_step = 10_000 // 2 // args.exporters  # Services per exporter per step of 10,000 exports
            total = 0
            for first in range(0, services // args.exporters, per_step):
                part = {c: e[2 * first : 2 * (first + per_step)] for c, e in work.items()}
                await export_all(target, ca, exporting, part, args.export_batch)
                total += sum(len(e) for e in part.values())
                steps.append((total, rss_bytes(process.pid)))
            snapshot = await snapshot_seconds(target, ca, exporting)
            after_snapshot = rss_bytes(process.pid)
        finally:
            await hub.stop()
        # And once more after a restart: the index is loaded from the store, not built up.
        started = time.perf_counter()
        hub = await start_hub(data)
        try:
            await snapshot_seconds(hub.target, ca, exporting)  # serving: the index is loaded
            restart = time.perf_counter() - started
            after_restart = rss_bytes(hub.process.pid)
        finally:
            await hub.stop()
    growth = (steps[-1][1] - steps[1][1]) / max(1, (steps[-1][0] - steps[1][0]) / 10_000)
    return {
        "exports": steps[-1][0],
        "rss_bytes": steps[-1][1],
        "rss_idle_bytes": steps[0][1],
        "rss_per_10000_exports_bytes": growth,
        "steps": steps,
        "snapshot_seconds": snapshot,
        "rss_after_snapshot_bytes": after_snapshot,
        "restart_seconds": restart,
        "rss_after_restart_bytes": after_restart,
    }


async def snapshot_seconds(target: str, ca: bytes, tokens: dict[str, str]) -> float:
    """One member (an exporter) watches, batched as members do: seconds until it holds the
    snapshot of every import."""
    cluster, token = next(iter(tokens.items()))
    channel = channel_for(target, ca, token)
    try:
        start = time.perf_counter()
        request = pb.WatchImportsRequest(cluster_id=cluster, batched=True)
        call = pb_grpc.CommonAreaServiceStub(channel).WatchImports(request)
        async for event in call:
            if event.WhichOneof("event") == "synced":
                call.cancel()
                break
        return time.perf_counter() - start
    finally:
        await channel.close()


def plot(results: dict[str, Any], path: Path) -> None:
    matplotlib.use("Agg")
    fig, (ax, rss) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, height_ratios=(2, 1))
    curves = (("raw", "raw grpc.aio (floor)"), ("one_replica", "hub, 1 replica"), ("two_replicas", "hub, 2 replicas"))
    for n, (key, label) in enumerate(curves):
        if key in results:
            series = results[key]["series"]
            ax.plot([t for t, _ in series], [d / 1e6 for _, d in series], label=label, color=f"C{n}")
            if memory := results[key].get("rss_series"):
                rss.plot(
                    [t for t, _ in memory], [r / 2**20 for _, r in memory], label=f"{label} (leader)", color=f"C{n}"
                )
    rss.set_xlabel("seconds since the first export")
    ax.set_ylabel("import deliveries (millions)")
    rss.set_ylabel("hub RSS (MiB)")
    ax.set_title(
        f"{results['deliveries']:,} import deliveries to {results['watchers']} watching members, {results['watch']}\n"
        f"({results['cores']} cores, load {results['load']})"
    )
    for axes in (ax, rss):
        axes.grid(alpha=0.3)
        axes.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "watchers": args.watchers,
        "watch": args.watch,
        "exporters": args.exporters,
        "export_batch": args.export_batch,
        "services": args.services,
        "exports": args.services * 2,
        "deliveries": args.services * 2 * args.watchers,
        "probes": args.probes,
        "cores": os.cpu_count(),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    only = set(args.only.split(","))
    if "one" in only:
        results["one_replica"] = await hub_run(args, 1)
    if "raw" in only:
        # Batched as the hub batched this run's deliveries (its changes per message), or as asked.
        batch = 1
        if args.watch == "batched":
            measured = results.get("one_replica", {}).get("changes_per_message", 0)
            batch = args.raw_batch or max(1, round(measured)) or 1
        results["raw"] = await raw_run(args, batch)
    if "two" in only:
        results["two_replicas"] = await hub_run(args, 2)
    one, two, raw = (results.get(k, {}) for k in ("one_replica", "two_replicas", "raw"))
    if one and raw:
        results["ratio_hub_to_raw"] = one["deliveries_per_second"] / raw["deliveries_per_second"]
    if one and two:
        results["ratio_two_to_one_replica"] = two["deliveries_per_second"] / one["deliveries_per_second"]
    if args.memory_exports:
        results["memory"] = await memory_run(args)
    results["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return results


def _propagation(run: dict[str, Any]) -> str:
    p = run["propagation"]
    return (
        f"first watcher p50 {p['first_p50_ms']:.1f} ms p99 {p['first_p99_ms']:.1f} ms, "
        f"every watcher p50 {p['last_p50_ms']:.1f} ms p99 {p['last_p99_ms']:.1f} ms"
    )


def report(results: dict[str, Any]) -> str:
    mib = 1024 * 1024
    lines = [
        f"{results['deliveries']:,} import deliveries: {results['exports']:,} exports from {results['exporters']} "
        f"members ({results['export_batch']} a request) to {results['watchers']} watching members, {results['watch']} "
        f"({results['cores']} cores, load {results['load']} -> {results['load_after']})",
    ]
    if raw := results.get("raw"):
        lines.append(
            f"  raw grpc.aio    {raw['seconds']:6.1f} s {raw['deliveries_per_second']:>10,.0f} deliveries/s (floor; "
            f"{raw['imports_per_message']} imports a message, {raw['bytes_per_delivery']:.0f} bytes per delivery, "
            f"{raw['server_cpu_us_per_delivery']:.2f} us server CPU per delivery)"
        )
    if one := results.get("one_replica"):
        lines += [
            f"  hub, 1 replica  {one['seconds']:6.1f} s {one['deliveries_per_second']:>10,.0f} deliveries/s  "
            f"ratio to raw {results.get('ratio_hub_to_raw', 0):.2f}  RSS {one['hub_rss_bytes'][0] / mib:.0f} MiB",
            f"    per delivery: {one['messages_per_delivery']:.4f} messages, {one['bytes_per_delivery']:.0f} bytes, "
            f"{one['hub_cpu_us_per_delivery']:.2f} us hub CPU; per export: "
            f"{one['store_transactions_per_export']:.3f} store transactions, "
            f"{one['store_statements_per_export']:.3f} statements, {one['store_fsyncs_per_export']:.3f} fsyncs",
            f"    memory: {one['hub_rss_per_watcher_bytes'] / 1024:.0f} KiB per watching member, "
            f"{one['rss_per_10000_exports_bytes'] / mib:.0f} MiB per 10,000 exports; "
            f"{one['watch_resumes']} watch resumes",
        ]
    if two := results.get("two_replicas"):
        lines.append(
            f"  hub, 2 replicas {two['seconds']:6.1f} s {two['deliveries_per_second']:>10,.0f} deliveries/s  "
            f"ratio to 1 replica {results.get('ratio_two_to_one_replica', 0):.2f}  "
            f"RSS {' + '.join(f'{r / mib:.0f}' for r in two['hub_rss_bytes'])} MiB; "
            f"{two['messages_per_delivery']:.4f} messages per delivery; {two['watch_resumes']} resumes"
        )
    for key, label in (("one_replica", "1 replica"), ("two_replicas", "2 replicas")):
        if run := results.get(key):
            cpu = " + ".join(f"{c:.1f}" for c in run["hub_cpu_seconds"])
            lines.append(f"  hub CPU, {label}: {cpu} s")
    if results["probes"]:
        lines.append(f"  propagation, {results['probes']} Services one at a time, export to watchers holding it:")
        for key, label in (
            ("raw", "raw grpc.aio"),
            ("one_replica", "hub, 1 replica"),
            ("two_replicas", "hub, 2 replicas"),
        ):
            if run := results.get(key):
                lines.append(f"    {label:16}{_propagation(run)}")
    if "memory" in results:
        memory = results["memory"]
        lines.append(
            f"  memory: {memory['exports']:,} exports, hub RSS {memory['rss_bytes'] / mib:.0f} MiB "
            f"(idle {memory['rss_idle_bytes'] / mib:.0f} MiB, {memory['rss_per_10000_exports_bytes'] / mib:.1f} MiB "
            f"per 10,000 exports); a watcher's snapshot of them {memory['snapshot_seconds']:.1f} s, "
            f"RSS after it {memory['rss_after_snapshot_bytes'] / mib:.0f} MiB; restarted and serving in "
            f"{memory['restart_seconds']:.1f} s, RSS {memory['rss_after_restart_bytes'] / mib:.0f} MiB"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=5000, help="Services exported (2 exports, 2 imports each)")
    parser.add_argument("--members", "--watchers", dest="watchers", type=int, default=100, help="watching members")
    parser.add_argument("--watch", choices=("batched", "single"), default="batched",
                        help="batched WatchImports, as members watch, or one change per message")  # fmt: skip
    parser.add_argument("--exporters", type=int, default=10)
    parser.add_argument(
        "--export-batch", type=int, default=64, help="exports a request, as members send them (1: one a request)"
    )
    parser.add_argument("--watcher-processes", type=int, default=0, help=f"default: one per {WATCHERS_PER_PROCESS}")
    parser.add_argument("--probes", type=int, default=20, help="Services exported one at a time to time propagation")
    parser.add_argument("--raw-batch", type=int, default=0, help="imports per raw message (default: as the hub)")
    parser.add_argument("--memory-exports", type=int, default=0, help="also measure RSS up to this many exports")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--only", default="one,raw,two", help="measurements to run (one,raw,two)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--watchers-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve-raw", type=Path, help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.watchers_child:
        asyncio.run(watchers_child(cli.watchers_child))
        sys.exit(0)
    if cli.serve_raw:
        events = import_events([e for exports in workload(cli.exporters, cli.services).values() for e in exports])
        if cli.raw_batch > 1:
            events = batch_events(events, cli.raw_batch)
        asyncio.run(serve_raw(cli.serve_raw, events))
        sys.exit(0)
    figures = asyncio.run(main(cli))
    print(report(figures))
    if cli.json:
        cli.json.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    if cli.plot:
        plot(figures, cli.plot)

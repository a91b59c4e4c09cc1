"""Hub scale: 1,000,000 import deliveries, one replica and two watch-serving replicas.

10 exporting members export 5,000 Services (a Service and an Endpoints export each: 10,000
exports, 500 Services per member) on one Export stream each; the hub merges them into 10,000
imports; 100 watching members (lightweight gRPC clients, TLS and a bearer token each, in two
processes) receive every one of them: 10,000 x 100 = 1,000,000 import deliveries. Timed from
the first export until every watcher holds every import.

Prints and writes (JSON, and a PNG of deliveries over time):
- one replica: seconds to converge, deliveries/s, the hub's RSS at the end and per 10,000 exports;
- the floor: the same 10,000 messages (the bytes the hub sends) fanned out to the same 100
  clients by a raw grpc.aio server (bench/hub_fanout.py's), and the ratio;
- two replicas serving watches: the SQLite leader plus a follower process reading its change
  log (`mchub hub --follow`), watchers split between them, exports to the leader; the ratio to
  one replica;
- with --memory-exports N: the hub's RSS as N exports arrive (no watchers), and per 10,000.

Usage: python bench/hub_scale.py [--services 5000] [--watchers 100] [--exporters 10]
       [--memory-exports 100000] [--json FILE] [--plot FILE]
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import matplotlib
import matplotlib.pyplot as plt
from hub_fanout import (
    channel_for,
    endpoints_export,
    import_events,
    serve_raw,
    service_export,
    start_child,
    stop_child,
)

from hub.auth.tokens import TokenStore
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
RAW_SERVICE = "bench.Raw"
WATCHER_PROCESSES = 2
PROGRESS_EVERY = 0.25


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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# ---- the watching members (child processes) ------------------------------------


async def watchers_child(spec_file: Path) -> None:
    """Watch with every (target, cluster, token) of the spec; report progress on stdout.

    At a lower priority than the servers (nice 10), for the hub and the raw floor alike: the
    watchers stand for members on other machines, and must not take the server's core."""
    os.nice(10)
    spec = json.loads(spec_file.read_text())
    ca = Path(spec["ca"]).read_bytes()
    expected: int = spec["expected"]
    raw: bool = spec["raw"]
    counts = [0] * len(spec["watchers"])
    resumes = [0]  # streams cut off (slow watcher) or refused (follower not serving yet), then resumed
    synced = 0
    done, all_synced = asyncio.Event(), asyncio.Event()
    finished = 0

    async def watch(n: int, target: str, cluster: str, token: str) -> None:
        """As a member does: resume from the last (epoch, revision) when the stream ends."""
        nonlocal synced, finished
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
                        request = pb.WatchImportsRequest(cluster_id=cluster, epoch=epoch, revision=revision)
                        call = stub.WatchImports(request)
                    async for message in call:
                        if raw and message == b"subscribed":
                            synced += 1
                            if synced == len(counts):
                                all_synced.set()
                            continue
                        event = pb.WatchImportsResponse.FromString(message) if raw else message
                        kind = event.WhichOneof("event")
                        epoch, revision = event.epoch, max(revision, event.revision)
                        if kind == "synced" and not was_synced:
                            was_synced = True
                            synced += 1
                            if synced == len(counts):
                                all_synced.set()
                        elif kind == "upsert":
                            held.add(event.upsert.import_name)
                            counts[n] = len(held)
                            if counts[n] == expected:
                                finished += 1
                                if finished == len(counts):
                                    done.set()
                                call.cancel()
                                return
                    raise RuntimeError("the stream ended")
                except grpc.aio.AioRpcError as exc:  # a follower not serving yet, or a watch cut off
                    if exc.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED) or raw:
                        raise
                    resumes[0] += 1
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
    print(f"done {time.time():.3f} {resumes[0]}", flush=True)
    await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class WatcherGroup:
    """The watcher processes of one measurement and the deliveries they reported over time."""

    processes: list[asyncio.subprocess.Process] = field(default_factory=list)
    # Per process: (wall time, imports its watchers hold), as the process reported it.
    reports: list[list[tuple[float, int]]] = field(default_factory=list)
    finished_at: list[float] = field(default_factory=list)
    resumes: int = 0

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
            line = (await asyncio.wait_for(process.stdout.readline(), 300)).decode()
            if line.strip() != "ready":
                raise RuntimeError(f"watchers did not get ready: {line!r}")

    async def wait_done(self, within: float) -> float:
        """Collect progress until every process is done; the wall time the last one finished."""
        async with asyncio.timeout(within):
            await asyncio.gather(*(self._read(n, p) for n, p in enumerate(self.processes)))
        return max(self.finished_at)

    async def _read(self, n: int, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while line := (await process.stdout.readline()).decode():
            words = line.split()
            if words[0] == "progress":
                self.reports[n].append((float(words[1]), int(words[2])))
            elif words[0] == "done":
                self.finished_at.append(float(words[1]))
                self.resumes += int(words[2])
                return
        raise RuntimeError("a watcher process ended early")

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
        for process in self.processes:
            await stop_child(process)


def split(items: list[Any], parts: int) -> list[list[Any]]:
    return [items[n::parts] for n in range(parts)]


# ---- measurements ------------------------------------------------------------------


async def export_all(target: str, ca: bytes, tokens: dict[str, str], work: dict[str, list[pb.ResourceExport]]) -> None:
    """Every exporter announces, then streams its exports without waiting; all acknowledged."""

    async def one(cluster: str, exports: list[pb.ResourceExport]) -> None:
        channel = channel_for(target, ca, tokens[cluster])
        try:
            stub = pb_grpc.CommonAreaServiceStub(channel)
            await stub.Announce(pb.AnnounceRequest(cluster_id=cluster, cluster_set_id="test-clusterset"))
            call = stub.Export()

            async def writer() -> None:
                for i, export in enumerate(exports):
                    await call.write(pb.ExportRequest(sequence=i + 1, upsert=export))

            writing = asyncio.create_task(writer())
            for _ in exports:
                answer = await call.read()
                if answer.status.verdict != pb.VERDICT_ACCEPTED:
                    raise RuntimeError(f"export not accepted: {answer}")
            await writing
            call.cancel()
        finally:
            await channel.close()

    await asyncio.gather(*(one(c, e) for c, e in work.items()))


def make_tokens(data: Path, exporters: list[str], watchers: int) -> tuple[dict[str, str], list[tuple[str, str]]]:
    store = TokenStore(data / "tokens.db")
    try:
        exporting = {c: store.create(f"member-{c}", cluster_id=c) for c in exporters}
        watching = [(f"w{n:03d}", store.create(f"member-w{n:03d}", cluster_id=f"w{n:03d}")) for n in range(watchers)]
    finally:
        store.close()
    return exporting, watching


async def start_hub(data: Path, *extra: str) -> tuple[asyncio.subprocess.Process, str]:
    return await start_child(
        sys.executable, "-m", "mchub_cli.main", "--log-level", "WARNING", "hub",
        "--data-dir", str(data), "--grpc-address", "127.0.0.1:0", "--rest-address", "127.0.0.1:0", *extra,
    )  # fmt: skip


async def hub_run(args: argparse.Namespace, replicas: int) -> dict[str, Any]:
    work = workload(args.exporters, args.services)
    expected = sum(len(e) for e in work.values())  # one import per export here (no merging)
    with tempfile.TemporaryDirectory(prefix="mchub-scale-") as tmp:
        data = Path(tmp) / "hub"
        data.mkdir()
        exporting, watching = make_tokens(data, list(work), args.watchers)
        leader, target = await start_hub(data)
        idle = rss_bytes(leader.pid)
        hubs = [(leader, target)]
        group = WatcherGroup()
        try:
            if replicas == 2:
                hubs.append(await start_hub(data, "--follow", "--leader-address", target))
            ca_path = data / "tls" / "ca.crt"
            specs = [
                {
                    "ca": str(ca_path),
                    "expected": expected,
                    "raw": False,
                    "watchers": [(hubs[n % len(hubs)][1], c, t) for c, t in part],
                }
                for n, part in enumerate(split(watching, WATCHER_PROCESSES))
            ]
            await group.start(specs, Path(tmp))
            cpu_before = [cpu_seconds(p.pid) for p, _ in hubs]
            start = time.time()
            await export_all(target, ca_path.read_bytes(), exporting, work)
            exported = time.time()
            end = await group.wait_done(args.timeout)
            rss = [rss_bytes(p.pid) for p, _ in hubs]
            cpu = [cpu_seconds(p.pid) - before for (p, _), before in zip(hubs, cpu_before, strict=True)]
        finally:
            await group.stop()
            for process, _ in hubs:
                await stop_child(process)
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
        "hub_rss_bytes": rss,
        # CPU each hub process spent: with a core per replica (and the members elsewhere) the
        # fan-out would take about the largest of these.
        "hub_cpu_seconds": cpu,
        "hub_rss_idle_bytes": idle,
        "rss_per_10000_exports_bytes": (rss[0] - idle) / (expected / 10_000),
        "series": sorted((t - start, n) for t, n in group.series if t >= start),
    }


async def raw_run(args: argparse.Namespace) -> dict[str, Any]:
    work = workload(args.exporters, args.services)
    messages = sum(len(e) for e in work.values())
    with tempfile.TemporaryDirectory(prefix="mchub-scale-") as tmp:
        tls = Path(tmp) / "tls"
        process, target = await start_child(
            sys.executable, str(HERE), "--serve-raw", str(tls),
            "--services", str(args.services), "--exporters", str(args.exporters),
        )  # fmt: skip
        group = WatcherGroup()
        try:
            watchers = [(target, f"w{n:03d}", "mch_raw") for n in range(args.watchers)]
            specs = [
                {"ca": str(tls / "ca.crt"), "expected": messages, "raw": True, "watchers": part}
                for part in split(watchers, WATCHER_PROCESSES)
            ]
            await group.start(specs, Path(tmp))
            channel = channel_for(target, (tls / "ca.crt").read_bytes(), "mch_raw")
            start = time.time()
            await channel.unary_unary(f"/{RAW_SERVICE}/Burst")(str(messages).encode())
            end = await group.wait_done(args.timeout)
            await channel.close()
        finally:
            await group.stop()
            await stop_child(process)
    delivered = messages * args.watchers
    return {
        "deliveries": delivered,
        "seconds": end - start,
        "deliveries_per_second": delivered / (end - start),
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
        process, target = await start_hub(data)
        ca = (data / "tls" / "ca.crt").read_bytes()
        steps: list[tuple[int, int]] = [(0, rss_bytes(process.pid))]
        try:
            per_step = 10_000 // 2 // args.exporters  # Services per exporter per step of 10,000 exports
            total = 0
            for first in range(0, services // args.exporters, per_step):
                part = {c: e[2 * first : 2 * (first + per_step)] for c, e in work.items()}
                await export_all(target, ca, exporting, part)
                total += sum(len(e) for e in part.values())
                steps.append((total, rss_bytes(process.pid)))
            snapshot = await snapshot_seconds(target, ca, exporting)
            after_snapshot = rss_bytes(process.pid)
        finally:
            await stop_child(process)
        # And once more after a restart: the index is loaded from the store, not built up.
        started = time.perf_counter()
        process, target = await start_hub(data)
        try:
            await snapshot_seconds(target, ca, exporting)  # serving: the index is loaded
            restart = time.perf_counter() - started
            after_restart = rss_bytes(process.pid)
        finally:
            await stop_child(process)
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
    """One member (an exporter) watches: seconds until it holds the snapshot of every import."""
    cluster, token = next(iter(tokens.items()))
    channel = channel_for(target, ca, token)
    try:
        start = time.perf_counter()
        call = pb_grpc.CommonAreaServiceStub(channel).WatchImports(pb.WatchImportsRequest(cluster_id=cluster))
        async for event in call:
            if event.WhichOneof("event") == "synced":
                call.cancel()
                break
        return time.perf_counter() - start
    finally:
        await channel.close()


def plot(results: dict[str, Any], path: Path) -> None:
    matplotlib.use("Agg")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    curves = (("raw", "raw grpc.aio (floor)"), ("one_replica", "hub, 1 replica"), ("two_replicas", "hub, 2 replicas"))
    for key, label in curves:
        if key in results:
            series = results[key]["series"]
            ax.plot([t for t, _ in series], [n / 1e6 for _, n in series], label=label)
    ax.set_xlabel("seconds since the first export")
    ax.set_ylabel("import deliveries (millions)")
    ax.set_title(
        f"{results['deliveries']:,} import deliveries to {results['watchers']} watchers "
        f"({results['cores']} cores, load {results['load']})"
    )
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "watchers": args.watchers,
        "exporters": args.exporters,
        "services": args.services,
        "exports": args.services * 2,
        "deliveries": args.services * 2 * args.watchers,
        "cores": os.cpu_count(),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    only = set(args.only.split(","))
    if "raw" in only:
        results["raw"] = await raw_run(args)
    if "one" in only:
        results["one_replica"] = await hub_run(args, 1)
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


def report(results: dict[str, Any]) -> str:
    mib = 1024 * 1024
    lines = [
        f"{results['deliveries']:,} import deliveries: {results['exports']:,} exports from {results['exporters']} "
        f"members to {results['watchers']} watchers ({results['cores']} cores, load {results['load']})",
    ]
    if raw := results.get("raw"):
        lines.append(
            f"  raw grpc.aio    {raw['seconds']:5.1f} s {raw['deliveries_per_second']:>9,.0f} deliveries/s (floor)"
        )
    if one := results.get("one_replica"):
        lines.append(
            f"  hub, 1 replica  {one['seconds']:5.1f} s {one['deliveries_per_second']:>9,.0f} deliveries/s  "
            f"ratio to raw {results.get('ratio_hub_to_raw', 0):.2f}  RSS {one['hub_rss_bytes'][0] / mib:.0f} MiB "
            f"(+{one['rss_per_10000_exports_bytes'] / mib:.0f} MiB over idle per 10,000 exports)"
        )
    if two := results.get("two_replicas"):
        lines.append(
            f"  hub, 2 replicas {two['seconds']:5.1f} s {two['deliveries_per_second']:>9,.0f} deliveries/s  "
            f"ratio to 1 replica {results.get('ratio_two_to_one_replica', 0):.2f}  "
            f"RSS {' + '.join(f'{r / mib:.0f}' for r in two['hub_rss_bytes'])} MiB"
        )
    for key, label in (("one_replica", "1 replica"), ("two_replicas", "2 replicas")):
        if run := results.get(key):
            cpu = " + ".join(f"{c:.1f}" for c in run["hub_cpu_seconds"])
            lines.append(f"  hub CPU, {label}: {cpu} s")
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
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--exporters", type=int, default=10)
    parser.add_argument("--memory-exports", type=int, default=0, help="also measure RSS up to this many exports")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--only", default="raw,one,two", help="measurements to run (raw,one,two)")
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
        asyncio.run(serve_raw(cli.serve_raw, events))
        sys.exit(0)
    figures = asyncio.run(main(cli))
    print(report(figures))
    if cli.json:
        cli.json.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    if cli.plot:
        plot(figures, cli.plot)

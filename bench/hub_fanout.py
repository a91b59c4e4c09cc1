"""Hub throughput: import fan-out to many subscribers, and durable ingest, each beside its floor.

Every figure comes from runs of several seconds, repeated and interleaved with their floors
(floor, hub, floor, hub, ...: the machine is shared, its speed moves within minutes), and is
reported as the median and range of the runs; a ratio is taken per pair, the hub run with the
floor run just before it. Counts that do not vary with load are printed beside them.

- fan-out: imports delivered per second to N subscribers through the hub (a member exports
  Services; every subscriber's WatchImports, one change per message, receives the imports),
  next to raw grpc.aio fan-out of the same-size messages to as many subscribers; messages and
  bytes per delivery, counted at the subscribers; server CPU per delivery;
- durable ingest: exports acknowledged per second on one Export stream (every answer after the
  commit holding its export is fsynced; commits made meanwhile share an fsync), next to a raw
  grpc.aio echo stream of the same requests; transactions, SQL statements and fsyncs per export
  (the hub's own counters, /metrics); server CPU per export or per echo.

Servers run in a child process (TLS and bearer tokens for the hub and the floors alike); the
subscribers and the producer run here, the same way for both.

Usage: python bench/hub_fanout.py [--subscribers 100] [--services 1000] [--ingest 20000]
       [--repeats 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from prometheus_client.parser import text_string_to_metric_families

from hub.auth.tokens import TokenStore
from hub.engine.index import Index
from hub.merge import MergeConfig, MergeContext
from hub.merge.regroup import regroup
from hub.tls import ensure_tls
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent
RAW_SERVICE = "bench.Raw"


# ---- workload ----------------------------------------------------------------


def service_export(cluster: str, i: int) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.service_export_name(cluster, "bench", f"svc-{i}"),
        cluster_id=cluster,
        namespace="bench",
        name=f"svc-{i}",
        service=pb.ServiceSpec(
            type="ClusterIP",
            cluster_ip=f"10.96.{i // 250}.{i % 250 + 1}",
            session_affinity="None",
            ports=[pb.ServicePort(name="http", port=80, protocol="TCP")],
        ),
    )


def endpoints_export(cluster: str, i: int) -> pb.ResourceExport:
    subset = pb.EndpointSubset(
        addresses=[pb.EndpointAddress(ip=f"10.{100 + i // 62500}.{i // 250 % 250}.{i % 250 + 1}")],
        ports=[pb.EndpointPort(name="http", port=80, protocol="TCP")],
    )
    return pb.ResourceExport(
        export_name=names.endpoints_export_name(cluster, "bench", f"svc-{i}"),
        cluster_id=cluster,
        namespace="bench",
        name=f"svc-{i}",
        endpoints=pb.EndpointsSpec(subsets=[subset]),
    )


def import_events(exports: list[pb.ResourceExport]) -> list[bytes]:
    """The WatchImportsResponses a member receives for these exports, as the hub merges them."""
    batch = regroup(Index(), MergeContext(config=MergeConfig()), deleted=set(), put=exports)
    return [
        pb.WatchImportsResponse(epoch="0123456789abcdef", revision=12345 + n, upsert=imp).SerializeToString()
        for n, imp in enumerate(batch.put_imports)
    ]


def sample_import_event() -> bytes:
    imp = pb.ResourceImport(
        import_name=names.service_import_name("bench", "svc-1"),
        namespace="bench",
        name="svc-1",
        service_import=pb.ServiceImportSpec(
            type="ClusterSetIP",
            ports=[pb.ServicePort(name="http", port=80, protocol="TCP")],
            session_affinity="None",
            clusters=["producer"],
        ),
    )
    return pb.WatchImportsResponse(epoch="0123456789abcdef", revision=12345, upsert=imp).SerializeToString()


# ---- child servers -----------------------------------------------------------


class RawServer:
    """Raw grpc.aio: fan a burst of opaque messages out to every subscriber; echo a stream."""

    def __init__(self, payloads: list[bytes] | None = None) -> None:
        self.queues: list[asyncio.Queue[bytes | None]] = []
        self.ready = asyncio.Event()
        self.expected = 0
        # Messages a burst cycles through (default: one sample import event).
        self.payloads = payloads or [sample_import_event()]

    async def subscribe(self, request: bytes, context: Any) -> AsyncIterator[bytes]:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.queues.append(queue)
        if len(self.queues) >= self.expected:
            self.ready.set()
        yield b"subscribed"
        while (item := await queue.get()) is not None:
            yield item

    async def burst(self, request: bytes, context: Any) -> bytes:
        count = int(request.decode())
        payloads = self.payloads
        for n in range(count):
            payload = payloads[n % len(payloads)]
            for queue in self.queues:
                queue.put_nowait(payload)
            await asyncio.sleep(0)
        return b"ok"

    async def broadcast(self, request: bytes, context: Any) -> bytes:
        """One message (the request, as it is) to every subscriber: a probe of propagation."""
        for queue in self.queues:
            queue.put_nowait(request)
        return b"ok"

    async def echo(self, requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        async for item in requests:
            yield item


async def serve_raw(tls_dir: Path, payloads: list[bytes] | None = None) -> None:
    raw = RawServer(payloads)
    raw.expected = 10**9
    server = grpc.aio.server()
    handlers = {
        "Subscribe": grpc.unary_stream_rpc_method_handler(raw.subscribe),
        "Burst": grpc.unary_unary_rpc_method_handler(raw.burst),
        "Broadcast": grpc.unary_unary_rpc_method_handler(raw.broadcast),
        "Echo": grpc.stream_stream_rpc_method_handler(raw.echo),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(RAW_SERVICE, handlers),))
    files = ensure_tls(tls_dir)
    _, cert, key = files.read()
    port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key, cert)]))
    await server.start()
    print(f"raw: listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


async def start_child(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, cwd=ROOT
    )
    assert process.stdout is not None
    pattern = re.compile(r"(?:gRPC on|listening on) (\S+)")
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        if not line:
            raise RuntimeError(f"{args} exited before listening")
        if match := pattern.search(line):
            return process, match.group(1)


async def stop_child(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass
class Hub:
    """A hub in a child process (`mchub hub`, SQLite store in `data`)."""

    data: Path
    process: asyncio.subprocess.Process
    target: str
    rest_url: str

    @property
    def ca(self) -> bytes:
        return (self.data / "tls" / "ca.crt").read_bytes()

    async def counters(self) -> dict[str, float]:
        """The hub's counters (`/metrics`), by sample name, summed over their labels."""
        context = ssl.create_default_context(cafile=str(self.data / "tls" / "ca.crt"))
        token = (self.data / "admin.token").read_text().strip()
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.rest_url}/metrics", ssl=context, headers={"Authorization": f"Bearer {token}"}) as r,
        ):
            text = await r.text()
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                out[sample.name] = out.get(sample.name, 0.0) + sample.value
        return out

    async def stop(self) -> None:
        await stop_child(self.process)


async def start_hub(data: Path, *extra: str) -> Hub:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mchub_cli.main", "--log-level", "WARNING", "hub",
        "--data-dir", str(data), "--grpc-address", "127.0.0.1:0", "--rest-address", "127.0.0.1:0", *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, cwd=ROOT,
    )  # fmt: skip
    assert process.stdout is not None
    target = rest = ""
    while not (target and rest):
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        if not line:
            raise RuntimeError("the hub exited before it served")
        if match := re.search(r"gRPC on (\S+)", line):
            target = match.group(1)
        if match := re.search(r"REST on (\S+)", line):
            rest = match.group(1)
    return Hub(data, process, target, rest)


# ---- measurements ------------------------------------------------------------


def channel_for(target: str, ca: bytes, token: str) -> grpc.aio.Channel:
    creds = grpc.ssl_channel_credentials(root_certificates=ca)
    creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
    return grpc.aio.secure_channel(target, creds)


@dataclass
class Tally:
    """What a set of subscribers received: messages and their bytes."""

    messages: int = 0
    bytes: int = 0

    def figures(self, delivered: int, seconds: float, server_cpu: float) -> dict[str, float]:
        """A fan-out run's figures: rate, and per delivery the messages, bytes and server CPU."""
        return {
            "delivered": delivered,
            "seconds": seconds,
            "per_second": delivered / seconds,
            "messages_per_delivery": self.messages / delivered,
            "bytes_per_delivery": self.bytes / delivered,
            "server_cpu_us_per_delivery": 1e6 * server_cpu / delivered,
        }


async def hub_fanout(subscribers: int, services: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        data = Path(tmp)
        store = TokenStore(data / "tokens.db")
        tokens = {f"m{i:03d}": store.create(f"member-m{i:03d}", cluster_id=f"m{i:03d}") for i in range(subscribers)}
        producer_token = store.create("member-producer", cluster_id="producer")
        store.close()
        hub = await start_hub(data)
        channels = [channel_for(hub.target, hub.ca, tokens[f"m{i:03d}"]) for i in range(subscribers)]
        producer = channel_for(hub.target, hub.ca, producer_token)
        tally = Tally()
        try:
            expected = services * 2  # a ServiceImport and an Endpoints import per Service
            counts = [0] * subscribers
            done = asyncio.Event()
            finished = 0
            synced = asyncio.Event()
            synced_count = 0

            async def watch(i: int) -> None:
                nonlocal finished, synced_count
                stub = pb_grpc.CommonAreaServiceStub(channels[i])
                cluster = f"m{i:03d}"
                await stub.Announce(pb.AnnounceRequest(cluster_id=cluster, cluster_set_id="test-clusterset"))
                async for event in stub.WatchImports(pb.WatchImportsRequest(cluster_id=cluster)):
                    kind = event.WhichOneof("event")
                    if kind == "synced":
                        synced_count += 1
                        if synced_count == subscribers:
                            synced.set()
                    elif kind == "upsert":
                        tally.messages += 1
                        tally.bytes += event.ByteSize()
                        counts[i] += 1
                        if counts[i] == expected:
                            finished += 1
                            if finished == subscribers:
                                done.set()
                            return

            watchers = [asyncio.create_task(watch(i)) for i in range(subscribers)]
            await asyncio.wait_for(synced.wait(), 120)
            stub = pb_grpc.CommonAreaServiceStub(producer)
            await stub.Announce(pb.AnnounceRequest(cluster_id="producer", cluster_set_id="test-clusterset"))
            call = stub.Export()
            cpu, start = cpu_seconds(hub.process.pid), time.perf_counter()
            for i in range(services):
                await call.write(pb.ExportRequest(sequence=i + 1, upsert=service_export("producer", i)))
            await asyncio.wait_for(done.wait(), 600)
            elapsed = time.perf_counter() - start
            cpu = cpu_seconds(hub.process.pid) - cpu
            call.cancel()
            for task in watchers:
                task.cancel()
            return tally.figures(expected * subscribers, elapsed, cpu)
        finally:
            for channel in [*channels, producer]:
                await channel.close()
            await hub.stop()


def producer_token(data: Path) -> str:
    store = TokenStore(data / "tokens.db")
    try:
        return store.create("member-producer", cluster_id="producer")
    finally:
        store.close()


def export_requests(exports: list[pb.ResourceExport], batch: int) -> list[pb.ExportRequest]:
    """``exports`` as the member sends them: one a request, or ``batch`` a request
    (ExportUpserts, the i-th export with the request's sequence + i)."""
    if batch == 1:
        return [pb.ExportRequest(sequence=i + 1, upsert=export) for i, export in enumerate(exports)]
    return [
        pb.ExportRequest(sequence=i + 1, upserts=pb.ExportUpserts(exports=exports[i : i + batch]))
        for i in range(0, len(exports), batch)
    ]


def answers_in(response: pb.ExportResponse) -> list[pb.ExportResponse]:
    """The answers a response carries: a batch's, in order, or the one it is."""
    return list(response.answers.answers) if response.HasField("answers") else [response]


def ingest_requests(count: int, batch: int) -> list[pb.ExportRequest]:
    return export_requests([service_export("producer", i) for i in range(count)], batch)


async def hub_ingest(count: int, batch: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        data = Path(tmp)
        token = producer_token(data)
        hub = await start_hub(data)
        channel = channel_for(hub.target, hub.ca, token)
        try:
            stub = pb_grpc.CommonAreaServiceStub(channel)
            await stub.Announce(pb.AnnounceRequest(cluster_id="producer", cluster_set_id="test-clusterset"))
            call = stub.Export()
            requests = ingest_requests(count, batch)

            async def writer() -> None:
                for request in requests:
                    await call.write(request)

            before = await hub.counters()
            cpu, start = cpu_seconds(hub.process.pid), time.perf_counter()
            writing = asyncio.create_task(writer())
            acked = 0
            while acked < count:
                answer = await call.read()
                answers = answers_in(answer)
                for one in answers:
                    assert one.status.verdict == pb.VERDICT_ACCEPTED, one
                acked += len(answers)
            elapsed = time.perf_counter() - start
            cpu = cpu_seconds(hub.process.pid) - cpu
            await writing
            call.cancel()
            after = await hub.counters()

            def per_export(name: str) -> float:
                return (after.get(name, 0.0) - before.get(name, 0.0)) / count

            return {
                "exports": count,
                "exports_per_request": batch,
                "seconds": elapsed,
                "per_second": count / elapsed,
                "requests_per_export": per_export("mchub_export_requests_total"),
                "transactions_per_export": per_export("mchub_store_transactions_total"),
                "statements_per_export": per_export("mchub_store_statements_total"),
                "fsyncs_per_export": per_export("mchub_store_syncs_total"),
                "server_cpu_us_per_export": 1e6 * cpu / count,
            }
        finally:
            await channel.close()
            await hub.stop()


async def raw_child(tls_dir: Path) -> tuple[asyncio.subprocess.Process, str, bytes]:
    """The baseline server, over TLS with a bearer token like the hub, so only the hub's work differs."""
    process, target = await start_child(sys.executable, str(Path(__file__).resolve()), "--serve-raw", str(tls_dir))
    return process, target, (tls_dir / "ca.crt").read_bytes()


async def raw_fanout(subscribers: int, messages: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        process, target, ca = await raw_child(Path(tmp))
        channels = [channel_for(target, ca, "mch_raw") for _ in range(subscribers)]
        try:
            done = asyncio.Event()
            finished = 0
            subscribed = 0
            all_subscribed = asyncio.Event()
            tally = Tally()

            async def subscribe(i: int) -> None:
                nonlocal finished, subscribed
                call = channels[i].unary_stream(f"/{RAW_SERVICE}/Subscribe")(b"")
                got = 0
                async for item in call:
                    if item == b"subscribed":
                        subscribed += 1
                        if subscribed == subscribers:
                            all_subscribed.set()
                        continue
                    got += 1
                    tally.messages += 1
                    tally.bytes += len(item)
                    if got == messages:
                        finished += 1
                        if finished == subscribers:
                            done.set()
                        call.cancel()
                        return

            tasks = [asyncio.create_task(subscribe(i)) for i in range(subscribers)]
            await asyncio.wait_for(all_subscribed.wait(), 60)
            cpu, start = cpu_seconds(process.pid), time.perf_counter()
            await channels[0].unary_unary(f"/{RAW_SERVICE}/Burst")(str(messages).encode())
            await asyncio.wait_for(done.wait(), 600)
            elapsed = time.perf_counter() - start
            cpu = cpu_seconds(process.pid) - cpu
            for task in tasks:
                task.cancel()
            return tally.figures(messages * subscribers, elapsed, cpu)
        finally:
            for channel in channels:
                await channel.close()
            await stop_child(process)


async def raw_echo(count: int, batch: int) -> dict[str, float]:
    """The hub's requests for ``count`` exports (``batch`` a request), each echoed back as it is."""
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        process, target, ca = await raw_child(Path(tmp))
        channel = channel_for(target, ca, "mch_raw")
        try:
            call = channel.stream_stream(f"/{RAW_SERVICE}/Echo")()
            payloads = [r.SerializeToString() for r in ingest_requests(count, batch)]

            async def writer() -> None:
                for payload in payloads:
                    await call.write(payload)

            cpu, start = cpu_seconds(process.pid), time.perf_counter()
            writing = asyncio.create_task(writer())
            for _ in payloads:
                await call.read()
            elapsed = time.perf_counter() - start
            cpu = cpu_seconds(process.pid) - cpu
            await writing
            call.cancel()
            return {
                "messages": len(payloads),
                "exports": count,
                "seconds": elapsed,
                "per_second": count / elapsed,
                "server_cpu_us_per_message": 1e6 * cpu / len(payloads),
                "server_cpu_us_per_export": 1e6 * cpu / count,
            }
        finally:
            await channel.close()
            await stop_child(process)


def spread(values: list[float]) -> dict[str, float]:
    """Median and range of repeated runs."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summary(pairs: list[tuple[dict[str, float], dict[str, float]]]) -> dict[str, Any]:
    """Runs of (floor, hub) pairs: each side's rate and the per-pair ratio, as median and range."""
    return {
        "floor_per_second": spread([floor["per_second"] for floor, _ in pairs]),
        "hub_per_second": spread([hub["per_second"] for _, hub in pairs]),
        "ratio": spread([hub["per_second"] / floor["per_second"] for floor, hub in pairs]),
        "runs": [{"floor": floor, "hub": hub} for floor, hub in pairs],
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "subscribers": args.subscribers,
        "services": args.services,
        "ingest_exports": args.ingest,
        "repeats": args.repeats,
        "message_bytes": len(sample_import_event()),
        "cores": os.cpu_count(),
        "load_at_start": os.getloadavg()[0],
    }
    fanout: list[tuple[dict[str, float], dict[str, float]]] = []
    ingest: list[tuple[dict[str, float], dict[str, float]]] = []
    batched: list[tuple[dict[str, float], dict[str, float]]] = []
    # The batched hub against the echo of one export a message (the floor the single runs use).
    batched_on_single: list[tuple[dict[str, float], dict[str, float]]] = []
    for _ in range(args.repeats):
        if "fanout" in args.only:
            fanout.append(
                (
                    await raw_fanout(args.subscribers, args.services * 2),
                    await hub_fanout(args.subscribers, args.services),
                )
            )
        if "ingest" in args.only:
            single_floor = await raw_echo(args.ingest, 1)
            ingest.append((single_floor, await hub_ingest(args.ingest, 1)))
            if args.batch > 1:
                batched.append((await raw_echo(args.ingest, args.batch), await hub_ingest(args.ingest, args.batch)))
                batched_on_single.append((single_floor, batched[-1][1]))
    if fanout:
        results["fanout"] = summary(fanout)
    if ingest:
        results["ingest"] = summary(ingest)
    if batched:
        results["ingest_batched"] = summary(batched)
        results["ingest_batched"]["ratio_to_single_echo"] = summary(batched_on_single)["ratio"]
        results["ingest_batch"] = args.batch
    results["load_at_end"] = os.getloadavg()[0]
    return results


def _rate(s: dict[str, float]) -> str:
    return f"{s['median']:>9,.0f}/s ({s['min']:,.0f}-{s['max']:,.0f})"


def _median(runs: list[dict[str, Any]], side: str, key: str) -> float:
    return statistics.median(run[side][key] for run in runs)


def report(results: dict[str, Any]) -> str:
    lines = [
        f"{results['repeats']} runs of each, interleaved with their floors; median (range). "
        f"{results['cores']} cores, load {results['load_at_start']:.1f} at start, {results['load_at_end']:.1f} at end"
    ]
    if fanout := results.get("fanout"):
        runs = fanout["runs"]
        lines += [
            f"fan-out to {results['subscribers']} subscribers, one change per message "
            f"({results['services'] * 2 * results['subscribers']:,} deliveries a run):",
            f"  hub      {_rate(fanout['hub_per_second'])} imports delivered; "
            f"{_median(runs, 'hub', 'messages_per_delivery'):.2f} messages and "
            f"{_median(runs, 'hub', 'bytes_per_delivery'):.0f} bytes per delivery; "
            f"{_median(runs, 'hub', 'server_cpu_us_per_delivery'):.1f} us hub CPU per delivery",
            f"  raw gRPC {_rate(fanout['floor_per_second'])} messages; "
            f"{_median(runs, 'floor', 'bytes_per_delivery'):.0f} bytes per message; "
            f"{_median(runs, 'floor', 'server_cpu_us_per_delivery'):.1f} us server CPU per message",
            f"  ratio    {fanout['ratio']['median']:.2f} ({fanout['ratio']['min']:.2f}-{fanout['ratio']['max']:.2f})",
        ]
    if ingest := results.get("ingest"):
        runs = ingest["runs"]
        lines += [
            f"durable ingest on one Export stream ({results['ingest_exports']:,} exports a run):",
            f"  hub      {_rate(ingest['hub_per_second'])} exports acknowledged after fsync; per export "
            f"{_median(runs, 'hub', 'transactions_per_export'):.3f} transactions, "
            f"{_median(runs, 'hub', 'statements_per_export'):.2f} statements, "
            f"{_median(runs, 'hub', 'fsyncs_per_export'):.3f} fsyncs, "
            f"{_median(runs, 'hub', 'server_cpu_us_per_export'):.0f} us hub CPU",
            f"  raw gRPC {_rate(ingest['floor_per_second'])} messages echoed (no storage); "
            f"{_median(runs, 'floor', 'server_cpu_us_per_message'):.0f} us server CPU per message",
            f"  ratio    {ingest['ratio']['median']:.2f} ({ingest['ratio']['min']:.2f}-{ingest['ratio']['max']:.2f})",
        ]
    if batched := results.get("ingest_batched"):
        runs = batched["runs"]
        against_single = batched["ratio_to_single_echo"]
        lines += [
            f"durable ingest on one Export stream, {results['ingest_batch']} exports a request (ExportUpserts, "
            "as a member sends what queued):",
            f"  hub      {_rate(batched['hub_per_second'])} exports acknowledged after fsync; per export "
            f"{_median(runs, 'hub', 'requests_per_export'):.3f} requests, "
            f"{_median(runs, 'hub', 'transactions_per_export'):.3f} transactions, "
            f"{_median(runs, 'hub', 'statements_per_export'):.2f} statements, "
            f"{_median(runs, 'hub', 'fsyncs_per_export'):.3f} fsyncs, "
            f"{_median(runs, 'hub', 'server_cpu_us_per_export'):.0f} us hub CPU",
            f"  raw gRPC {_rate(batched['floor_per_second'])} exports echoed in the same requests; "
            f"{_median(runs, 'floor', 'server_cpu_us_per_export'):.1f} us server CPU per export",
            f"  ratio    {batched['ratio']['median']:.2f} ({batched['ratio']['min']:.2f}-{batched['ratio']['max']:.2f})"
            f" to the echo of the same requests; {against_single['median']:.2f} "
            f"({against_single['min']:.2f}-{against_single['max']:.2f}) to the echo of one export a message",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--services", type=int, default=1000, help="Services exported per fan-out run (2 imports each)")
    parser.add_argument("--ingest", type=int, default=20000, help="exports per ingest run")
    parser.add_argument("--batch", type=int, default=64, help="exports a request in the batched ingest runs (1: none)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each, interleaved with their floors")
    parser.add_argument("--only", default="fanout,ingest", help="measurements to run (fanout,ingest)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--serve-raw", type=Path, help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.serve_raw:
        asyncio.run(serve_raw(cli.serve_raw))
        sys.exit(0)
    figures = asyncio.run(main(cli))
    print(report(figures))
    if cli.json:
        cli.json.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")

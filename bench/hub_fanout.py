"""Hub throughput: import fan-out to many subscribers, and durable ingest.

Prints, from one run on this machine:
- imports delivered per second to N subscribers through the hub (a member
  exports Services; every subscriber's WatchImports receives the imports),
  next to raw grpc.aio fan-out of same-size messages to the same number of
  subscribers, and the ratio;
- durable ingest: exports acknowledged per second on one Export stream
  (every acknowledgement is after an fsync'd SQLite commit), next to a raw
  grpc.aio echo stream with the same messages, and the ratio.

Servers run in a child process; the subscribers and the producer run here,
the same way for the hub and for the raw baseline.

Usage: python bench/hub_fanout.py [--subscribers 100] [--services 500] [--ingest 3000] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

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


# ---- measurements ------------------------------------------------------------


def channel_for(target: str, ca: bytes, token: str) -> grpc.aio.Channel:
    creds = grpc.ssl_channel_credentials(root_certificates=ca)
    creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
    return grpc.aio.secure_channel(target, creds)


async def hub_fanout(subscribers: int, services: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        data = Path(tmp)
        store = TokenStore(data / "tokens.db")
        tokens = {f"m{i:03d}": store.create(f"member-m{i:03d}", cluster_id=f"m{i:03d}") for i in range(subscribers)}
        producer_token = store.create("member-producer", cluster_id="producer")
        store.close()
        process, target = await start_child(
            sys.executable, "-m", "mchub_cli.main", "--log-level", "WARNING", "hub",
            "--data-dir", str(data), "--grpc-address", "127.0.0.1:0", "--rest-address", "127.0.0.1:0",
        )  # fmt: skip
        ca = (data / "tls" / "ca.crt").read_bytes()
        channels = [channel_for(target, ca, tokens[f"m{i:03d}"]) for i in range(subscribers)]
        producer = channel_for(target, ca, producer_token)
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
            start = time.perf_counter()
            for i in range(services):
                await call.write(pb.ExportRequest(sequence=i + 1, upsert=service_export("producer", i)))
            await asyncio.wait_for(done.wait(), 300)
            elapsed = time.perf_counter() - start
            call.cancel()
            for task in watchers:
                task.cancel()
            delivered = expected * subscribers
            return {"hub_imports_delivered": delivered, "hub_seconds": elapsed, "hub_per_second": delivered / elapsed}
        finally:
            for channel in [*channels, producer]:
                await channel.close()
            await stop_child(process)


async def hub_ingest(count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        data = Path(tmp)
        store = TokenStore(data / "tokens.db")
        token = store.create("member-producer", cluster_id="producer")
        store.close()
        process, target = await start_child(
            sys.executable, "-m", "mchub_cli.main", "--log-level", "WARNING", "hub",
            "--data-dir", str(data), "--grpc-address", "127.0.0.1:0", "--rest-address", "127.0.0.1:0",
        )  # fmt: skip
        channel = channel_for(target, (data / "tls" / "ca.crt").read_bytes(), token)
        try:
            stub = pb_grpc.CommonAreaServiceStub(channel)
            await stub.Announce(pb.AnnounceRequest(cluster_id="producer", cluster_set_id="test-clusterset"))
            call = stub.Export()
            exports = [service_export("producer", i) for i in range(count)]

            async def writer() -> None:
                for i, export in enumerate(exports):
                    await call.write(pb.ExportRequest(sequence=i + 1, upsert=export))

            start = time.perf_counter()
            writing = asyncio.create_task(writer())
            acked = 0
            while acked < count:
                answer = await call.read()
                assert answer.status.verdict == pb.VERDICT_ACCEPTED, answer
                acked += 1
            elapsed = time.perf_counter() - start
            await writing
            call.cancel()
            return {"ingest_exports": count, "ingest_seconds": elapsed, "ingest_per_second": count / elapsed}
        finally:
            await channel.close()
            await stop_child(process)


async def raw_child(tls_dir: Path) -> tuple[asyncio.subprocess.Process, str, bytes]:
    """The baseline server, over TLS with a bearer token like the hub, so only the hub's work differs."""
    process, target = await start_child(sys.executable, str(Path(__file__).resolve()), "--serve-raw", str(tls_dir))
    return process, target, (tls_dir / "ca.crt").read_bytes()


async def raw_fanout(subscribers: int, messages: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        process, target, ca = await raw_child(Path(tmp))
        channels = [channel_for(target, ca, "mch_raw") for _ in range(subscribers)]
        return await _raw_fanout(process, channels, subscribers, messages)


async def _raw_fanout(
    process: asyncio.subprocess.Process, channels: list[grpc.aio.Channel], subscribers: int, messages: int
) -> dict[str, float]:
    try:
        done = asyncio.Event()
        finished = 0
        subscribed = 0
        all_subscribed = asyncio.Event()

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
                if got == messages:
                    finished += 1
                    if finished == subscribers:
                        done.set()
                    call.cancel()
                    return

        tasks = [asyncio.create_task(subscribe(i)) for i in range(subscribers)]
        await asyncio.wait_for(all_subscribed.wait(), 60)
        start = time.perf_counter()
        await channels[0].unary_unary(f"/{RAW_SERVICE}/Burst")(str(messages).encode())
        await asyncio.wait_for(done.wait(), 300)
        elapsed = time.perf_counter() - start
        for task in tasks:
            task.cancel()
        delivered = messages * subscribers
        return {"raw_delivered": delivered, "raw_seconds": elapsed, "raw_per_second": delivered / elapsed}
    finally:
        for channel in channels:
            await channel.close()
        await stop_child(process)


async def raw_echo(count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mchub-bench-") as tmp:
        process, target, ca = await raw_child(Path(tmp))
        return await _raw_echo(process, channel_for(target, ca, "mch_raw"), count)


async def _raw_echo(process: asyncio.subprocess.Process, channel: grpc.aio.Channel, count: int) -> dict[str, float]:
    try:
        call = channel.stream_stream(f"/{RAW_SERVICE}/Echo")()
        payload = pb.ExportRequest(sequence=1, upsert=service_export("producer", 1)).SerializeToString()

        async def writer() -> None:
            for _ in range(count):
                await call.write(payload)

        start = time.perf_counter()
        writing = asyncio.create_task(writer())
        for _ in range(count):
            await call.read()
        elapsed = time.perf_counter() - start
        await writing
        call.cancel()
        return {"raw_echo_per_second": count / elapsed}
    finally:
        await channel.close()
        await stop_child(process)


async def main(args: argparse.Namespace) -> dict[str, float]:
    results: dict[str, float] = {"subscribers": args.subscribers, "message_bytes": len(sample_import_event())}
    results.update(await raw_fanout(args.subscribers, args.services * 2))
    results.update(await hub_fanout(args.subscribers, args.services))
    results["fanout_ratio_hub_to_raw"] = results["hub_per_second"] / results["raw_per_second"]
    results.update(await raw_echo(args.ingest))
    results.update(await hub_ingest(args.ingest))
    results["ingest_ratio_hub_to_raw_echo"] = results["ingest_per_second"] / results["raw_echo_per_second"]
    return results


def report(results: dict[str, float]) -> str:
    return "\n".join(
        [
            f"fan-out to {int(results['subscribers'])} subscribers ({int(results['message_bytes'])}-byte events):",
            f"  hub      {results['hub_per_second']:>10,.0f} imports delivered/s "
            f"({int(results['hub_imports_delivered']):,} in {results['hub_seconds']:.2f} s)",
            f"  raw gRPC {results['raw_per_second']:>10,.0f} messages/s "
            f"({int(results['raw_delivered']):,} in {results['raw_seconds']:.2f} s)",
            f"  ratio    {results['fanout_ratio_hub_to_raw']:.2f} (hub / raw)",
            "durable ingest on one Export stream:",
            f"  hub      {results['ingest_per_second']:>10,.0f} exports/s acknowledged after fsync "
            f"({int(results['ingest_exports']):,} in {results['ingest_seconds']:.2f} s)",
            f"  raw gRPC {results['raw_echo_per_second']:>10,.0f} messages/s echoed (no storage)",
            f"  ratio    {results['ingest_ratio_hub_to_raw_echo']:.2f} (hub / raw)",
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--services", type=int, default=500, help="Services exported (2 imports each)")
    parser.add_argument("--ingest", type=int, default=3000, help="exports for the ingest measurement")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--serve-raw", type=Path, help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.serve_raw:
        asyncio.run(serve_raw(cli.serve_raw))
        sys.exit(0)
    figures = asyncio.run(main(cli))
    print(report(figures))
    print(json.dumps(figures, sort_keys=True))
    if cli.json:
        cli.json.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")

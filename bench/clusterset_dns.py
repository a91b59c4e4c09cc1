"""clusterset.local DNS: queries per second and latency of the member's server.

Prints, from one run on this machine:
- queries answered per second at saturation (100 queries outstanding), and p50/p99 latency at
  a fixed rate below saturation, of the member's DNS server (ClustersetZone + Responder +
  DnsServer, the code `mchub member --dns-address` runs) holding a zone of imported Services;
- answers per second of one core without sockets: the responder with its packet cache (the
  same 1000 queries over and over, as a resolver's clients ask), without it (every query read,
  looked up and rendered), and the trivial responder;
- the same socket figures for a trivial responder in the same process and event loop (dnspython
  reads the query and answers one fixed A record: no zone, no checks), with the same queries:
  the floor of asyncio + dnspython on this machine, and the ratio.

The load comes from another process: dnsperf (Debian's dnsperf) when it is installed, else a
dnspython client (`--client`, also in a child process). The query mix: 70% A of ClusterSetIP
Services, 10% SRV, 10% A of Headless Services (10 endpoints each), 10% names not imported.

Usage: python bench/clusterset_dns.py [--services 1000] [--seconds 5] [--rate 2000] [--json FILE] [--no-dnsperf]
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and this file (dns.py) would
# stand in for dnspython's package `dns`.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import socket
import statistics
import tempfile
import time
from typing import Any

import dns.message
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from member.dns.answer import Responder
from member.dns.metrics import DnsMetrics
from member.dns.server import DnsServer
from member.dns.zone import ClustersetZone

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "bench"
HEADLESS_ENDPOINTS = 10
OUTSTANDING = 100


# ---- the zone and the queries ------------------------------------------------------------


def build_zone(services: int) -> ClustersetZone:
    zone = ClustersetZone()
    annotations = {"multicluster.antrea.io/imported-service": "true"}
    for i in range(services):
        ip = f"10.112.{i // 250}.{i % 250 + 1}"
        zone.put_service_import(
            {
                "metadata": {"name": f"svc-{i}", "namespace": NAMESPACE, "annotations": annotations},
                "spec": {
                    "type": "ClusterSetIP",
                    "ips": [ip],
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
                },
            }
        )
    for i in range(max(1, services // 10)):
        name = f"hl-{i}"
        zone.put_service_import(
            {
                "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations},
                "spec": {"type": "Headless"},
            }
        )
        endpoints = [
            {"addresses": [f"10.200.{i % 250}.{j + 1}"], "hostname": f"{name}-{j}", "conditions": {"ready": True}}
            for j in range(HEADLESS_ENDPOINTS)
        ]
        zone.put_endpoint_slice(
            {
                "metadata": {
                    "name": f"antrea-mc-{name}.west",
                    "namespace": NAMESPACE,
                    "labels": {
                        "multicluster.kubernetes.io/service-name": name,
                        "multicluster.kubernetes.io/source-cluster": "west",
                    },
                },
                "endpoints": endpoints,
                "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
            }
        )
    return zone


def query_mix(services: int, count: int = 10000) -> list[tuple[str, str]]:
    rng = random.Random(1645)
    headless = max(1, services // 10)
    out = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.7:
            out.append((f"svc-{rng.randrange(services)}.{NAMESPACE}.svc.clusterset.local.", "A"))
        elif roll < 0.8:
            out.append((f"_http._tcp.svc-{rng.randrange(services)}.{NAMESPACE}.svc.clusterset.local.", "SRV"))
        elif roll < 0.9:
            out.append((f"hl-{rng.randrange(headless)}.{NAMESPACE}.svc.clusterset.local.", "A"))
        else:
            out.append((f"missing-{rng.randrange(10**6)}.{NAMESPACE}.svc.clusterset.local.", "A"))
    return out


# ---- the baseline: a trivial responder -----------------------------------------------------


FIXED_A = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.A, "10.112.0.1")


def trivial_answer(data: bytes) -> bytes | None:
    """Reads the query with dnspython and answers one fixed A record, whatever was asked."""
    try:
        query = dns.message.from_wire(data)
    except Exception:
        return None
    response = dns.message.make_response(query)
    response.answer.append(dns.rrset.from_rdata(query.question[0].name, 5, FIXED_A))
    return response.to_wire()


class TrivialResponder(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        reply = trivial_answer(data)
        if reply is not None:
            self.transport.sendto(reply, addr)


def answers_per_second(answer: Any, wires: list[bytes], seconds: float = 2.0) -> float:
    """CPU only, no sockets: how many of the queries one core answers per second."""
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for wire in wires[:1000]:
            answer(wire)
        done += min(1000, len(wires))
    return done / (time.perf_counter() - start)


# ---- load from another process -------------------------------------------------------------


async def run_dnsperf(dnsperf: str, port: int, queries: Path, *, seconds: float, rate: int | None) -> dict[str, Any]:
    argv = [dnsperf, "-s", "127.0.0.1", "-p", str(port), "-d", str(queries), "-l", str(seconds)]
    argv += ["-q", str(OUTSTANDING), "-t", "2"]
    if rate is not None:
        argv += ["-Q", str(rate), "-v"]
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    text = out.decode()
    if process.returncode != 0:
        raise RuntimeError(f"dnsperf failed: {err.decode()}")
    qps = float(re.search(r"Queries per second:\s+([\d.]+)", text).group(1))  # type: ignore[union-attr]
    completed = int(re.search(r"Queries completed:\s+(\d+)", text).group(1))  # type: ignore[union-attr]
    lost = int(re.search(r"Queries lost:\s+(\d+)", text).group(1))  # type: ignore[union-attr]
    result: dict[str, Any] = {"qps": qps, "completed": completed, "lost": lost}
    if rate is not None:
        # -v: one line per answer, its latency in seconds last.
        latencies = [float(line.split()[-1]) for line in text.splitlines() if line.startswith("> ")]
        result.update(_percentiles(latencies))
    return result


async def run_python_client(port: int, queries: Path, *, seconds: float, rate: int | None) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--client", str(port), str(queries), str(seconds), str(rate or 0)]
    process = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, cwd=ROOT)
    out, _ = await process.communicate()
    result: dict[str, Any] = json.loads(out)
    return result


def _percentiles(latencies: list[float]) -> dict[str, Any]:
    if not latencies:
        return {"p50_ms": None, "p99_ms": None, "samples": 0}
    ordered = sorted(latencies)
    return {
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "samples": len(ordered),
    }


def python_client(port: int, queries_file: Path, seconds: float, rate: int) -> dict[str, Any]:
    """A blocking dnspython client: OUTSTANDING queries in flight (rate 0), or one every 1/rate s."""
    lines = [line.split() for line in queries_file.read_text().splitlines()]
    wires = [dns.message.make_query(name, rdtype).to_wire() for name, rdtype in lines]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect(("127.0.0.1", port))
    sock.settimeout(0.001 if rate else 2.0)
    sent_at: dict[int, float] = {}
    latencies: list[float] = []
    completed = sent = 0
    start = time.perf_counter()
    deadline = start + seconds
    i = 0

    def send() -> None:
        nonlocal i, sent
        qid = i % 65536
        wire = bytearray(wires[i % len(wires)])
        wire[0:2] = qid.to_bytes(2, "big")
        sent_at[qid] = time.perf_counter()
        sock.send(wire)
        i += 1
        sent += 1

    while time.perf_counter() < deadline:
        if rate:
            due = start + sent / rate
            if time.perf_counter() >= due:
                send()
        else:
            while len(sent_at) < OUTSTANDING:
                send()
        try:
            reply = sock.recv(65535)
        except TimeoutError:
            continue
        qid = int.from_bytes(reply[:2], "big")
        began = sent_at.pop(qid, None)
        if began is not None:
            completed += 1
            latencies.append(time.perf_counter() - began)
    elapsed = time.perf_counter() - start
    # Answers still on their way count as answered, not lost (as dnsperf waits for them).
    sock.settimeout(0.2)
    while sent_at:
        try:
            reply = sock.recv(65535)
        except TimeoutError:
            break
        if sent_at.pop(int.from_bytes(reply[:2], "big"), None) is not None:
            completed += 1
    result: dict[str, Any] = {"qps": completed / elapsed, "completed": completed, "lost": len(sent_at)}
    if rate:
        result.update(_percentiles(latencies))
    return result


# ---- one target ----------------------------------------------------------------------------


async def measure(port: int, queries: Path, args: argparse.Namespace, dnsperf: str | None) -> dict[str, Any]:
    async def load(rate: int | None) -> dict[str, Any]:
        if dnsperf:
            return await run_dnsperf(dnsperf, port, queries, seconds=args.seconds, rate=rate)
        return await run_python_client(port, queries, seconds=args.seconds, rate=rate)

    saturated = await load(None)
    paced = await load(args.rate)
    return {
        "qps": saturated["qps"],
        "lost_at_saturation": saturated["lost"],
        "p50_ms": paced["p50_ms"],
        "p99_ms": paced["p99_ms"],
        "latency_rate_qps": args.rate,
        "latency_samples": paced["samples"],
        "lost_at_rate": paced["lost"],
    }


async def measure_server(
    responder: Responder, queries: Path, args: argparse.Namespace, dnsperf: str | None
) -> dict[str, Any]:
    server = DnsServer("127.0.0.1:0", responder)
    await server.start()
    try:
        return await measure(server.port, queries, args, dnsperf)
    finally:
        await server.stop()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    dnsperf = None if args.no_dnsperf else shutil.which("dnsperf")
    zone = build_zone(args.services)
    with tempfile.TemporaryDirectory() as work:
        queries = Path(work) / "queries.txt"
        queries.write_text("".join(f"{name} {rdtype}\n" for name, rdtype in query_mix(args.services)))

        metrics = DnsMetrics()
        responder = Responder(zone, metrics)
        wires = [dns.message.make_query(name, rdtype).to_wire() for name, rdtype in query_mix(args.services, 1000)]
        uncached = Responder(zone, DnsMetrics(), max_cached_answers=0)
        cpu_mchub = answers_per_second(lambda wire: responder.respond(wire, udp=True), wires)
        cpu_uncached = answers_per_second(lambda wire: uncached.respond(wire, udp=True), wires)
        cpu_trivial = answers_per_second(trivial_answer, wires)
        mchub = await measure_server(responder, queries, args, dnsperf)
        mchub_uncached = await measure_server(uncached, queries, args, dnsperf)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(TrivialResponder, local_addr=("127.0.0.1", 0))
        try:
            baseline = await measure(transport.get_extra_info("sockname")[1], queries, args, dnsperf)
        finally:
            transport.close()

    return {
        # Other work on this machine shows in the latency tail: say how busy it was.
        "load_average_1m": os.getloadavg()[0],
        "cores": os.cpu_count(),
        "load_generator": "dnsperf" if dnsperf else "dnspython client (child process)",
        "services": args.services,
        "headless_services": max(1, args.services // 10),
        "zone_names": zone.names,
        "seconds_per_run": args.seconds,
        "outstanding_at_saturation": OUTSTANDING,
        "mchub": mchub,
        "mchub_without_packet_cache": mchub_uncached,
        "trivial_responder": baseline,
        "qps_ratio_mchub_to_trivial": mchub["qps"] / baseline["qps"] if baseline["qps"] else None,
        "cpu_answers_per_second": {
            "mchub": cpu_mchub,
            "mchub_without_packet_cache": cpu_uncached,
            "trivial_responder": cpu_trivial,
        },
        "cpu_ratio_mchub_to_trivial": cpu_mchub / cpu_trivial,
        "cpu_ratio_mchub_without_packet_cache_to_trivial": cpu_uncached / cpu_trivial,
    }


def _print(result: dict[str, Any]) -> None:
    print(f"machine: {result['cores']} cores, load average {result['load_average_1m']:.1f}")
    print(f"load: {result['load_generator']}; zone: {result['services']} Services, {result['zone_names']} names")
    for label, key in (
        ("mchub member DNS", "mchub"),
        ("mchub, no cache", "mchub_without_packet_cache"),
        ("trivial responder", "trivial_responder"),
    ):
        row = result[key]
        print(
            f"{label:>18}: {row['qps']:>9,.0f} queries/s at saturation (lost {row['lost_at_saturation']}); "
            f"at {row['latency_rate_qps']}/s p50 {row['p50_ms']:.3f} ms, p99 {row['p99_ms']:.3f} ms"
        )
    print(f"ratio mchub / trivial: {result['qps_ratio_mchub_to_trivial']:.2f}")
    cpu = result["cpu_answers_per_second"]
    print(
        f"one core, no sockets: mchub {cpu['mchub']:,.0f} answers/s "
        f"({cpu['mchub_without_packet_cache']:,.0f}/s without its packet cache), "
        f"trivial {cpu['trivial_responder']:,.0f}/s"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        port, file, seconds, rate = sys.argv[2:6]
        print(json.dumps(python_client(int(port), Path(file), float(seconds), int(rate))))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=2000, help="queries/s of the latency run")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "dns.json")
    parser.add_argument("--no-dnsperf", action="store_true", help="use the dnspython client even if dnsperf is here")
    result = asyncio.run(main(parser.parse_args()))
    _print(result)
    args_json = parser.parse_args().json
    args_json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")

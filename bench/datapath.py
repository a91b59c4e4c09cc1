"""Datapath cost: Pod-to-Pod through the Gateway tunnel next to a plain routed path.

Builds two namespace clusters (tests/datapath/topology.py), runs one DatapathAgent
per Node, and measures in the same run:
- ``tunnel``: a Pod on east's Gateway -> a Pod on west's Gateway (VXLAN + SNAT),
- ``routed``: the same Pod -> a Pod on east's other Node (routed over the underlay,
  no tunnel; the same number of veth/bridge hops),
- ``wireguard`` (if wireguard-go is installed): the tunnel path again over WireGuard.
For each: TCP throughput (iperf3 if installed, else a Python socket blaster; the two
are not comparable with each other, only within a run) and UDP request/response RTT.
Figures go to stderr; one JSON document goes to stdout. Needs root. ~30 s.

Usage: sudo .venv/bin/python bench/datapath.py [--seconds 4] [--pings 300] [--no-wireguard]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.linux.netns import call_in_netns
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.topology import PodNs, Topology, build_topology, destroy_topology

IPERF_PORT = 5201
BLAST_PORT = 5202
ECHO_PORT = 5203


async def iperf3_throughput(client: PodNs, server: PodNs, seconds: float) -> float:
    """Bits per second received, measured by iperf3."""
    srv = await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", server.netns, "iperf3", "-s", "-1", "-p", str(IPERF_PORT),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(50):  # the server needs a moment to listen
            cli = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", client.netns, "iperf3", "-c", server.ip, "-p", str(IPERF_PORT),
                "-t", str(seconds), "-J",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, _ = await cli.communicate()
            if cli.returncode == 0:
                return float(json.loads(out)["end"]["sum_received"]["bits_per_second"])
            await asyncio.sleep(0.1)
        raise RuntimeError("iperf3 client never connected")
    finally:
        if srv.returncode is None:
            srv.kill()
        await srv.wait()


def blaster_throughput(client: PodNs, server: PodNs, seconds: float) -> float:
    """Bits per second through one TCP connection, Python threads on both ends."""
    listener = call_in_netns(server.netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((server.ip, BLAST_PORT))
    listener.listen(1)
    received = [0]

    def sink() -> None:
        conn, _ = listener.accept()
        with conn:
            while chunk := conn.recv(1 << 20):
                received[0] += len(chunk)

    thread = threading.Thread(target=sink)
    thread.start()
    sender = call_in_netns(client.netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    payload = b"\0" * (1 << 18)
    with sender:
        sender.connect((server.ip, BLAST_PORT))
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            sender.sendall(payload)
    thread.join()
    elapsed = time.monotonic() - start
    listener.close()
    return received[0] * 8 / elapsed


def udp_rtt(client: PodNs, server: PodNs, pings: int) -> dict[str, float]:
    """Median and p99 round trip (ms) of 64-byte UDP request/response exchanges."""
    echo = call_in_netns(server.netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    echo.bind((server.ip, ECHO_PORT))
    echo.settimeout(2)

    def reflect() -> None:
        for _ in range(pings + 10):
            try:
                data, peer = echo.recvfrom(2048)
            except TimeoutError:
                return
            echo.sendto(data, peer)

    thread = threading.Thread(target=reflect)
    thread.start()
    probe = call_in_netns(client.netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    probe.settimeout(1)
    samples = []
    with probe:
        for i in range(pings + 10):
            start = time.perf_counter()
            probe.sendto(i.to_bytes(8, "big") * 8, (server.ip, ECHO_PORT))
            try:
                probe.recvfrom(2048)
            except TimeoutError:
                continue
            if i >= 10:  # warm-up (ARP, conntrack, WireGuard handshake)
                samples.append((time.perf_counter() - start) * 1000)
    thread.join()
    echo.close()
    if not samples:
        raise RuntimeError("no UDP echo answered")
    samples.sort()
    return {"median_ms": statistics.median(samples), "p99_ms": samples[int(len(samples) * 0.99) - 1]}


async def measure(client: PodNs, server: PodNs, seconds: float, pings: int) -> dict[str, Any]:
    use_iperf = shutil.which("iperf3") is not None
    if use_iperf:
        bps = await iperf3_throughput(client, server, seconds)
    else:
        bps = await asyncio.to_thread(blaster_throughput, client, server, seconds)
    rtt = await asyncio.to_thread(udp_rtt, client, server, pings)
    return {"throughput_gbps": bps / 1e9, **rtt}


async def run(seconds: float, pings: int, wireguard: bool) -> dict[str, Any]:
    topo: Topology = await build_topology(("east", "west"))
    try:
        east, west = topo.clusters["east"], topo.clusters["west"]
        client, tunnel_peer, routed_peer = east.nodes[0].pod, west.nodes[0].pod, east.nodes[1].pod
        results: dict[str, Any] = {}
        driver = ClusterSetDriver(topo)
        try:
            await driver.sync()
            results["tunnel"] = await measure(client, tunnel_peer, seconds, pings)
            results["routed"] = await measure(client, routed_peer, seconds, pings)
        finally:
            await driver.stop_all(cleanup=True)
        if wireguard:
            wg_driver = ClusterSetDriver(topo, wireguard=True)
            try:
                await wg_driver.sync()
                results["wireguard"] = await measure(client, tunnel_peer, seconds, pings)
            finally:
                await wg_driver.stop_all(cleanup=True)
    finally:
        await destroy_topology(topo)
    routed = results["routed"]
    for name in ("tunnel", "wireguard"):
        if name in results:
            results[f"{name}_vs_routed"] = {
                "throughput_ratio": results[name]["throughput_gbps"] / routed["throughput_gbps"],
                "rtt_median_ratio": results[name]["median_ms"] / routed["median_ms"],
            }
    results["method"] = "iperf3" if shutil.which("iperf3") else "python-blaster"
    results["seconds_per_throughput_run"] = seconds
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="duration of each throughput run")
    parser.add_argument("--pings", type=int, default=300, help="UDP RTT samples per path")
    parser.add_argument("--no-wireguard", action="store_true", help="skip the WireGuard path")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/datapath.py needs root (network namespaces)", file=sys.stderr)
        return 2
    wireguard = not args.no_wireguard and shutil.which("wireguard-go") is not None and shutil.which("wg") is not None
    started = time.monotonic()
    results = asyncio.run(run(args.seconds, args.pings, wireguard))
    results["wall_seconds"] = round(time.monotonic() - started, 1)
    for name in ("routed", "tunnel", "wireguard"):
        if name in results:
            r = results[name]
            print(
                f"{name:>9}: {r['throughput_gbps']:6.2f} Gbit/s  RTT median {r['median_ms']:.3f} ms"
                f"  p99 {r['p99_ms']:.3f} ms",
                file=sys.stderr,
            )
    for name in ("tunnel_vs_routed", "wireguard_vs_routed"):
        if name in results:
            r = results[name]
            print(f"{name}: throughput x{r['throughput_ratio']:.2f}, RTT x{r['rtt_median_ratio']:.2f}", file=sys.stderr)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

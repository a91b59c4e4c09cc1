"""Active-active Gateways: how flows spread over 1, 2 and 3 Gateways, against single-active.

Builds two namespace clusters of four Nodes each (tests/datapath/topology.py) and runs one
DatapathAgent per Node. The client is a Pod on east-d and the server a Pod on west-d, neither
Node a Gateway. In the same run, interleaved for ``--rounds``:

- ``single``: single-active, the default (east-a and west-a the Gateways);
- ``active-N`` for N = 1, 2, 3: gatewayMode active-active over the first N Nodes of each cluster.

Figures per mode: new TCP connections per second (``--workers`` at once for ``--seconds``, each
connection's server answering with the address it saw: the east Gateway that SNATed it, so the
connections are counted per Gateway), and TCP throughput of ``--streams`` parallel iperf3
streams, with the share of bytes each east Gateway's tunnel device sent. Ratios are against
``single`` in the same round. Counts (connections per Gateway) do not depend on the machine;
rates do, and on two cores every Node shares the same two CPUs, so a second Gateway adds no
CPU and the rate ratios measure the cost of the path, not the capacity a second machine brings.

Last, ``moved``: with three Gateways, ``--flows`` long-lived connections are opened, one
Gateway leaves the set, and each connection is tested: only those that went through the Gateway
that left may break (the resilient nexthop group moves no other bucket).

Figures go to stderr; one JSON document to stdout. Needs root, iperf3. About a minute.

Usage: sudo .venv/bin/python bench/gateways.py [--seconds 3] [--rounds 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.config import TunnelConfig
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.topology import NodeNs, Topology, build_topology, destroy_topology, sh

PORT = 7300
IPERF_PORT = 5201
MODES = ("single", "active-1", "active-2", "active-3")

_CLIENT = """
import asyncio, collections, json, sys, time
ip, port, workers, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
seen, errors = collections.Counter(), 0
async def worker(end):
    global errors
    while time.monotonic() < end:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), 2)
            seen[(await asyncio.wait_for(reader.read(64), 2)).decode()] += 1
            writer.close()
        except (OSError, asyncio.TimeoutError):
            errors += 1
async def main():
    end = time.monotonic() + seconds
    await asyncio.gather(*(worker(end) for _ in range(workers)))
    print(json.dumps({"seen": seen, "errors": errors}))
asyncio.run(main())
"""

_HOLDER = """
import json, socket, sys, time
ip, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
socks, sources = [], []
for _ in range(count):
    s = socket.create_connection((ip, port), timeout=2)
    sources.append(s.recv(64).decode())
    socks.append(s)
print(json.dumps(sources), flush=True)
sys.stdin.readline()  # the Gateway set changes meanwhile
alive = []
for s in socks:
    try:
        s.settimeout(2)
        s.sendall(b"ping\\n")
        alive.append(s.recv(64) == b"ping\\n")
    except OSError:
        alive.append(False)
print(json.dumps(alive), flush=True)
"""

# Tells each connection the address it came from, then echoes the lines it sends.
_SERVER = """
import asyncio, sys
async def serve(reader, writer):
    writer.write(writer.get_extra_info("peername")[0].encode())
    await writer.drain()
    try:
        while line := await reader.readline():
            writer.write(line)
            await writer.drain()
    except OSError:
        pass
    writer.close()
async def main():
    server = await asyncio.start_server(serve, "0.0.0.0", int(sys.argv[1]), backlog=1024)
    print("ready", flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


async def _python_in(netns: str, script: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", netns, sys.executable, "-c", script, *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def _started(proc: asyncio.subprocess.Process) -> None:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 10)
    if line.strip() != b"ready":
        raise RuntimeError("server did not start")


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.kill()
    await proc.wait()


def _set_mode(driver: ClusterSetDriver, mode: str) -> None:
    driver.active_active.clear()
    if mode != "single":
        count = int(mode.split("-")[1])
        for cluster in ("east", "west"):
            driver.active_active[cluster] = tuple(f"{cluster}-{s}" for s in "abc"[:count])


async def _tx_bytes(node: NodeNs, device: str) -> int:
    found = json.loads(await sh("ip", "-n", node.netns, "-j", "-s", "link", "show", device, check=False) or "[]")
    return int(found[0]["stats64"]["tx"]["bytes"]) if found else 0


async def connections(client: NodeNs, server_ip: str, workers: int, seconds: float) -> dict[str, Any]:
    proc = await _python_in(client.pod.netns, _CLIENT, server_ip, str(PORT), str(workers), str(seconds))
    out, _ = await proc.communicate()
    found = json.loads(out)
    total = sum(found["seen"].values())
    return {"per_second": total / seconds, "by_gateway": found["seen"], "errors": found["errors"]}


async def throughput(topo: Topology, client: NodeNs, server: NodeNs, streams: int, seconds: float) -> dict[str, Any]:
    east = topo.clusters["east"]
    device = TunnelConfig().interface
    before = {n.name: await _tx_bytes(n, device) for n in east.nodes[:3]}
    srv = await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", server.pod.netns, "iperf3", "-s", "-1", "-p", str(IPERF_PORT),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(50):
            cli = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", client.pod.netns, "iperf3", "-c", server.pod.ip, "-p", str(IPERF_PORT),
                "-P", str(streams), "-t", str(seconds), "-J",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            out, _ = await cli.communicate()
            end = json.loads(out or b"{}").get("end") or {}
            if cli.returncode == 0 and "sum_received" in end:
                bps = float(end["sum_received"]["bits_per_second"])
                break
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError("iperf3 never connected")
    finally:
        await _stop(srv)
    sent = {n.name: await _tx_bytes(n, device) - before[n.name] for n in east.nodes[:3]}
    total = sum(sent.values()) or 1
    return {"gbps": bps / 1e9, "tunnel_share": {name: round(b / total, 3) for name, b in sent.items() if b}}


async def moved_flows(driver: ClusterSetDriver, topo: Topology, flows: int) -> dict[str, Any]:
    """Three Gateways, ``flows`` open connections; east-b leaves; which connections survive."""
    east, west = topo.clusters["east"], topo.clusters["west"]
    client, server = east.node("east-d"), west.node("west-d")
    _set_mode(driver, "single")
    await driver.sync()
    _set_mode(driver, "active-3")
    await driver.sync()
    echo = await _python_in(server.pod.netns, _SERVER, str(PORT + 1))
    try:
        await _started(echo)
        holder = await _python_in(client.pod.netns, _HOLDER, server.pod.ip, str(PORT + 1), str(flows))
        assert holder.stdout is not None and holder.stdin is not None
        sources = json.loads(await asyncio.wait_for(holder.stdout.readline(), 30))
        driver.active_active["east"] = ("east-a", "east-c")
        await driver.sync()
        holder.stdin.write(b"go\n")
        await holder.stdin.drain()
        alive = json.loads(await asyncio.wait_for(holder.stdout.readline(), 60))
        await _stop(holder)
    finally:
        await _stop(echo)
    left = east.node("east-b").underlay_ip
    through_left = sum(1 for s in sources if s == left)
    broken = [s for s, ok in zip(sources, alive, strict=True) if not ok]
    return {
        "flows": flows,
        "through_the_gateway_that_left": through_left,
        "broken": len(broken),
        "broken_through_others": sum(1 for s in broken if s != left),
        "by_gateway": {ip: sources.count(ip) for ip in sorted(set(sources))},
    }


async def run(seconds: float, rounds: int, workers: int, streams: int, flows: int) -> dict[str, Any]:
    topo = await build_topology(("east", "west"), nodes={"east": 4, "west": 4})
    driver = ClusterSetDriver(topo)
    results: dict[str, Any] = {mode: {"connections": [], "throughput": []} for mode in MODES}
    try:
        east, west = topo.clusters["east"], topo.clusters["west"]
        client, server = east.node("east-d"), west.node("west-d")
        srv = await _python_in(server.pod.netns, _SERVER, str(PORT))
        try:
            await _started(srv)
            for _ in range(rounds):
                for mode in MODES:
                    # Through single-active first, so each mode starts from a fresh group: a Gateway
                    # that joins a busy group only gets buckets idle for 30 s (agent.linux.spread).
                    _set_mode(driver, "single")
                    await driver.sync()
                    _set_mode(driver, mode)
                    await driver.sync()
                    results[mode]["connections"].append(await connections(client, server.pod.ip, workers, seconds))
                    results[mode]["throughput"].append(await throughput(topo, client, server, streams, seconds))
        finally:
            await _stop(srv)
        results["moved"] = await moved_flows(driver, topo, flows)
    finally:
        await driver.stop_all(cleanup=True)
        await destroy_topology(topo)
    names = {topo.clusters["east"].node(f"east-{s}").underlay_ip: f"east-{s}" for s in "abc"}
    for mode in MODES:
        runs = results[mode]
        runs["connections_per_second"] = statistics.median(r["per_second"] for r in runs["connections"])
        runs["gbps"] = statistics.median(r["gbps"] for r in runs["throughput"])
        by_gateway: dict[str, int] = {}
        for r in runs["connections"]:
            for ip, count in r["by_gateway"].items():
                by_gateway[names.get(ip, ip)] = by_gateway.get(names.get(ip, ip), 0) + count
        total = sum(by_gateway.values()) or 1
        runs["connection_share"] = {name: round(count / total, 3) for name, count in sorted(by_gateway.items())}
        runs["errors"] = sum(r["errors"] for r in runs["connections"])
    base = results["single"]
    for mode in MODES:
        results[mode]["connections_ratio"] = results[mode]["connections_per_second"] / base["connections_per_second"]
        results[mode]["gbps_ratio"] = results[mode]["gbps"] / base["gbps"]
    results["moved"]["by_gateway"] = {names.get(ip, ip): n for ip, n in results["moved"]["by_gateway"].items()}
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds over the modes")
    parser.add_argument("--workers", type=int, default=16, help="connections in flight at once")
    parser.add_argument("--streams", type=int, default=12, help="parallel iperf3 streams")
    parser.add_argument("--flows", type=int, default=60, help="long-lived connections for 'moved'")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if os.geteuid() != 0 or shutil.which("iperf3") is None:
        print("bench/gateways.py needs root (network namespaces) and iperf3", file=sys.stderr)
        return 2
    started = time.monotonic()
    results = asyncio.run(run(args.seconds, args.rounds, args.workers, args.streams, args.flows))
    results["wall_seconds"] = round(time.monotonic() - started, 1)
    results["load_average"] = os.getloadavg()
    for mode in MODES:
        r = results[mode]
        print(
            f"{mode:>9}: {r['connections_per_second']:7.0f} conn/s (x{r['connections_ratio']:.2f})"
            f" {r['gbps']:6.2f} Gbit/s (x{r['gbps_ratio']:.2f})  connections by Gateway {r['connection_share']}"
            f"  bytes by Gateway {r['throughput'][-1]['tunnel_share']}  errors {r['errors']}",
            file=sys.stderr,
        )
    m = results["moved"]
    print(
        f"    moved: east-b left; {m['through_the_gateway_that_left']} of {m['flows']} flows went through it,"
        f" {m['broken']} broke, {m['broken_through_others']} of them through another Gateway; {m['by_gateway']}",
        file=sys.stderr,
    )
    text = json.dumps(results, indent=2)
    if args.json is not None:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

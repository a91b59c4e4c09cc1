"""Overlapping CIDRs on real nodes: the NAT path against the direct path, in the same run.

The node ClusterSet of hack/nodeset (``start``): east and west share their
Pod and Service CIDRs and are globally addressed, north has its own ranges. A client Pod on
east's node that is not its Gateway sends requests, in turn, to

- ``nat``: west's exported Service, through west's global address (east's Gateway SNATs to
  east's egress address, west's Gateway translates the global address to the Pod);
- ``direct``: north's exported Service at its own ClusterIP (east's Gateway SNATs to east's
  egress address as well; no translation of the destination beyond kube-proxy's);
- ``local``: an east Service on east's Gateway node (one hop, kube-proxy only): the floor.

Both remote servers run on their cluster's Gateway node, so both paths cross the same hops.
Figures: HTTP requests per second and latency p50/p99 with wrk (``--connections`` connections
for ``--seconds``; busybox httpd closes every connection, so each request is a new connection
and new conntrack entries on every hop) and the ratio nat/direct; and the per-connection memory
cost: ``--hold`` idle TCP connections held open through each path, the conntrack entries that
adds on every node of the set (each node is a network namespace with its own table), times
the size of a conntrack entry (``nf_conntrack`` slab object, /proc/slabinfo).

Usage: sudo .venv/bin/python bench/overlap_nodes.py [--seconds 10] [--connections 8] [--hold 400] [--json FILE]
``MCHUB_NODESET_DIR=DIR`` measures a ClusterSet ``python -m hack.nodeset up DIR``
left running (and leaves it running); otherwise one is started and stopped (a few minutes).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from hack.nodeset.clusters import Cluster, EnvtestNodes
from hack.nodeset.clusterset import Mode, NodeClusterSet, for_bench
from hack.nodeset.images import TOOLS_IMAGE
from hack.nodeset.install import MEMBER_NS
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import client_pod, ensure_namespace, exec_in, fetch_until, serve, web_server

NS = "bench-overlap"
HOLD_PORT = 7071
# Accepts connections and keeps them open, idle, for the whole measurement.
HOLDER = """
import asyncio
async def hold(reader, writer):
    await asyncio.sleep(3600)
async def main():
    server = await asyncio.start_server(hold, "0.0.0.0", PORT, backlog=4096)
    await server.serve_forever()
asyncio.run(main())
""".replace("PORT", str(HOLD_PORT))
# Opens N connections to ADDRESS and holds them for SECONDS; prints how many were established.
OPENER = """
import socket, sys, time
address, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
held = []
for _ in range(count):
    s = socket.create_connection((address, PORT), timeout=5)
    held.append(s)
print(len(held), flush=True)
time.sleep(seconds)
""".replace("PORT", str(HOLD_PORT))


def holder(cluster: Cluster, name: str, node: str) -> None:
    """A Deployment holding every connection on HOLD_PORT, its Service and ServiceExport."""
    container = {
        "name": "hold",
        "image": TOOLS_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", HOLDER],
        "readinessProbe": {"tcpSocket": {"port": HOLD_PORT}, "periodSeconds": 1},
    }
    serve(cluster, NS, name, container, ("hold", HOLD_PORT), node=node)


def gateway_node(cluster: Cluster) -> str:
    """The Node the member's Gateway is on now (west's moves when a test fails its Node)."""
    return str(
        until(f"{cluster.name}'s Gateway", lambda: cluster.kubectl.json("get", "gateway", "-n", MEMBER_NS)["items"])[0][
            "metadata"
        ]["name"]
    )


def service_ip(cluster: Cluster, name: str) -> str:
    return str(
        until(name, lambda: cluster.kubectl("get", "service", name, "-n", NS, "-o", "jsonpath={.spec.clusterIP}"))
    )


_WRK_RPS = re.compile(r"Requests/sec:\s+([\d.]+)")
_WRK_LATENCY = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)
_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(cluster: Cluster, pod: str, url: str, seconds: float, connections: int) -> dict[str, float]:
    out = exec_in(
        cluster, NS, pod, "wrk", "-t", "1", "-c", str(connections), "-d", f"{int(seconds)}s", "--latency", url,
        timeout=seconds + 60,
    )  # fmt: skip
    rps = _WRK_RPS.search(out)
    latency = {q: float(v) * _UNIT[u] for q, v, u in _WRK_LATENCY.findall(out)}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    if rps is None or "50" not in latency:
        raise RuntimeError(f"unreadable wrk output:\n{out}")
    return {
        "requests_per_s": float(rps.group(1)),
        "p50_ms": round(latency["50"], 3),
        "p99_ms": round(latency["99"], 3),
        "errors": 0.0 if errors is None else 1.0,
    }


def conntrack_entries(envtest: EnvtestNodes, clusters: list[Cluster]) -> dict[str, int]:
    """Established TCP entries to HOLD_PORT in each node's conntrack table: the held
    connections' own, whatever else the table holds or forgets meanwhile (the previous
    path's closed connections, the requests of other measurements)."""
    counts = {}
    for cluster in clusters:
        for node in cluster.nodes:
            out = envtest.node_exec(
                node.name, "conntrack", "-L", "-p", "tcp", "--dport", str(HOLD_PORT), "--state", "ESTABLISHED",
                check=False,
            )  # fmt: skip
            counts[node.name] = sum(1 for line in out.splitlines() if line.startswith("tcp"))
    return counts


def conntrack_object_bytes() -> int:
    """The size of one conntrack entry: the nf_conntrack slab's object size."""
    for line in Path("/proc/slabinfo").read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "nf_conntrack":
            return int(fields[3])
    raise RuntimeError("no nf_conntrack slab in /proc/slabinfo (is the conntrack module loaded?)")


def held_cost(clusterset: NodeClusterSet, east: Cluster, pod: str, address: str, count: int) -> dict[str, Any]:
    """Conntrack entries ``count`` idle connections through one path add, node by node."""
    assert clusterset.envtest is not None
    clusters = list(clusterset.clusters.values())
    time.sleep(2)
    before = conntrack_entries(clusterset.envtest, clusters)
    hold_for = 25.0
    started = time.monotonic()
    proc = east.kubectl.popen("-n", NS, "exec", pod, "--", "python3", "-c", OPENER, address, str(count), str(hold_for))
    assert proc.stdout is not None
    opened = int(proc.stdout.readline().strip() or 0)
    during = conntrack_entries(clusterset.envtest, clusters)
    proc.wait(timeout=hold_for + 60)
    added = {node: during[node] - before.get(node, 0) for node in during}
    per_connection = {node: round(n / count, 2) for node, n in added.items() if n > count // 2}
    entries = sum(round(v) for v in per_connection.values())
    size = conntrack_object_bytes()
    return {
        "connections": opened,
        "seconds_to_open": round(time.monotonic() - started, 1),
        "entries_per_connection_by_node": per_connection,
        "entries_per_connection": entries,
        "entry_bytes": size,
        "bytes_per_connection": entries * size,
    }


def measure(clusterset: NodeClusterSet, seconds: float, connections: int, hold: int) -> dict[str, Any]:
    east, west, north = (clusterset.cluster(name) for name in ("east", "west", "north"))
    clusterset.ensure(Mode())
    for cluster in (east, west, north):
        ensure_namespace(cluster, NS)
    gateway = {cluster.name: gateway_node(cluster) for cluster in (east, west, north)}
    web_server(west, NS, "web", node=gateway["west"])
    web_server(north, NS, "nweb", node=gateway["north"])
    web_server(east, NS, "eweb", node=gateway["east"], export=False)
    holder(west, "hold", gateway["west"])
    holder(north, "nhold", gateway["north"])
    pod = "client"
    client_pod(east, NS, pod, node=east.nodes[-1].name)
    paths = {
        "nat": (service_ip(east, "antrea-mc-web"), service_ip(east, "antrea-mc-hold")),
        "direct": (service_ip(east, "antrea-mc-nweb"), service_ip(east, "antrea-mc-nhold")),
        "local": (service_ip(east, "eweb"), ""),
    }
    results: dict[str, Any] = {}
    for web_ip, _ in paths.values():
        fetch_until(east, NS, pod, f"http://{web_ip}/")
    # Interleaved rounds, so a change of the machine's load hits both paths alike.
    rounds: dict[str, list[dict[str, float]]] = {path: [] for path in paths}
    for _ in range(3):
        for path, (web_ip, _) in paths.items():
            rounds[path].append(wrk(east, pod, f"http://{web_ip}:80/", seconds, connections))
            print(path, rounds[path][-1], file=sys.stderr, flush=True)
    for path, samples in rounds.items():
        ordered = sorted(samples, key=lambda s: s["requests_per_s"])
        results[path] = {**ordered[len(ordered) // 2], "rounds": samples}
    for path in ("nat", "direct"):
        results[path]["held"] = held_cost(clusterset, east, pod, paths[path][1], hold)
        print(path, results[path]["held"], file=sys.stderr, flush=True)
    for cluster in (east, west, north):
        cluster.kubectl("delete", "namespace", NS, "--wait=false")
    nat, direct = results["nat"], results["direct"]
    results["ratio"] = {
        "requests_per_s_nat_over_direct": round(nat["requests_per_s"] / direct["requests_per_s"], 3),
        "p50_nat_over_direct": round(nat["p50_ms"] / direct["p50_ms"], 3),
        "p99_nat_over_direct": round(nat["p99_ms"] / direct["p99_ms"], 3),
    }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--hold", type=int, default=400)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with for_bench(overlap=True) as clusterset:
        results = measure(clusterset, args.seconds, args.connections, args.hold)
    print(f"{'path':8} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'conntrack entries/conn':>23} {'bytes/conn':>10}")
    for path in ("nat", "direct", "local"):
        row = results[path]
        held = row.get("held") or {}
        print(
            f"{path:8} {row['requests_per_s']:>9.0f} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} "
            f"{held.get('entries_per_connection', '-'):>23} {held.get('bytes_per_connection', '-'):>10}"
        )
    print("nat/direct:", results["ratio"])
    if args.json:
        args.json.write_text(json.dumps({"results": results, "figures": clusterset.figures}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

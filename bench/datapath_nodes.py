"""Datapath on real nodes: Pods through kube-proxy and the Gateways, against the same Pods in one cluster.

The ClusterSet of hack/nodeset (north, east and west with envtest's real nodes: kubelet,
containerd, kube-proxy in iptables mode, a CNI bridge), mchub installed as INSTALL.md says.
East and west each run an iperf3 server and an HTTP server (busybox httpd) behind a Service,
on a node that is not their Gateway; west exports its Services. Client Pods run on east's
Gateway node and on its other node. For each encryption mode (VXLAN, WireGuard) and each
client node, in the same run:

- ``local``: the client to east's own Service (kube-proxy, one hop between nodes): the floor;
- ``cross``: the client to west's Service through ``antrea-mc-<name>`` (kube-proxy, the
  Gateways' tunnel, kube-proxy again).

Figures: iperf3 TCP throughput (one stream, ``--seconds``), and HTTP request latency (curl,
a new connection per request, ``--requests`` of them: p50, p99), each with its ratio to
``local``. Prints them and writes JSON (``--json``). Needs root and what the node tests
need. ``MCHUB_NODESET_DIR=DIR`` measures a ClusterSet ``python -m hack.nodeset up --plain DIR``
left running (and leaves it running); otherwise one is started and stopped (about 2 minutes).
Every cluster has its own ranges there (``--plain``): the direct path. bench/overlap_nodes.py
measures the path through global addresses against it.

Usage: sudo .venv/bin/python bench/datapath_nodes.py [--seconds 5] [--requests 200] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from hack.nodeset.clusters import Cluster
from hack.nodeset.clusterset import Mode, NodeClusterSet, for_bench
from hack.nodeset.images import TOOLS_IMAGE
from hack.nodeset.kubectl import KubectlError, until
from hack.nodeset.workloads import client_pod, ensure_namespace, exec_in, fetch_until, time_requests, web_server

NS = "bench"
IPERF_PORT = 5201


def iperf_server(cluster: Cluster, name: str, node: str, *, export: bool) -> None:
    """An iperf3 server Deployment on ``node``, its Service and (``export``) its ServiceExport."""
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "terminationGracePeriodSeconds": 0,
                        "nodeSelector": {"kubernetes.io/hostname": node},
                        "containers": [
                            {
                                "name": "iperf",
                                "image": TOOLS_IMAGE,
                                "imagePullPolicy": "IfNotPresent",
                                "command": ["iperf3", "-s", "-p", str(IPERF_PORT)],
                                "readinessProbe": {"tcpSocket": {"port": IPERF_PORT}, "periodSeconds": 1},
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"app": name}, "ports": [{"name": "iperf", "port": IPERF_PORT}]},
        },
    ]
    if export:
        objects.append(
            {
                "apiVersion": "multicluster.x-k8s.io/v1alpha1",
                "kind": "ServiceExport",
                "metadata": {"name": name, "namespace": NS},
            }
        )
    cluster.kubectl.apply(yaml.safe_dump_all(objects))
    cluster.kubectl("-n", NS, "rollout", "status", f"deployment/{name}", "--timeout=120s", timeout=130)


def service_ip(cluster: Cluster, name: str) -> str:
    return str(
        until(name, lambda: cluster.kubectl("get", "service", name, "-n", NS, "-o", "jsonpath={.spec.clusterIP}"))
    )


def throughput(cluster: Cluster, pod: str, ip: str, seconds: float) -> float:
    """Gbit/s received by the server, one TCP stream (iperf3 retries until the path is up)."""
    command = ("iperf3", "-c", ip, "-p", str(IPERF_PORT), "-t", str(seconds), "-J", "--connect-timeout", "3000")
    for _ in range(20):
        try:
            out = exec_in(cluster, NS, pod, *command, timeout=seconds + 30)
            return float(json.loads(out)["end"]["sum_received"]["bits_per_second"]) / 1e9
        except (KubectlError, subprocess.TimeoutExpired, KeyError, ValueError):
            time.sleep(1)
    raise RuntimeError(f"iperf3 to {ip} never ran")


def measure(clusterset: NodeClusterSet, seconds: float, requests: int) -> list[dict[str, Any]]:
    east, west = clusterset.cluster("east"), clusterset.cluster("west")
    for cluster in (east, west):
        ensure_namespace(cluster, NS)
    # West's servers are off its Gateway (every member's first node is its Gateway here) and
    # exported. East's local servers, one per node, are not exported (antrea-mc-<name> in east
    # leads to west alone); a client's local floor is the server on the other node: one hop
    # between nodes, as the cross-cluster path has at least.
    web_server(west, NS, "web", node=west.nodes[-1].name)
    iperf_server(west, "iperf", west.nodes[-1].name, export=True)
    for index, east_node in enumerate(east.nodes):
        web_server(east, NS, f"web-{index}", node=east_node.name, export=False)
        iperf_server(east, f"iperf-{index}", east_node.name, export=False)
    clients = {"gateway node": east.nodes[0].name, "other node": east.nodes[-1].name}
    floor_of = {east.nodes[0].name: len(east.nodes) - 1, east.nodes[-1].name: 0}
    for node in clients.values():
        client_pod(east, NS, f"client-{node}", node=node)
    rows: list[dict[str, Any]] = []
    for encryption in ("none", "wireGuard"):
        clusterset.ensure(Mode(encryption=encryption))
        cross = {"web": service_ip(east, "antrea-mc-web"), "iperf": service_ip(east, "antrea-mc-iperf")}
        for where, node in clients.items():
            pod = f"client-{node}"
            floor = floor_of[node]
            local = {"web": service_ip(east, f"web-{floor}"), "iperf": service_ip(east, f"iperf-{floor}")}
            for path, ips in (("local", local), ("cross", cross)):
                fetch_until(east, NS, pod, f"http://{ips['web']}/")
                gbps = throughput(east, pod, ips["iperf"], seconds)
                timings = time_requests(east, NS, pod, f"http://{ips['web']}/", requests)
                rows.append(
                    {
                        "tunnel": "VXLAN" if encryption == "none" else "WireGuard",
                        "client": where,
                        "path": path,
                        "gbit_s": round(gbps, 3),
                        "p50_ms": round(timings.p50, 2),
                        "p99_ms": round(timings.p99, 2),
                        "failed": timings.failed,
                    }
                )
                print(rows[-1], file=sys.stderr, flush=True)
    clusterset.ensure(Mode())
    for cluster in (east, west):
        cluster.kubectl("delete", "namespace", NS, "--wait=false")
    return rows


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    floors = {(r["tunnel"], r["client"]): r for r in rows if r["path"] == "local"}
    out = []
    for row in rows:
        if row["path"] != "cross":
            continue
        floor = floors[(row["tunnel"], row["client"])]
        out.append(
            {
                **row,
                "local_gbit_s": floor["gbit_s"],
                "local_p50_ms": floor["p50_ms"],
                "local_p99_ms": floor["p99_ms"],
                "throughput_ratio": round(row["gbit_s"] / floor["gbit_s"], 3) if floor["gbit_s"] else None,
                "p50_extra_ms": round(row["p50_ms"] - floor["p50_ms"], 2),
            }
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with for_bench(overlap=False) as clusterset:
        rows = measure(clusterset, args.seconds, args.requests)
    summary = with_ratios(rows)
    head = ("tunnel", "client", "Gbit/s cross/local", "ratio", "p50 ms cross/local", "p99 ms cross")
    print(f"{head[0]:9} {head[1]:12} {head[2]:>22} {head[3]:>6} {head[4]:>20} {head[5]:>12}")
    for row in summary:
        print(
            f"{row['tunnel']:9} {row['client']:12} {row['gbit_s']:>10.2f} / {row['local_gbit_s']:<9.2f} "
            f"{row['throughput_ratio']:>6} {row['p50_ms']:>9.2f} / {row['local_p50_ms']:<8.2f} {row['p99_ms']:>12.2f}"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "summary": summary, "figures": clusterset.figures}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

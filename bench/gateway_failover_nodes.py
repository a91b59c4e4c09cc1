"""Gateway failures on real nodes: single-active (the default) against active-active, same run.

The ClusterSet of hack/nodeset (north, east, west; west's two Nodes are both Gateway
candidates), mchub installed as INSTALL.md says. West serves a web Deployment exported to
east; a Pod on east's other Node sends a GET every 0.1 s (1 s timeout, a new connection each)
to its imported Service. For each mode, one west Gateway that carries east's requests meets:

- ``killed``: the Node stops (kubelet frozen, cable pulled), then comes back;
- ``cut``: only its cable is pulled, then plugged back;
- ``drained``: ``kubectl drain --ignore-daemonsets``, then uncordoned.

In single-active mode that is the Gateway; in active-active mode the Gateway east's Gateway is
paired with (agent.pairing), both west Nodes being Gateways. The member and the web server run
on the other Node, so the failure hits the path, not the controller or the backend. Figures per
case: failed requests and the gap (from the last answered request before the first failure to
the first answered after it), and when the Gateway set changed. Prints a table, writes JSON
(``--json``). Needs root and what the node tests need. ``MCHUB_NODESET_DIR=DIR`` measures a
ClusterSet ``python -m hack.nodeset up --plain DIR`` left running; otherwise one is started and
stopped. About ten minutes.

Usage: sudo .venv/bin/python bench/gateway_failover_nodes.py [--json FILE] [--cases killed cut drained]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.pairing import pair
from hack.nodeset.api_apart import api_apart
from hack.nodeset.clusters import Cluster, EnvtestNodes
from hack.nodeset.clusterset import Mode, NodeClusterSet, for_bench
from hack.nodeset.install import MEMBER_CONFIG, MEMBER_NS, restart_workloads, set_config
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import (
    client_pod,
    ensure_namespace,
    fetch_until,
    gaps,
    loop_outcomes,
    request_loop,
    web_server,
)
from member.gateway.controller import REPORT_HOLD_SECONDS

NS = "failover"
SETTLE = 8.0  # seconds of requests after the failure is in place, and after it is undone


def _gateways(cluster: Cluster) -> list[str]:
    return sorted(g["metadata"]["name"] for g in cluster.kubectl.json("get", "gateway", "-n", MEMBER_NS)["items"])


def _member_node(cluster: Cluster) -> str:
    pods = cluster.kubectl.json("get", "pods", "-n", MEMBER_NS, "-l", "component=mchub-member")["items"]
    return str(pods[0]["spec"]["nodeName"])


def _ready(cluster: Cluster, node: str) -> bool:
    conditions = cluster.kubectl.json("get", "node", node)["status"]["conditions"]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _put_member_on(west: Cluster, node: str) -> None:
    if _member_node(west) == node:
        return
    others = [n.name for n in west.nodes if n.name != node]
    for other in others:
        west.kubectl("cordon", other)
    try:
        restart_workloads([(west, "deployment/mchub-member")])
    finally:
        for other in others:
            west.kubectl("uncordon", other)


def _target(east: Cluster, west: Cluster, mode: str) -> str:
    """The west Gateway that carries east's requests, the member on the other Node."""
    nodes = sorted(node.name for node in west.nodes)
    if mode == "single-active":
        member = _member_node(west)
        if until("west's Gateway", lambda: next(iter(_gateways(west)), None)) == member:
            west.kubectl("cordon", member)  # a cordon moves the Gateway; the uncordon does not move it back
            try:
                until("west's Gateway off the member's Node", lambda: _gateways(west) not in ([], [member]))
            finally:
                west.kubectl("uncordon", member)
        return str(until("west's Gateway", lambda: next(iter(_gateways(west)), None)))
    until("both west Nodes Gateways", lambda: _gateways(west) == nodes, timeout=90)
    ips = {n: str(west.kubectl.json("get", "gateway", n, "-n", MEMBER_NS)["gatewayIP"]) for n in nodes}
    (east_gateway,) = east.kubectl.json("get", "gateway", "-n", MEMBER_NS)["items"]
    paired = str(pair(IPv4Address(east_gateway["gatewayIP"]), [IPv4Address(ip) for ip in ips.values()]))
    target = next(n for n, ip in ips.items() if ip == paired)
    _put_member_on(west, next(n for n in nodes if n != target))
    until("both west Nodes Gateways again", lambda: _gateways(west) == nodes, timeout=90)
    return target


def _actions(envtest: EnvtestNodes, west: Cluster, case: str, target: str) -> tuple[Callable[[], object], ...]:
    """How to inflict ``case`` on ``target``, and how to undo it."""
    if case == "killed":
        return (lambda: envtest.fail_node(target), lambda: envtest.recover_node(target))
    if case == "cut":
        return (lambda: envtest.cut_link(target), lambda: envtest.restore_link(target))
    return (
        lambda: west.kubectl(
            "drain", target, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=120s"
        ),
        lambda: west.kubectl("uncordon", target),
    )


def _case(
    east: Cluster,
    west: Cluster,
    url: str,
    *,
    name: str,
    target: str,
    fail: Callable[[], object],
    undo: Callable[[], object],
) -> dict[str, Any]:
    other = next(n.name for n in west.nodes if n.name != target)
    web_server(west, NS, "web", node=other)
    fetch_until(east, NS, "client", url)
    request_loop(east, NS, name, node=east.nodes[-1].name, url=url)
    time.sleep(3)
    before = _gateways(west)
    started = time.time()
    fail()
    moved_s = None
    try:
        deadline = started + 60
        while time.time() < deadline:
            if _gateways(west) != before:
                moved_s = round(time.time() - started, 1)
                break
            time.sleep(0.5)
        time.sleep(SETTLE)
    finally:
        undo()
    until(f"{target} Ready", lambda: _ready(west, target), timeout=180)
    # As many Gateways as before (single-active: the Gateway does not move back).
    until("the Gateways back", lambda: len(_gateways(west)) == len(before), timeout=120)
    time.sleep(SETTLE)
    outcomes = [o for o in loop_outcomes(east, NS, name) if o.at >= started - 1]
    east.kubectl("-n", NS, "delete", "pod", name, "--wait=false")
    found = gaps(outcomes, since=started)
    return {
        "requests": len(outcomes),
        "failed": sum(not o.ok for o in outcomes),
        # curl's exit code of each failure: 28 no answer in time, 7 refused, 56 reset.
        "failure_codes": sorted(o.code for o in outcomes if not o.ok),
        "gap_ms": round(max((g.seconds for g in found), default=0.0) * 1000),
        "gaps": len(found),
        "gateways_changed_s": moved_s,
    }


CASES = ("killed", "cut", "drained")


def measure(clusterset: NodeClusterSet, cases: tuple[str, ...] = CASES) -> dict[str, dict[str, Any]]:
    clusterset.ensure(Mode())
    envtest = clusterset.envtest
    assert isinstance(envtest, EnvtestNodes), "needs the nodes of hack/nodeset (fail_node, cut_link)"
    east, west = clusterset.cluster("east"), clusterset.cluster("west")
    for cluster in (east, west):
        ensure_namespace(cluster, NS)
    web_server(west, NS, "web")
    client_pod(east, NS, "client", node=east.nodes[-1].name)
    service = until(
        "antrea-mc-web in east",
        lambda: east.kubectl("get", "service", "antrea-mc-web", "-n", NS, "-o", "jsonpath={.spec.clusterIP}"),
    )
    url = f"http://{service}/"
    results: dict[str, dict[str, Any]] = {}
    try:
        for mode in ("single-active", "active-active"):
            set_config(west, MEMBER_CONFIG, gatewayMode=mode)
            for case in cases:
                # After a move on a report the member acts on no report for REPORT_HOLD_SECONDS
                # (damping): each case starts after the hold of the one before.
                time.sleep(REPORT_HOLD_SECONDS)
                target = _target(east, west, mode)
                fail, undo = _actions(envtest, west, case, target)
                row = _case(east, west, url, name=f"loop-{mode[:6]}-{case}", target=target, fail=fail, undo=undo)
                results[f"{mode} {case}"] = row
                print(f"{mode:13} {case:8} {row}", file=sys.stderr, flush=True)
    finally:
        set_config(west, MEMBER_CONFIG, gatewayMode="single-active")
        for cluster in (east, west):
            cluster.kubectl("delete", "namespace", NS, "--wait=false")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=CASES, help="which failures (default: all)")
    parser.add_argument(
        "--api-apart",
        action="store_true",
        help="a ClusterSet started here reaches its API servers apart from the Nodes (hack/nodeset/api_apart.py)",
    )
    args = parser.parse_args()
    with for_bench(overlap=False, api_apart=args.api_apart) as clusterset:
        assert clusterset.envtest is not None
        apart = api_apart(clusterset.envtest.directory)
        print(f"API servers: {'apart from the Nodes' if apart else 'behind every Node'}", file=sys.stderr)
        results = measure(clusterset, tuple(args.cases))
    print(f"{'mode':13} {'case':8} {'failed':>7} {'of':>5} {'gap ms':>8} {'set changed s':>14}")
    for key, row in results.items():
        mode, case = key.split()
        print(
            f"{mode:13} {case:8} {row['failed']:>7} {row['requests']:>5} {row['gap_ms']:>8}"
            f" {row['gateways_changed_s'] if row['gateways_changed_s'] is not None else '-':>14}"
        )
    if args.json:
        figures = {"cases": results, "api_servers_apart": apart, "load_average": os.getloadavg()}
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

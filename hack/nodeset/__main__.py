"""python -m hack.nodeset up|demo|down DIR: the ClusterSet on real nodes, by hand.

up DIR     build the images, start north (leader and member), east and west with nodes
           (../shared/envtest, root), install mchub as deploy/INSTALL.md says; prints the
           kubectl commands to look at it. East and west share their Pod and Service
           CIDRs and the hub has a global CIDR (they are globally addressed; north has its
           own ranges); --plain: every cluster its own ranges, no global CIDR;
           --api-apart: Pods reach the API servers at the host's underlay address, not
           through every Node (hack/nodeset/api_apart.py)
demo DIR   up, then west serves `hello from <Pod>`, exports it, and a Pod in east fetches
           it through the ClusterSet IP; prints the answer and the command to repeat it
down DIR   stop everything under DIR and remove it
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hack.nodeset import images
from hack.nodeset.clusters import EnvtestNodes, nodes_unavailable_reason
from hack.nodeset.clusterset import NodeClusterSet, attach, start
from hack.nodeset.install import LEADER_NS, MEMBER_NS, cluster_id, restart_workloads
from hack.nodeset.workloads import client_pod, ensure_namespace, fetch_until, web_server


def _summary(clusterset: NodeClusterSet) -> None:
    for name, seconds in clusterset.figures.items():
        print(f"  {name}: {seconds:.1f}")
    for cluster in clusterset.clusters.values():
        print(f"{cluster.name}: export KUBECONFIG={cluster.kubeconfig}")
    print(f"kubectl --kubeconfig {clusterset.leader.kubeconfig} get clusterset -n antrea-multicluster")


def demo(clusterset: NodeClusterSet) -> None:
    east, west = clusterset.cluster("east"), clusterset.cluster("west")
    ensure_namespace(west, "demo")
    ensure_namespace(east, "demo")
    web_server(west, "demo", "nginx")
    client_pod(east, "demo", "client", node=east.nodes[-1].name)
    started = time.monotonic()
    ip = ""
    while not ip and time.monotonic() - started < 60:
        ip = east.kubectl("get", "serviceimport", "nginx", "-n", "demo", "-o", "jsonpath={.spec.ips[0]}", check=False)
        time.sleep(0.5)
    answer = fetch_until(east, "demo", "client", f"http://{ip}/")
    print(f"\n{cluster_id('east')} Pod demo/client on {east.nodes[-1].name} -> ClusterSet IP {ip}: hello from {answer}")
    print(f"repeat: kubectl --kubeconfig {east.kubeconfig} exec -n demo client -- curl -s http://{ip}/")
    print(f"gateways: kubectl --kubeconfig {east.kubeconfig} get gateway,clusterinfoimport -n {MEMBER_NS}")


def reload(clusterset: NodeClusterSet) -> None:
    assert clusterset.envtest is not None
    clusterset.envtest.load_images(images.build_mchub())
    restart_workloads([(clusterset.leader, "deployment/mchub-hub")], namespace=LEADER_NS)
    restart_workloads(
        [(c, w) for c in clusterset.clusters.values() for w in ("deployment/mchub-member", "daemonset/mchub-agent")]
    )
    print("reloaded")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.nodeset", description=__doc__.split("\n\n")[0])
    parser.add_argument("verb", choices=("up", "demo", "reload", "down"))
    parser.add_argument("dir", type=Path)
    parser.add_argument(
        "--plain", action="store_true", help="up/demo: every cluster its own ranges (default: east and west overlap)"
    )
    parser.add_argument(
        "--api-apart",
        action="store_true",
        help="up/demo: the API servers at an address of their own, not behind every Node",
    )
    args = parser.parse_args(argv)
    directory = args.dir.resolve()
    if args.verb == "down":
        EnvtestNodes(directory).down()
        return 0
    reason = nodes_unavailable_reason()
    if reason is not None:
        print(f"nodeset: {reason}", file=sys.stderr)
        return 3
    if args.verb == "reload":
        reload(attach(directory))
        return 0
    clusterset = start(directory, overlap=not args.plain, api_apart=args.api_apart)
    _summary(clusterset)
    if args.verb == "demo":
        demo(clusterset)
    print(f"stop with: python -m hack.nodeset down {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

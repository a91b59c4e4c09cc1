"""Clusters made of network namespaces, standing in for real member clusters.

Each cluster has two Nodes (``<id>-a`` and ``<id>-b``; or up to four, to ``<id>-d``), each a namespace with one
Pod namespace behind a veth. Every Node has a leg on one shared underlay bridge
(inside its own "underlay" namespace). The topology itself plays the primary CNI:
Pods route via their Node, and the Nodes of a cluster route each other's Pod CIDRs
over the underlay. Nothing routes between clusters until the agent does.

Addressing (all inside the test's namespaces):
  underlay 198.18.0.0/16 (benchmark range): Node <c>/<n> is 198.18.<c>.<n>
  Pod CIDR of Node <c>/<n>: 10.<a>.<n>.0/24, its Pod 10.<a>.<n>.10, the Node 10.<a>.<n>.1
  cluster Pod CIDR 10.<a>.0.0/16, Service CIDR 10.10<a>.0.0/16
where <a> is <c>, unless the cluster reuses another's ranges (``same_ranges``: overlapping
CIDRs, as clusters made from one template have).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.linux.wireguard import WG_RUN_DIR, socket_owner_pid

NODE_SUFFIXES = ("a", "b", "c", "d")


@dataclass(frozen=True)
class PodNs:
    netns: str
    ip: str


@dataclass(frozen=True)
class NodeNs:
    name: str
    """The Kubernetes Node name, e.g. ``east-a``."""
    netns: str
    underlay_ip: str
    pod_cidr: str
    pod: PodNs


@dataclass(frozen=True)
class ClusterNs:
    cluster_id: str
    index: int
    nodes: tuple[NodeNs, ...]
    pod_cidr: str
    service_cidr: str

    def node(self, name: str) -> NodeNs:
        return next(n for n in self.nodes if n.name == name)


@dataclass
class Topology:
    run_id: str
    underlay_netns: str
    clusters: dict[str, ClusterNs] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)

    @property
    def wireguard_prefix(self) -> str:
        """Every WireGuard device name of this run starts with it (unique machine-wide)."""
        return f"mcw{self.run_id}"

    def wireguard_name(self, node: NodeNs) -> str:
        cluster, suffix = node.name.rsplit("-", 1)
        return f"{self.wireguard_prefix}{cluster[0]}{suffix}"


class CommandFailed(RuntimeError):
    pass


async def sh(*argv: str, check: bool = True, stdin: bytes | None = None) -> str:
    """Run a command, return stdout; raise CommandFailed with stderr on failure."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin)
    if check and proc.returncode != 0:
        raise CommandFailed(f"{' '.join(argv)} -> {proc.returncode}: {err.decode().strip()}")
    return out.decode()


async def build_topology(
    cluster_ids: Sequence[str] = ("east", "west", "north"),
    same_ranges: Mapping[str, str] | None = None,
    nodes: Mapping[str, int] | None = None,
) -> Topology:
    """Create the namespaces; on any failure, remove what was created and re-raise.
    ``same_ranges``: cluster ID -> the (earlier) cluster whose Pod and Service CIDRs it reuses.
    ``nodes``: cluster ID -> how many Nodes it has (default two: ``-a`` and ``-b``; at most four)."""
    topo = Topology(run_id=secrets.token_hex(3), underlay_netns="")
    topo.underlay_netns = f"mc{topo.run_id}-ul"
    indexes = {cluster_id: i for i, cluster_id in enumerate(cluster_ids, start=1)}
    try:
        await _add_netns(topo, topo.underlay_netns)
        await sh("ip", "-n", topo.underlay_netns, "link", "add", "br0", "type", "bridge")
        await sh("ip", "-n", topo.underlay_netns, "link", "set", "br0", "up")
        for cluster_id, c_index in indexes.items():
            ranges = indexes[(same_ranges or {}).get(cluster_id, cluster_id)]
            count = (nodes or {}).get(cluster_id, 2)
            topo.clusters[cluster_id] = await _build_cluster(topo, cluster_id, c_index, ranges, NODE_SUFFIXES[:count])
    except BaseException:
        await destroy_topology(topo)
        raise
    return topo


@contextlib.asynccontextmanager
async def built_topology(
    cluster_ids: Sequence[str] = ("east", "west", "north"),
    same_ranges: Mapping[str, str] | None = None,
    nodes: Mapping[str, int] | None = None,
) -> AsyncIterator[Topology]:
    """build_topology for the length of a ``with``; every namespace goes afterwards."""
    topo = await build_topology(cluster_ids, same_ranges, nodes)
    try:
        yield topo
    finally:
        await destroy_topology(topo)


async def _build_cluster(topo: Topology, cluster_id: str, c: int, a: int, suffixes: Sequence[str]) -> ClusterNs:
    nodes = []
    for n, suffix in enumerate(suffixes, start=1):
        name = f"{cluster_id}-{suffix}"
        node = NodeNs(
            name=name,
            netns=f"mc{topo.run_id}-{name}",
            underlay_ip=f"198.18.{c}.{n}",
            pod_cidr=f"10.{a}.{n}.0/24",
            pod=PodNs(netns=f"mc{topo.run_id}-{name}-pod", ip=f"10.{a}.{n}.10"),
        )
        await _build_node(topo, node, c, n)
        nodes.append(node)
    for node in nodes:  # the "primary CNI": in-cluster Pod routes over the underlay
        for other in nodes:
            if other is not node:
                await sh("ip", "-n", node.netns, "route", "add", other.pod_cidr, "via", other.underlay_ip, "dev", "ul0")
    return ClusterNs(cluster_id, c, tuple(nodes), f"10.{a}.0.0/16", f"10.10{a}.0.0/16")


def underlay_leg(node: NodeNs) -> str:
    """The Node's port on the underlay bridge (in the underlay namespace): its cable."""
    _, _, c, n = node.underlay_ip.split(".")
    return f"u{c}{n}"


async def set_cable(topo: Topology, node: NodeNs, state: str) -> None:
    """Pull (``down``) or plug back (``up``) the Node's cable: no packet in or out meanwhile,
    while the Node keeps its addresses and routes."""
    await sh("ip", "-n", topo.underlay_netns, "link", "set", underlay_leg(node), state)


async def _build_node(topo: Topology, node: NodeNs, c: int, n: int) -> None:
    ul, ns, pod = topo.underlay_netns, node.netns, node.pod.netns
    await _add_netns(topo, ns)
    await _add_netns(topo, pod)
    leg = underlay_leg(node)
    await sh("ip", "-n", ul, "link", "add", leg, "type", "veth", "peer", "name", "ul0", "netns", ns)
    await sh("ip", "-n", ul, "link", "set", leg, "master", "br0", "up")
    await sh("ip", "-n", ns, "addr", "add", f"{node.underlay_ip}/16", "dev", "ul0")
    await sh("ip", "-n", ns, "link", "set", "ul0", "up")
    await sh("ip", "-n", ns, "link", "set", "lo", "up")
    await sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
    node_pod_ip = node.pod_cidr.replace("0/24", "1")  # the Node's address on the Pod network
    await sh("ip", "-n", ns, "link", "add", "vp0", "type", "veth", "peer", "name", "eth0", "netns", pod)
    await sh("ip", "-n", ns, "addr", "add", f"{node_pod_ip}/24", "dev", "vp0")
    await sh("ip", "-n", ns, "link", "set", "vp0", "up")
    await sh("ip", "-n", pod, "addr", "add", f"{node.pod.ip}/24", "dev", "eth0")
    await sh("ip", "-n", pod, "link", "set", "eth0", "up")
    await sh("ip", "-n", pod, "link", "set", "lo", "up")
    await sh("ip", "-n", pod, "route", "add", "default", "via", node_pod_ip)


async def _add_netns(topo: Topology, name: str) -> None:
    await sh("ip", "netns", "add", name)
    topo.namespaces.append(name)


async def destroy_topology(topo: Topology) -> None:
    """Stop this run's wireguard-go daemons, remove their sockets, delete every namespace."""
    for sock in sorted(Path(WG_RUN_DIR).glob(f"{topo.wireguard_prefix}*.sock")):
        pid = socket_owner_pid(sock.name.removesuffix(".sock"))
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()
    for name in reversed(topo.namespaces):
        await sh("ip", "netns", "del", name, check=False)
    topo.namespaces.clear()

"""A whole ClusterSet on nodes: images built, clusters up, mchub installed as a user does.

The guide's topology: ``north`` (one node) is the leader and a member too (dual role),
``east`` and ``west`` (two nodes each) are members. One Gateway candidate in north and east,
both nodes in west (so the Gateway can fail over). Against a user's clusters
(``MCHUB_E2E_CLUSTERS``) the first is the leader and every one joins; their images must
already be on their nodes.

The ranges overlap (``overlap``, the default): east and west share one Pod CIDR and one Service
CIDR (as clusters made from one template do; north keeps its own), and the hub has a global CIDR
(``GLOBAL_CIDR``): east and west are globally addressed and reach each other through their global
blocks, while traffic from them to north keeps north's own addresses. One ClusterSet thus carries
both paths, NATed and direct; ``overlap=False`` gives every cluster envtest's own distinct ranges.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hack.nodeset import clusterdns, images
from hack.nodeset.api_apart import serve_api_apart
from hack.nodeset.clusters import Cluster, EnvtestNodes, user_clusters
from hack.nodeset.install import (
    AGENT_CONFIG,
    HUB_NODE_PORT,
    MEMBER_CONFIG,
    Installed,
    clusterset_ready,
    install_leader,
    join_member,
    restart_workloads,
    set_config,
    wait_member,
)
from hack.nodeset.kubectl import until

TOPOLOGY = {"north": 1, "east": 2, "west": 2}
GLOBAL_CIDR = "242.0.0.0/16"
# The overlapping ClusterSet's ranges: north its own, east and west the same.
OVERLAP_RANGES = {
    "north": ("10.1.0.0/16", "10.96.0.0/16"),
    "east": ("10.2.0.0/16", "10.97.0.0/16"),
    "west": ("10.2.0.0/16", "10.97.0.0/16"),
}


def overlap_env(topology: dict[str, int]) -> dict[str, str]:
    """envtest's variables giving the clusters OVERLAP_RANGES (its own order otherwise)."""
    env = {}
    for name in topology.keys() & OVERLAP_RANGES.keys():
        pods, services = OVERLAP_RANGES[name]
        key = name.upper().replace("-", "_")
        env[f"ENVTEST_POD_CIDR_{key}"] = pods
        env[f"ENVTEST_SERVICE_CIDR_{key}"] = services
    return env


@dataclass(frozen=True)
class Mode:
    """The options a ClusterSet's traffic depends on, in every member alike."""

    endpoint_ip_type: str = "ClusterIP"
    """MultiClusterConfig endpointIPType: ClusterIP or PodIP."""
    encryption: str = "none"
    """Agent trafficEncryptionMode: none or wireGuard."""
    pod_to_pod: bool = False
    """Agent enablePodToPodConnectivity (the members' podCIDRs are set at install)."""
    stretched_policy: bool = False
    """enableStretchedNetworkPolicy, in the MultiClusterConfig and the agent alike."""


@dataclass
class NodeClusterSet:
    installed: Installed
    envtest: EnvtestNodes | None
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def overlapping(self) -> bool:
        """Whether east and west share their ranges (``start``'s default; not a user's clusters)."""
        east, west = self.installed.members.get("east"), self.installed.members.get("west")
        return east is not None and west is not None and east.pod_cidr is not None and east.pod_cidr == west.pod_cidr

    @property
    def leader(self) -> Cluster:
        return self.installed.leader

    @property
    def clusters(self) -> dict[str, Cluster]:
        return self.installed.members

    def cluster(self, name: str) -> Cluster:
        return self.installed.members[name]

    def down(self) -> None:
        if self.envtest is not None:
            self.envtest.down()

    def ensure(self, mode: Mode) -> bool:
        """Set ``mode`` in every member as the guide says (edit the ConfigMaps, restart what
        reads them); returns whether anything changed."""
        restarts: list[tuple[Cluster, str]] = []
        for cluster in self.clusters.values():
            pod_cidrs = {"podCIDRs": [cluster.pod_cidr]} if cluster.pod_cidr else {}
            if set_config(
                cluster,
                MEMBER_CONFIG,
                restart=False,
                endpointIPType=mode.endpoint_ip_type,
                enableStretchedNetworkPolicy=mode.stretched_policy,
                **pod_cidrs,
            ):
                restarts.append((cluster, MEMBER_CONFIG[2]))
            if set_config(
                cluster,
                AGENT_CONFIG,
                restart=False,
                trafficEncryptionMode=mode.encryption,
                enablePodToPodConnectivity=mode.pod_to_pod,
                enableStretchedNetworkPolicy=mode.stretched_policy,
            ):
                restarts.append((cluster, AGENT_CONFIG[2]))
        restart_workloads(restarts)
        return bool(restarts)


def gateways_of(cluster: Cluster) -> list[str]:
    """Gateway candidates: every node of west (failover), else the first node."""
    nodes = [node.name for node in cluster.nodes]
    return nodes if cluster.name == "west" else nodes[:1]


def start(
    directory: Path,
    *,
    topology: dict[str, int] | None = None,
    log: bool = True,
    overlap: bool = True,
    api_apart: bool = False,
) -> NodeClusterSet:
    """Build the images (while the clusters start), start the clusters, install mchub; with
    MCHUB_E2E_CLUSTERS, install mchub into those instead. ``overlap``: east and west share
    their ranges and the hub has GLOBAL_CIDR (False: every cluster its own ranges).
    ``api_apart``: Pods reach the API servers at an address no Node carries
    (hack.nodeset.api_apart; False: through every Node, envtest's way)."""
    users = user_clusters()
    if users is not None:
        return install_into(users, directory)
    figures: dict[str, float] = {}
    say = print if log else (lambda *_: None)
    built: dict[str, images.Archives] = {}
    failure: list[BaseException] = []

    def build() -> None:
        try:
            started = time.monotonic()
            built["archives"] = images.build_all()
            figures["image_build_s"] = time.monotonic() - started
        except BaseException as err:  # reported by the caller's thread
            failure.append(err)

    builder = threading.Thread(target=build, name="image-build")
    builder.start()
    shape = topology or TOPOLOGY
    say(f"nodeset: starting clusters {shape}{' (east and west overlapping)' if overlap else ''} in {directory}")
    try:
        envtest = EnvtestNodes.up(directory, shape, env=overlap_env(shape) if overlap else None)
    finally:
        builder.join()
    figures["clusters_up_s"] = envtest.started_in
    try:
        if failure:
            raise failure[0]
        if api_apart:
            say(f"nodeset: API servers apart from the Nodes, at {serve_api_apart(envtest)}")
        started = time.monotonic()
        envtest.load_images(*built["archives"].all())
        figures["image_load_s"] = time.monotonic() - started
        installed = install(envtest.clusters, directory / "hub-tls", say, global_cidr=GLOBAL_CIDR if overlap else "")
    except BaseException:
        envtest.down()
        raise
    figures["install_to_ready_s"] = installed.seconds["to_ready"]
    return NodeClusterSet(installed, envtest, figures)


def install_into(clusters: dict[str, Cluster], directory: Path | None = None) -> NodeClusterSet:
    """mchub installed into clusters a user already has (the first is the leader), their
    images already on their nodes."""
    tls_dir = (directory or Path(tempfile.mkdtemp(prefix="mchub-e2e-"))) / "hub-tls"
    installed = install(clusters, tls_dir)
    return NodeClusterSet(installed, None, {"install_to_ready_s": installed.seconds["to_ready"]})


def install(clusters: dict[str, Cluster], tls_dir: Path, say: object = print, *, global_cidr: str = "") -> Installed:
    started = time.monotonic()
    leader = next(iter(clusters.values()))
    installed = install_leader(leader, tls_dir, global_cidr=global_cidr)
    for cluster in clusters.values():
        config = {"podCIDRs": [cluster.pod_cidr]} if cluster.pod_cidr else {}
        join_member(installed, cluster, gateways_of(cluster), wait=False, **config)
    for cluster in clusters.values():
        wait_member(cluster)
    for cluster in clusters.values():
        if cluster.cluster_dns:  # envtest's: a user's clusters have their own DNS
            clusterdns.install(cluster, cluster.cluster_dns)
    until("every member Ready in the leader's ClusterSet", lambda: clusterset_ready(installed), timeout=120)
    installed.seconds["to_ready"] = time.monotonic() - started
    return installed


def attach(directory: Path) -> NodeClusterSet:
    """The ClusterSet ``python -m hack.nodeset up DIR`` left running (for repeated test runs:
    MCHUB_NODESET_DIR=DIR), as ``start`` returned it."""
    clusters = EnvtestNodes.attach(directory)
    names = list(clusters.clusters)
    leader = clusters.clusters[names[0]]
    installed = Installed(leader, f"https://{leader.nodes[0].ip}:{HUB_NODE_PORT}", directory / "hub-tls" / "ca.crt")
    installed.members = dict(clusters.clusters)
    return NodeClusterSet(installed, clusters)


@contextlib.contextmanager
def for_bench(*, overlap: bool, api_apart: bool = False) -> Iterator[NodeClusterSet]:
    """A benchmark's ClusterSet: the one MCHUB_NODESET_DIR names, left running; else one started
    here (``overlap`` and ``api_apart`` as ``start``) and stopped when the benchmark is done."""
    running = os.environ.get("MCHUB_NODESET_DIR")
    if running:
        yield attach(Path(running))
        return
    clusterset = start(Path(tempfile.mkdtemp(prefix="mchub-bench-")) / "ct", overlap=overlap, api_apart=api_apart)
    try:
        yield clusterset
    finally:
        clusterset.down()

"""A whole ClusterSet on one machine: a hub and sandbox clusters with members joined.

Used by `mchub demo`, the end-to-end tests and the propagation benchmark. It
joins members exactly as the user guide describes: a member token issued by the
leader, a token Secret (`token`, `ca.crt`) in the member's kube-system, and a
ClusterSet naming the leader's server and that Secret. With `mirror=True` the leader
cluster (the one named like the leader cluster ID) is also the leader as the user guide has
it: the guide's ClusterSet in its `antrea-multicluster`, where the hub (SQLite store) mirrors
its state (`--mirror-kubeconfig`). It lives with the CLI
(the composition root) because it wires hub, member and sandbox together,
which none of them may import from each other.
"""

from __future__ import annotations

import base64
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from hub.app import HubApp
from hub.config import HubConfig, MirrorConfig, SqliteStoreConfig
from kube.client import KubeClient, connect
from kube.errors import AlreadyExists
from kube.resources import CRDS, NAMESPACES, SECRETS
from mcapi import names
from mcapi.resources import CLUSTER_SETS
from member.app import MemberApp
from sandbox.server import SandboxServer

log = logging.getLogger(__name__)

CRD_DIR = Path(__file__).resolve().parent.parent / "deploy" / "crds"
DEFAULT_CLUSTERS = ("test-cluster-north", "test-cluster-east", "test-cluster-west")
DEFAULT_CLUSTERSET = "test-clusterset"
# One Service CIDR per cluster, so the clusters' ClusterIPs never overlap.
SERVICE_CIDRS = ("10.96.0.0/16", "10.112.0.0/16", "10.128.0.0/16", "10.144.0.0/16", "10.160.0.0/16")


@dataclass
class LocalCluster:
    name: str
    server: SandboxServer
    client: KubeClient
    member: MemberApp | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.server.kubeconfig_path


@dataclass
class LocalClusterSet:
    work_dir: Path
    cluster_names: tuple[str, ...] = DEFAULT_CLUSTERS
    clusterset_id: str = DEFAULT_CLUSTERSET
    leader_cluster_id: str = DEFAULT_CLUSTERS[0]
    hub_overrides: dict[str, Any] = field(default_factory=dict)
    rest_address: str = "127.0.0.1:0"
    member_namespace: str = names.DEFAULT_MEMBER_NAMESPACE
    # The hub mirrors into the leader cluster's Namespace (see the module doc).
    mirror: bool = False
    leader_namespace: str = names.DEFAULT_LEADER_NAMESPACE
    hub: HubApp | None = None
    clusters: dict[str, LocalCluster] = field(default_factory=dict)

    async def start(self, *, join: bool = True, on_step: Callable[[str], None] | None = None) -> None:
        """Start the hub, then each cluster (and join its member); `on_step` hears what begins next."""
        say = on_step or (lambda _: None)
        if self.mirror:
            await self._start_mirrored(join, say)
            return
        say("Starting the hub ...")
        await self.start_hub()
        short = ", ".join(name.removeprefix("test-cluster-") for name in self.cluster_names)
        members = " and their members" if join else ""
        say(f"Starting {len(self.cluster_names)} sandbox clusters ({short}){members} ...")
        for index, name in enumerate(self.cluster_names):
            await self.add_cluster(name, SERVICE_CIDRS[index % len(SERVICE_CIDRS)])
            if join:
                await self.join(name)

    async def _start_mirrored(self, join: bool, say: Callable[[str], None]) -> None:
        """The clusters first: the hub mirrors into the leader's from its start."""
        short = ", ".join(name.removeprefix("test-cluster-") for name in self.cluster_names)
        say(f"Starting {len(self.cluster_names)} sandbox clusters ({short}) ...")
        for index, name in enumerate(self.cluster_names):
            await self.add_cluster(name, SERVICE_CIDRS[index % len(SERVICE_CIDRS)])
        leader = self.leader_cluster
        await self._initialize_leader(leader.client)
        self.hub_overrides = {
            **self.hub_overrides,
            "store": SqliteStoreConfig(mirror=MirrorConfig(leader.kubeconfig)),
            "namespace": self.leader_namespace,
        }
        members = " and joining the members" if join else ""
        say(f"Starting the hub (mirrored into {leader.name.removeprefix('test-cluster-')}, the leader){members} ...")
        await self.start_hub()
        for name in self.cluster_names if join else ():
            await self.join(name)

    @property
    def leader_cluster(self) -> LocalCluster:
        """The cluster named like the leader cluster ID (the hub mirrors into it)."""
        return self.clusters[self.leader_cluster_id]

    async def _initialize_leader(self, client: KubeClient) -> None:
        """The user guide's leader set-up: its Namespace and "Initialize ClusterSet"."""
        with contextlib.suppress(AlreadyExists):
            await client.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.leader_namespace}}
            )
        clusterset = {
            "apiVersion": f"{names.GROUP}/v1alpha2",
            "kind": "ClusterSet",
            "metadata": {"name": self.clusterset_id, "namespace": self.leader_namespace},
            "spec": {"clusterID": self.leader_cluster_id, "leaders": [{"clusterID": self.leader_cluster_id}]},
        }
        with contextlib.suppress(AlreadyExists):
            await client.create(CLUSTER_SETS, clusterset, namespace=self.leader_namespace)

    async def start_hub(self, grpc_port: int = 0) -> HubApp:
        config = HubConfig(
            data_dir=self.work_dir / "hub",
            grpc_address=f"127.0.0.1:{grpc_port}",
            rest_address=self.rest_address,
            cluster_set_id=self.clusterset_id,
            leader_cluster_id=self.leader_cluster_id,
        )
        self.hub = HubApp(replace(config, **self.hub_overrides))
        await self.hub.start()
        return self.hub

    async def add_cluster(self, name: str, service_cidr: str) -> LocalCluster:
        server = SandboxServer(name=name, service_cidr=service_cidr, work_dir=self.work_dir / name)
        await server.start()
        client = await connect(server.kubeconfig_path)
        for path in sorted(CRD_DIR.glob("*.yaml")):
            with contextlib.suppress(AlreadyExists):
                await client.create(CRDS, yaml.safe_load(path.read_text()))
        cluster = LocalCluster(name, server, client)
        self.clusters[name] = cluster
        return cluster

    def _hub(self) -> HubApp:
        if self.hub is None:
            raise RuntimeError("the local ClusterSet is not started")
        return self.hub

    async def write_join_objects(self, name: str) -> None:
        """What an operator applies in a member: the token Secret and the ClusterSet."""
        hub = self._hub()
        token = hub.tokens.create(f"member-{name}", cluster_id=name)
        ca = hub.ca_cert.read_bytes() if hub.ca_cert else b""
        await write_join_objects(self.clusters[name].client, self.join_spec(name), token, ca, hub.grpc_target)

    def join_spec(self, name: str) -> JoinObjects:
        """Where the member of cluster ``name`` finds its ClusterSet (whichever hub serves it)."""
        return JoinObjects(name, self.clusterset_id, self.leader_cluster_id, self.member_namespace)

    async def join(self, name: str) -> MemberApp:
        await self.write_join_objects(name)
        return await self.start_member(name)

    async def start_member(self, name: str) -> MemberApp:
        cluster = self.clusters[name]
        member = MemberApp(cluster.client, self.member_namespace)
        await member.start()
        cluster.member = member
        return member

    async def stop_member(self, name: str) -> None:
        cluster = self.clusters[name]
        if cluster.member is not None:
            await cluster.member.stop()
            cluster.member = None

    async def stop(self) -> None:
        for name in list(self.clusters):
            await self.stop_member(name)
        for cluster in self.clusters.values():
            await cluster.client.close()
            await cluster.server.stop()
        self.clusters.clear()
        if self.hub is not None:
            await self.hub.stop()
            self.hub = None


@dataclass(frozen=True)
class JoinObjects:
    """The names a member's join objects carry."""

    cluster_id: str
    clusterset_id: str
    leader_cluster_id: str
    member_namespace: str = names.DEFAULT_MEMBER_NAMESPACE


async def write_join_objects(client: KubeClient, spec: JoinObjects, token: str, ca: bytes, hub_target: str) -> None:
    """What an operator applies in a member: the token Secret and the ClusterSet naming the hub
    at ``hub_target`` (HOST:PORT), whose certificate ``ca`` signed."""
    secret_name = f"{spec.cluster_id}-member-token"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": secret_name, "namespace": spec.member_namespace},
        "data": {"token": base64.b64encode(token.encode()).decode(), "ca.crt": base64.b64encode(ca).decode()},
    }
    await client.create(SECRETS, secret, namespace=spec.member_namespace)
    clusterset = {
        "apiVersion": f"{names.GROUP}/v1alpha2",
        "kind": "ClusterSet",
        "metadata": {"name": spec.clusterset_id, "namespace": spec.member_namespace},
        "spec": {
            "clusterID": spec.cluster_id,
            "namespace": names.DEFAULT_LEADER_NAMESPACE,
            "leaders": [
                {"clusterID": spec.leader_cluster_id, "server": f"https://{hub_target}", "secret": secret_name}
            ],
        },
    }
    await client.create(CLUSTER_SETS, clusterset, namespace=spec.member_namespace)

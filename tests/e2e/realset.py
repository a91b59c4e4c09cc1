"""The local ClusterSet of mchub_cli.localset, on the session's real clusters.

`RealClusterSet` is a `LocalClusterSet` whose clusters are attached, not started: member
`test-cluster-east` runs against the real cluster `east` (the last dash-part of its name, see
tests/kubeenv/envtest.py), in a member Namespace of this set's own, because the clusters are
shared by the whole session. The hub runs in-process as in the sandbox set. With
`kube_store=True` it runs as users run it: `--store kube`, its state in CRs of a leader
Namespace of this set's own on the real `leader` cluster, a leader ClusterSet there, and
members joined as deploy/INSTALL.md says (a ServiceAccount of the leader Namespace annotated
with the member's cluster ID; its token and the hub's CA in the member's token Secret).

`track_namespace()` makes a Namespace in every member cluster; `stop()` stops members and hub,
then deletes every Namespace the set made (their ServiceExports first, so that the next set's
members, on the same clusters, do not pick up this set's exports while they terminate).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hub.app import HubApp
from hub.config import KubeStoreConfig
from kube.client import KubeClient, connect
from kube.errors import AlreadyExists, NotFound
from kube.resources import NAMESPACES, SECRETS, SERVICE_ACCOUNTS
from mcapi import names
from mcapi.resources import CLUSTER_SETS, SERVICE_EXPORTS
from mchub_cli.localset import LocalCluster, LocalClusterSet
from tests.kubeenv.envtest import RealCluster

LEADER = "leader"
READY_WITHIN = 30.0


@dataclass
class AttachedServer:
    """What a LocalCluster needs of its server, for a cluster the session runs."""

    kubeconfig_path: Path

    async def stop(self) -> None:
        """The session stops the cluster; a ClusterSet only detaches from it."""


def real_name(cluster_name: str) -> str:
    """`test-cluster-east` -> `east`: the real cluster a member of this name runs on."""
    return cluster_name.rsplit("-", 1)[-1]


@dataclass
class RealClusterSet(LocalClusterSet):
    real: dict[str, RealCluster] = field(default_factory=dict)
    kube_store: bool = False
    leader_namespace: str = ""
    # Namespaces made, per real cluster name (member and test Namespaces, the leader Namespace).
    made: dict[str, set[str]] = field(default_factory=dict)
    _leader: KubeClient | None = None

    def __post_init__(self) -> None:
        suffix = secrets.token_hex(3)
        self.member_namespace = f"mchub-member-{suffix}"
        self.leader_namespace = f"mchub-leader-{suffix}"

    # ---- clusters ------------------------------------------------------------

    async def add_cluster(self, name: str, service_cidr: str) -> LocalCluster:
        """Attach to the real cluster of this name (its Service CIDR is the cluster's own)."""
        real = self.real[real_name(name)]
        client = await connect(real.kubeconfig)
        cluster = LocalCluster(name, AttachedServer(real.kubeconfig), client)  # type: ignore[arg-type]
        self.clusters[name] = cluster
        await self._make_namespace(client, real.name, self.member_namespace)
        return cluster

    async def track_namespace(self, name: str) -> None:
        """Create ``name`` in every member cluster; `stop()` deletes it."""
        for cluster in self.clusters.values():
            await self._make_namespace(cluster.client, real_name(cluster.name), name)

    async def _make_namespace(self, client: KubeClient, real: str, name: str) -> None:
        self.made.setdefault(real, set()).add(name)
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    # ---- hub -----------------------------------------------------------------

    async def start(self, *, join: bool = True) -> None:
        if self.kube_store:
            leader = self.real[LEADER]
            self._leader = await connect(leader.kubeconfig)
            await self._make_namespace(self._leader, LEADER, self.leader_namespace)
            await self._leader.create(CLUSTER_SETS, self._leader_cluster_set(), namespace=self.leader_namespace)
            self.hub_overrides = {
                **self.hub_overrides,
                "store": KubeStoreConfig(kubeconfig=leader.kubeconfig),
                "namespace": self.leader_namespace,
            }
        await super().start(join=join)

    def _leader_cluster_set(self) -> dict[str, Any]:
        """INSTALL.md's "Initialize ClusterSet" in the leader Namespace (the hub keeps its status)."""
        return {
            "apiVersion": CLUSTER_SETS.api_version,
            "kind": "ClusterSet",
            "metadata": {"name": self.clusterset_id},
            "spec": {"clusterID": self.leader_cluster_id, "leaders": [{"clusterID": self.leader_cluster_id}]},
        }

    async def start_hub(self, grpc_port: int = 0) -> HubApp:
        """Start the hub; with the kube store, return once it holds the Lease and serves."""
        hub = await super().start_hub(grpc_port)
        deadline = time.monotonic() + READY_WITHIN
        while not hub.is_ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the hub did not take the Lease within {READY_WITHIN}s")
            await asyncio.sleep(0.05)
        return hub

    # ---- joining -------------------------------------------------------------

    async def write_join_objects(self, name: str) -> None:
        if not self.kube_store:
            await super().write_join_objects(name)
            return
        hub = self._hub()
        token = await self._service_account_token(name)
        ca = hub.ca_cert.read_bytes() if hub.ca_cert else b""
        secret_name = f"{name}-member-token"
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": secret_name},
            "data": {"token": base64.b64encode(token).decode(), "ca.crt": base64.b64encode(ca).decode()},
        }
        client = self.clusters[name].client
        await client.create(SECRETS, secret, namespace=self.member_namespace)
        clusterset = {
            "apiVersion": CLUSTER_SETS.api_version,
            "kind": "ClusterSet",
            "metadata": {"name": self.clusterset_id},
            "spec": {
                "clusterID": name,
                "namespace": self.leader_namespace,
                "leaders": [
                    {"clusterID": self.leader_cluster_id, "server": f"https://{hub.grpc_target}", "secret": secret_name}
                ],
            },
        }
        await client.create(CLUSTER_SETS, clusterset, namespace=self.member_namespace)

    async def _service_account_token(self, cluster_id: str) -> bytes:
        """INSTALL.md "Set up access to the hub": a ServiceAccount speaking for one member and
        its token Secret, filled in by kube-controller-manager."""
        assert self._leader is not None
        ns = self.leader_namespace
        account = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": f"member-{cluster_id}", "annotations": {names.ANNOTATION_CLUSTER_ID: cluster_id}},
        }
        await self._leader.create(SERVICE_ACCOUNTS, account, namespace=ns)
        token_secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                "name": f"member-{cluster_id}-token",
                "annotations": {"kubernetes.io/service-account.name": f"member-{cluster_id}"},
            },
        }
        await self._leader.create(SECRETS, token_secret, namespace=ns)
        deadline = time.monotonic() + READY_WITHIN
        while time.monotonic() < deadline:
            filled = await self._leader.get(SECRETS, f"member-{cluster_id}-token", ns)
            token = (filled.get("data") or {}).get("token")
            if token:
                return base64.b64decode(token)
            await asyncio.sleep(0.05)
        raise TimeoutError(f"kube-controller-manager did not fill the token of member-{cluster_id}")

    # ---- teardown ------------------------------------------------------------

    async def stop(self) -> None:
        for name in list(self.clusters):
            await self.stop_member(name)
        if self.hub is not None:
            await self.hub.stop()
            self.hub = None
        clients = {real_name(c.name): c.client for c in self.clusters.values()}
        if self._leader is not None:
            clients[LEADER] = self._leader
        for real, client in clients.items():
            for namespace in sorted(self.made.get(real, ())):
                # Namespaces terminate in the background: their ServiceExports go at once, so the
                # next set's members (same clusters) do not export what this set's tests left.
                for export in (await client.list(SERVICE_EXPORTS, namespace)).items:
                    with contextlib.suppress(NotFound):
                        await client.delete(SERVICE_EXPORTS, export["metadata"]["name"], namespace)
                with contextlib.suppress(NotFound):
                    await client.delete(NAMESPACES, namespace)
        if self._leader is not None:
            await self._leader.close()
            self._leader = None
        await super().stop()

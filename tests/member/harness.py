"""A ClusterSet on one machine for member tests: a real hub, sandbox member clusters set up
as the user guide does (token Secret + ClusterSet in kube-system), and MemberApps.

Reusable outside tests/member (the end-to-end suite): `HubRunner` runs a hub that can be
restarted on the same address; `join_member(hub, name, work_dir)` gives a `JoinedMember`
(a started sandbox cluster with its member running); `await member.aclose()` tears it down.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hub.app import HubApp
from kube.client import KubeClient
from kube.errors import AlreadyExists, NotFound
from kube.resources import CONFIG_MAPS, ENDPOINTS, SECRETS, SERVICES
from mcapi import names
from mcapi.crds import WELL_KNOWN_CLAIM_ID
from mcapi.resources import CLUSTER_CLAIMS_V1ALPHA1, CLUSTER_SETS, CLUSTER_SETS_V1ALPHA1, SERVICE_EXPORTS
from member.app import MemberApp
from member.config import MemberOptions
from sandbox.server import SandboxServer
from tests.kubeenv.cluster import ensure_namespace, sandbox_cluster

MEMBER_NAMESPACE = names.DEFAULT_MEMBER_NAMESPACE
# Fast enough for a short suite, slow enough that a tight loop would show.
SESSION_OVERRIDES: dict[str, Any] = {
    "initial_backoff": 0.05,
    "max_backoff": 0.3,
    "permanent_retry_delay": 0.5,
    "call_timeout": 2.0,
    "stop_timeout": 2.0,
}
MEMBER_OPTIONS = MemberOptions(session_overrides=SESSION_OVERRIDES, leave_timeout=5.0, sync_timeout=10.0)
WAIT = 10.0

T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T | None]], within: float = WAIT, what: str = "") -> T:
    """Poll ``probe`` every 50 ms until it returns something truthy; fail after ``within`` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = await probe()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what or probe}")
        await asyncio.sleep(0.05)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def write_token_secret(client: KubeClient, hub: HubApp, cluster_id: str, secret: str) -> None:
    """The member token Secret as the user guide copies it into the member (Opaque, token + ca.crt)."""
    assert hub.ca_cert is not None
    token = hub.tokens.create(f"member-{cluster_id}-{secret}", cluster_id=cluster_id)
    body = {
        "metadata": {"name": secret, "namespace": MEMBER_NAMESPACE},
        "type": "Opaque",
        "data": {"token": _b64(token.encode()), "ca.crt": _b64(hub.ca_cert.read_bytes())},
    }
    await client.create(SECRETS, body)


def hub_server(hub: HubApp) -> str:
    return f"https://127.0.0.1:{hub.grpc_port}"


async def write_cluster_set(client: KubeClient, hub: HubApp, cluster_id: str, secret: str) -> None:
    """The member ClusterSet (v1alpha2) of the user guide."""
    body = {
        "metadata": {"name": hub.config.cluster_set_id, "namespace": MEMBER_NAMESPACE},
        "spec": {
            "clusterID": cluster_id,
            "leaders": [{"clusterID": hub.config.leader_cluster_id, "secret": secret, "server": hub_server(hub)}],
            "namespace": names.DEFAULT_LEADER_NAMESPACE,
        },
    }
    await client.create(CLUSTER_SETS, body)


async def write_legacy_cluster_set(client: KubeClient, hub: HubApp, cluster_id: str, secret: str) -> None:
    """The legacy (v1alpha1) setup exactly as installation-legacy-v1alpha1.md writes it:
    ClusterClaims `<cluster>-membercluster-id` (name id.k8s.io) and `clusterset-id`
    (name clusterSet.k8s.io), and a ClusterSet v1alpha1 with members[]."""
    claims = (
        (f"{cluster_id}-membercluster-id", WELL_KNOWN_CLAIM_ID, cluster_id),
        ("clusterset-id", "clusterSet.k8s.io", hub.config.cluster_set_id),
    )
    for object_name, claim, value in claims:
        body = {"metadata": {"name": object_name, "namespace": MEMBER_NAMESPACE}, "name": claim, "value": value}
        await client.create(CLUSTER_CLAIMS_V1ALPHA1, body)
    body = {
        "metadata": {"name": hub.config.cluster_set_id, "namespace": MEMBER_NAMESPACE},
        "spec": {
            "leaders": [{"clusterID": hub.config.leader_cluster_id, "secret": secret, "server": hub_server(hub)}],
            "members": [{"clusterID": cluster_id}],
            "namespace": names.DEFAULT_LEADER_NAMESPACE,
        },
    }
    await client.create(CLUSTER_SETS_V1ALPHA1, body)


async def write_member_config(client: KubeClient, yaml_text: str) -> None:
    body = {
        "metadata": {"name": names.MC_CONTROLLER_CONFIGMAP, "namespace": MEMBER_NAMESPACE},
        "data": {names.MC_CONTROLLER_CONFIG_KEY: yaml_text},
    }
    await client.create(CONFIG_MAPS, body)


@dataclass
class JoinedMember:
    """One member cluster: its sandbox API server, a client, and its running MemberApp."""

    name: str
    cluster_id: str
    server: SandboxServer
    client: KubeClient
    stack: AsyncExitStack
    app: MemberApp | None = None

    # ---- the member process --------------------------------------------------

    async def start_member(self, options: MemberOptions = MEMBER_OPTIONS) -> MemberApp:
        assert self.app is None, "the member is running"
        app = MemberApp(self.client, MEMBER_NAMESPACE, options=options)
        await app.start()
        self.app = app
        return app

    async def stop_member(self) -> None:
        if self.app is not None:
            app, self.app = self.app, None
            await app.stop()

    async def aclose(self) -> None:
        await self.stop_member()
        await self.stack.aclose()

    @property
    def member(self) -> MemberApp:
        assert self.app is not None, "the member is not running"
        return self.app

    async def wait_connected(self, within: float = WAIT) -> None:
        async def connected() -> bool:
            session = self.app.session if self.app is not None else None
            return session is not None and session.state.connected and session.state.exports_synced

        await eventually(connected, within, f"member {self.cluster_id} connected")

    # ---- the user's objects --------------------------------------------------

    async def create_service(
        self,
        namespace: str,
        name: str,
        ports: list[tuple[str, int]] | None = None,
        *,
        spec: dict[str, Any] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        await ensure_namespace(self.client, namespace)
        body_spec = spec or {
            "ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in (ports or [("http", 80)])],
        }
        meta: dict[str, Any] = {"name": name, "namespace": namespace}
        if annotations:
            meta["annotations"] = annotations
        return await self.client.create(SERVICES, {"metadata": meta, "spec": body_spec})

    async def create_endpoints(self, namespace: str, name: str, ips: list[str], port: int = 8080) -> None:
        body = {
            "metadata": {"name": name, "namespace": namespace},
            "subsets": [
                {"addresses": [{"ip": ip} for ip in ips], "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}
            ],
        }
        await self.client.create(ENDPOINTS, body)

    async def export(self, namespace: str, name: str) -> None:
        await ensure_namespace(self.client, namespace)
        with contextlib.suppress(AlreadyExists):
            await self.client.create(SERVICE_EXPORTS, {"metadata": {"name": name, "namespace": namespace}})

    async def service_export(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(SERVICE_EXPORTS, name, namespace)
        except NotFound:
            return None

    async def wait_condition(
        self, namespace: str, name: str, condition_type: str, status: str, reason: str | None = None
    ) -> dict[str, Any]:
        """Until the ServiceExport has this condition; returns the condition."""

        async def probe() -> dict[str, Any] | None:
            obj = await self.service_export(namespace, name)
            for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
                if condition.get("type") != condition_type or condition.get("status") != status:
                    continue
                if reason is None or condition.get("reason") == reason:
                    return dict(condition)
            return None

        return await eventually(probe, what=f"{namespace}/{name} {condition_type}={status} {reason or ''}")

    async def delete_cluster_set(self, hub: HubApp) -> None:
        await self.client.delete(CLUSTER_SETS, hub.config.cluster_set_id, MEMBER_NAMESPACE)

    async def cluster_set(self, hub: HubApp) -> dict[str, Any]:
        return await self.client.get(CLUSTER_SETS, hub.config.cluster_set_id, MEMBER_NAMESPACE)


async def join_member(
    hub: HubApp,
    cluster_name: str,
    work_dir: Path,
    *,
    cluster_id: str | None = None,
    legacy: bool = False,
    config_yaml: str | None = None,
    with_cluster_set: bool = True,
    start: bool = True,
    cluster: tuple[SandboxServer, KubeClient] | None = None,
) -> JoinedMember:
    """A sandbox cluster named ``cluster_name`` set up as a member of ``hub``'s ClusterSet.

    ``legacy`` uses ClusterClaims + ClusterSet v1alpha1; ``config_yaml`` is written as the
    member's MultiClusterConfig; ``with_cluster_set=False`` writes only the token Secret
    (the test creates the ClusterSet later); ``start=False`` leaves the member not running;
    ``cluster`` is an already running sandbox to use (the dual-role leader cluster) instead of a new one.
    """
    cluster_id = cluster_id or cluster_name
    stack = AsyncExitStack()
    try:
        if cluster is None:
            cluster = await stack.enter_async_context(sandbox_cluster(work_dir / cluster_name, cluster_name))
        server, client = cluster
        member = JoinedMember(cluster_name, cluster_id, server, client, stack)
        secret = f"member-{cluster_id}-token"
        await write_token_secret(client, hub, cluster_id, secret)
        if config_yaml is not None:
            await write_member_config(client, config_yaml)
        if with_cluster_set:
            writer = write_legacy_cluster_set if legacy else write_cluster_set
            await writer(client, hub, cluster_id, secret)
        if start:
            await member.start_member()
    except BaseException:
        await stack.aclose()
        raise
    return member

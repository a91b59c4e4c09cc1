"""A cluster's API (the leader's, unless told) for one test, of either kind the suite runs on.

- "sandbox": a sandbox API server started for the test (CRDs installed), stopped after it;
- "real": the session's real cluster of that name (kube-apiserver + controllers, CRDs
  installed), shared with every other test, so everything the test makes lives in Namespaces
  of its own (`namespace()` names them uniquely) which are deleted at exit.

A test that must use a fixed Namespace (the manifests' `antrea-multicluster`) calls
`fixed_namespace()`: on exit it is deleted and waited for until it is gone, so the next test
can create it again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kube.client import KubeClient, connect
from kube.errors import AlreadyExists, NotFound
from kube.resources import NAMESPACES, SECRETS, SERVICE_ACCOUNTS
from mcapi import names
from tests.kubeenv.cluster import sandbox_cluster

# How long a real Namespace may take to go (the namespace controller empties it first).
NAMESPACE_GONE_WITHIN = 60.0
TOKEN_FILLED_WITHIN = 10.0


@dataclass
class LeaderApi:
    kind: str
    client: KubeClient
    kubeconfig: Path
    _made: list[str] = field(default_factory=list)
    _fixed: list[str] = field(default_factory=list)

    @property
    def real(self) -> bool:
        return self.kind == "real"

    async def namespace(self, prefix: str = "mchub") -> str:
        """A new Namespace only this test uses."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        await self.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self._made.append(name)
        return name

    async def fixed_namespace(self, name: str) -> str:
        """A Namespace of a fixed name, deleted (and waited for) at exit."""
        with contextlib.suppress(AlreadyExists):
            await self.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self._fixed.append(name)
        return name

    async def service_account_token(self, namespace: str, account: str, cluster_id: str | None) -> str:
        """A ServiceAccount (annotated with the member cluster ID it speaks for, if any) and the
        token the token controller fills into its `kubernetes.io/service-account-token` Secret."""
        annotations = {names.ANNOTATION_CLUSTER_ID: cluster_id} if cluster_id else {}
        await self.client.create(
            SERVICE_ACCOUNTS,
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "annotations": annotations}},
            namespace=namespace,
        )
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {"name": f"{account}-token", "annotations": {"kubernetes.io/service-account.name": account}},
        }
        await self.client.create(SECRETS, secret, namespace=namespace)
        deadline = time.monotonic() + TOKEN_FILLED_WITHIN
        while time.monotonic() < deadline:
            data = (await self.client.get(SECRETS, f"{account}-token", namespace)).get("data") or {}
            if data.get("token"):
                return base64.b64decode(data["token"]).decode()
            await asyncio.sleep(0.05)
        raise AssertionError(f"the token controller never filled Secret {namespace}/{account}-token")

    async def remove_namespaces(self) -> None:
        for name in self._made + self._fixed:
            with contextlib.suppress(NotFound):
                await self.client.delete(NAMESPACES, name, propagation_policy="Background")
        for name in self._fixed:
            await wait_namespace_gone(self.client, name)
        self._made.clear()
        self._fixed.clear()


async def wait_namespace_gone(client: KubeClient, name: str, within: float = NAMESPACE_GONE_WITHIN) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            await client.get(NAMESPACES, name)
        except NotFound:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"Namespace {name} was not gone within {within}s")


@contextlib.asynccontextmanager
async def leader_api(
    kind: str, request: pytest.FixtureRequest, work_dir: Path, cluster: str = "leader"
) -> AsyncIterator[LeaderApi]:
    """The cluster of `kind` ("sandbox" or "real"), with its Namespaces removed at exit."""
    if kind == "sandbox":
        async with sandbox_cluster(work_dir, name=cluster) as (server, client):
            yield LeaderApi(kind, client, server.kubeconfig_path)
        return
    real = request.getfixturevalue("real_clusters")[cluster]
    client = await connect(real.kubeconfig)
    api = LeaderApi(kind, client, real.kubeconfig)
    try:
        yield api
    finally:
        try:
            await api.remove_namespaces()
        finally:
            await client.close()

"""Fixtures for the deployment tests.

- `sandbox`: a fresh in-process SandboxServer (a Kubernetes-API-compatible cluster on
  127.0.0.1) with nothing of ours installed: the manifests under test bring the CRDs
  themselves. Stopped after the test.
- `kubectl`: the real kubectl binary pointed at that sandbox (tests that use it are marked
  `kubectl` and skipped when the binary is absent).
- `real_north`: the session's real `north` cluster (kube-apiserver + controllers v1.28), where
  the manifests' cluster-scoped objects (ClusterRoles, CRDs...) may be installed. It is
  shared: it already has the mchub CRDs (the session installed them; the manifests bring the
  same ones), and after the test `restore_real_cluster` (installed.py) removes whatever of the
  manifests is still there, checks that nothing is left (Namespaces, workloads and what their
  controllers made), and puts the session's CRDs back as they were.
- `deploy_cluster`: one of the two, once per `cluster_kind`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox.server import SandboxServer
from tests.deploy import manifests
from tests.deploy.installed import restore_real_cluster
from tests.deploy.kubectl import Kubectl
from tests.kubeenv.envtest import RealCluster

# The real cluster the deployment tests install into.
REAL_CLUSTER = "north"


@dataclass(frozen=True)
class DeployCluster:
    kind: str
    kubeconfig: Path

    @property
    def real(self) -> bool:
        return self.kind == "real"

    def kubectl(self) -> Kubectl:
        return Kubectl(self.kubeconfig)


@contextlib.asynccontextmanager
async def started_sandbox(work_dir: Path) -> AsyncIterator[SandboxServer]:
    server = SandboxServer(name="deploy", service_cidr="10.96.0.0/12", work_dir=work_dir)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def real_cluster(clusters: dict[str, RealCluster]) -> AsyncIterator[DeployCluster]:
    cluster = DeployCluster("real", clusters[REAL_CLUSTER].kubeconfig)
    try:
        yield cluster
    finally:
        await restore_real_cluster(cluster.kubectl(), manifests.ALL)


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[SandboxServer]:
    async with started_sandbox(tmp_path / "cluster") as server:
        yield server


@pytest.fixture
def kubectl(sandbox: SandboxServer) -> Kubectl:
    return Kubectl(sandbox.kubeconfig_path)


@pytest.fixture
async def real_north(real_clusters: dict[str, RealCluster]) -> AsyncIterator[DeployCluster]:
    async with real_cluster(real_clusters) as cluster:
        yield cluster


@pytest.fixture
async def deploy_cluster(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[DeployCluster]:
    if cluster_kind == "real":
        async with real_cluster(request.getfixturevalue("real_clusters")) as cluster:
            yield cluster
        return
    async with started_sandbox(tmp_path / "cluster") as server:
        yield DeployCluster("sandbox", server.kubeconfig_path)

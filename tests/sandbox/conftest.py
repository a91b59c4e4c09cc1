"""Fixtures for the sandbox semantics suite.

The suite states Kubernetes API behaviour mchub relies on, and every case runs twice
(`cluster_kind`): against a fresh in-process SandboxServer (127.0.0.1, port 0), and
against a real kube-apiserver v1.28 - the session's `north` cluster (tests/conftest.py),
or the cluster of MCHUB_REAL_KUBECONFIG=/path/to/kubeconfig when that is set. Where the
two differ, the real server is right. On a real cluster each test works in its own
uniquely named Namespace (and uniquely named CRDs, Nodes), removed afterwards without
waiting for the removal to finish.

Fixtures:
- `cluster`: a Cluster (kubeconfig path, a kubernetes-asyncio ApiClient, raw HTTP
  helpers for what typed clients cannot express - Tables, watch streams, patches);
- `namespace`: the name of a fresh namespace, deleted after the test;
- `sandbox`: the SandboxServer itself (skips the test on a real cluster);
- `probe_crd`: a throwaway namespaced CRD (kind Probe, uniquely named group) with a
  status subresource and printer columns, served before the test starts;
- `new_probe_crd`: makes such CRDs with the versions (schemas) a test gives, removed after
  the test. On a real cluster they come from a pool made ahead (crd_pool.py), as a real
  apiserver holds back creates for 2 s after a new CRD is Established.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from sandbox.server import SandboxServer
from tests.sandbox.cluster import Cluster
from tests.sandbox.crd_pool import ProbeCRDPool
from tests.sandbox.probe_crd import CRDS, NewProbeCRD, ProbeCRD, Version, create_crd

REAL_KUBECONFIG = os.environ.get("MCHUB_REAL_KUBECONFIG", "")
# The session cluster this suite uses; the multi-cluster suites mostly use leader, east and west.
REAL_CLUSTER = "north"


@pytest.fixture(params=["sandbox", "real"])
def cluster_kind(request: pytest.FixtureRequest) -> str:
    """Overrides the session-wide one: with MCHUB_REAL_KUBECONFIG, "real" needs no local control plane."""
    kind: str = request.param
    return kind


def _real_kubeconfig(request: pytest.FixtureRequest) -> Path:
    if REAL_KUBECONFIG:
        return Path(REAL_KUBECONFIG)
    # Skips (or fails under CI) with the reason when no real control plane can be had.
    clusters = request.getfixturevalue("real_clusters")
    kubeconfig: Path = clusters[REAL_CLUSTER].kubeconfig
    return kubeconfig


@pytest.fixture
async def cluster(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Cluster]:
    server: SandboxServer | None = None
    if cluster_kind == "real":
        kubeconfig = _real_kubeconfig(request)
    else:
        server = SandboxServer(name="semantics", service_cidr="10.96.0.0/12", work_dir=tmp_path / "sandbox")
        await server.start()
        kubeconfig = server.kubeconfig_path
    try:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        found = Cluster(kubeconfig, client.ApiClient(configuration), configuration, server, tmp_path)
        try:
            yield found
        finally:
            await found.close()
    finally:
        if server is not None:
            await server.stop()


@pytest.fixture
def sandbox(cluster: Cluster) -> SandboxServer:
    if cluster.sandbox is None:
        pytest.skip("needs the in-process sandbox")
    return cluster.sandbox


@pytest.fixture
async def namespace(cluster: Cluster) -> AsyncIterator[str]:
    name = f"mchub-test-{secrets.token_hex(4)}"
    created = await cluster.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
    assert created.status == 201, created.body
    try:
        yield name
    finally:
        # Not awaited to the end: a real namespace controller takes >= 5 s to empty a namespace.
        deleted = await cluster.request("DELETE", f"/api/v1/namespaces/{name}")
        assert deleted.status in (200, 404), deleted.body


@pytest.fixture
def unique() -> str:
    """A short random suffix for cluster-scoped names (CRD groups, nodes)."""
    return secrets.token_hex(3)


_USES_CRDS = ("probe_crd", "new_probe_crd")


@pytest.fixture(scope="session")
def crd_pool(request: pytest.FixtureRequest) -> Iterator[ProbeCRDPool]:
    """Sized by the session's real-cluster tests that take CRDs."""
    uses = 0
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        kind = callspec.params.get("cluster_kind") if callspec is not None else None
        if kind == "real" and any(name in getattr(item, "fixturenames", ()) for name in _USES_CRDS):
            uses += 1
    pool = ProbeCRDPool(uses)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
async def new_probe_crd(cluster: Cluster, crd_pool: ProbeCRDPool) -> AsyncIterator[NewProbeCRD]:
    """`await new_probe_crd(versions=None)`: a new Probe CRD serving those spec.versions."""
    made: list[ProbeCRD] = []

    async def make(versions: list[Version] | None = None) -> ProbeCRD:
        if cluster.sandbox is None:
            crd = await crd_pool.take(cluster, versions)
        else:
            crd = ProbeCRD(group=f"t{secrets.token_hex(3)}.sandbox.mchub.io")
            await create_crd(cluster, crd.body(versions))
        made.append(crd)
        return crd

    try:
        yield make
    finally:
        for crd in made:
            await cluster.request("DELETE", f"{CRDS}/{crd.name}")


@pytest.fixture
async def probe_crd(new_probe_crd: NewProbeCRD) -> ProbeCRD:
    return await new_probe_crd()

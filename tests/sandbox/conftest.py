"""Fixtures for the sandbox semantics suite.

The suite states Kubernetes API behaviour mchub relies on, against any API server:

- by default each test gets a fresh in-process SandboxServer (127.0.0.1, port 0);
- with MCHUB_REAL_KUBECONFIG=/path/to/kubeconfig the same tests run against that
  cluster instead, each in its own uniquely named namespace (and uniquely named
  CRDs), all removed afterwards.

Fixtures:
- `cluster`: a Cluster (kubeconfig path, a kubernetes-asyncio ApiClient, raw HTTP
  helpers for what typed clients cannot express - Tables, watch streams, patches);
- `namespace`: the name of a fresh namespace, deleted after the test;
- `sandbox`: the SandboxServer itself (skips the test on a real cluster);
- `probe_crd`: a throwaway namespaced CRD (kind Probe, uniquely named group) with a
  status subresource and printer columns, Established before the test starts.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from sandbox.server import SandboxServer
from tests.sandbox.cluster import Cluster
from tests.sandbox.probe_crd import CRDS, ProbeCRD, wait_established

REAL_KUBECONFIG = os.environ.get("MCHUB_REAL_KUBECONFIG", "")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    server: SandboxServer | None = None
    if REAL_KUBECONFIG:
        kubeconfig = Path(REAL_KUBECONFIG)
    else:
        server = SandboxServer(name="semantics", service_cidr="10.96.0.0/12", work_dir=tmp_path / "sandbox")
        await server.start()
        kubeconfig = server.kubeconfig_path
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    api = client.ApiClient(configuration)
    found = Cluster(kubeconfig, api, configuration, server)
    try:
        yield found
    finally:
        await found.close()
        if server is not None:
            await server.stop()


@pytest.fixture
def sandbox(cluster: Cluster) -> SandboxServer:
    if cluster.sandbox is None:
        pytest.skip("needs the in-process sandbox (MCHUB_REAL_KUBECONFIG is set)")
    return cluster.sandbox


@pytest.fixture
async def namespace(cluster: Cluster) -> AsyncIterator[str]:
    name = f"mchub-test-{secrets.token_hex(4)}"
    core = client.CoreV1Api(cluster.api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        yield name
    finally:
        try:
            await core.delete_namespace(name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture
def unique() -> str:
    """A short random suffix for cluster-scoped names (CRD groups, nodes)."""
    return secrets.token_hex(3)


@pytest.fixture
async def probe_crd(cluster: Cluster, unique: str) -> AsyncIterator[ProbeCRD]:
    crd = ProbeCRD(group=f"t{unique}.sandbox.mchub.io")
    reply = await cluster.request("POST", CRDS, body=crd.body())
    assert reply.status == 201, reply.body
    await wait_established(cluster, crd.name)
    try:
        yield crd
    finally:
        await cluster.request("DELETE", f"{CRDS}/{crd.name}")

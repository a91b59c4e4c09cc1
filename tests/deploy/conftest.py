"""Fixtures for the deployment tests.

- `sandbox`: a fresh in-process SandboxServer (a Kubernetes-API-compatible
  cluster on 127.0.0.1) with nothing of ours installed: the manifests under test
  bring the CRDs themselves. Stopped after the test.
- `kubectl`: the real kubectl binary pointed at that sandbox (tests that use it
  are marked `kubectl` and skipped when the binary is absent).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox.server import SandboxServer
from tests.deploy.kubectl import Kubectl


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[SandboxServer]:
    server = SandboxServer(name="deploy", service_cidr="10.96.0.0/12", work_dir=tmp_path / "cluster")
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def kubectl(sandbox: SandboxServer) -> Kubectl:
    return Kubectl(sandbox.kubeconfig_path)

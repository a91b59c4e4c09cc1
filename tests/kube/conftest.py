"""Fixtures for the kube library's tests, which run against a real sandbox API server.

- `sandbox`: a started SandboxServer (HTTPS on 127.0.0.1, port 0) with short bookmark
  intervals; stopped at teardown.
- `client`: a KubeClient connected through the sandbox's kubeconfig; closed at teardown.
- `namespace`: a fresh Namespace for the test (the sandbox dies with the test anyway).
- `crds`: the mchub CRDs from deploy/crds installed in the sandbox.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import yaml

from kube.client import KubeClient, connect
from kube.resources import CRDS, NAMESPACES
from sandbox.server import SandboxServer

CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[SandboxServer]:
    server = SandboxServer(
        name="kube", service_cidr="10.96.0.0/12", work_dir=tmp_path / "sandbox", bookmark_interval=0.2
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def client(sandbox: SandboxServer) -> AsyncIterator[KubeClient]:
    kube = await connect(sandbox.kubeconfig_path)
    try:
        yield kube
    finally:
        await kube.close()


@pytest.fixture
async def namespace(client: KubeClient) -> str:
    name = f"test-{uuid.uuid4().hex[:8]}"
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    return name


@pytest.fixture
async def crds(client: KubeClient) -> None:
    for path in sorted(CRD_DIR.glob("*.yaml")):
        await client.create(CRDS, yaml.safe_load(path.read_text()))


async def eventually(check: Callable[[], bool], within: float = 5.0, interval: float = 0.02) -> None:
    """For state that no event announces (a resourceVersion advancing): poll until true."""
    async with asyncio.timeout(within):
        while not check():  # noqa: ASYNC110 - nothing to await: the state changes without a signal
            await asyncio.sleep(interval)

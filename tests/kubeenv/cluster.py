"""A sandbox API server with the mchub CRDs installed, for tests (not a fake: the real sandbox)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import yaml

from kube.client import KubeClient, connect
from kube.errors import AlreadyExists
from kube.resources import CRDS, NAMESPACES
from sandbox.server import SandboxServer

CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"


async def install_crds(client: KubeClient, pattern: str = "*.yaml") -> None:
    """The CRDs of deploy/crds whose file names match ``pattern`` (all of them by default)."""
    for path in sorted(CRD_DIR.glob(pattern)):
        with suppress(AlreadyExists):
            await client.create(CRDS, yaml.safe_load(path.read_text()))


async def ensure_namespace(client: KubeClient, name: str) -> None:
    with suppress(AlreadyExists):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


@asynccontextmanager
async def sandbox_cluster(
    work_dir: Path, name: str = "leader", service_cidr: str = "10.96.0.0/12"
) -> AsyncIterator[tuple[SandboxServer, KubeClient]]:
    """A started sandbox with the CRDs applied, and a client for it."""
    server = SandboxServer(name=name, service_cidr=service_cidr, work_dir=work_dir)
    await server.start()
    client = await connect(server.kubeconfig_path)
    try:
        await install_crds(client)
        yield server, client
    finally:
        await client.close()
        await server.stop()

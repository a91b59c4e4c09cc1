"""End-to-end fixtures: one local ClusterSet per module.

- `clusterset`: a hub (TLS, SQLite) and three sandbox clusters,
  test-cluster-north/-east/-west, each with a member joined as the user guide
  describes (mchub_cli.localset). Shared by a module's tests (it takes seconds to
  start); every test works in Namespaces of its own, so tests do not see each other.
- `namespace`: a fresh Namespace name, created in every cluster.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from mchub_cli.localset import LocalClusterSet
from tests.e2e.mcs import ensure_namespace

_counter = itertools.count()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clusterset(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalClusterSet]:
    work_dir: Path = tmp_path_factory.mktemp("clusterset")
    local = LocalClusterSet(work_dir)
    await local.start()
    try:
        yield local
    finally:
        await local.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def namespace(clusterset: LocalClusterSet) -> str:
    name = f"e2e-{next(_counter)}"
    for cluster in clusterset.clusters.values():
        await ensure_namespace(cluster.client, name)
    return name

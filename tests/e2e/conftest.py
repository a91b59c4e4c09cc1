"""End-to-end fixtures: one local ClusterSet per module and cluster kind.

- `cluster_kind` (module scope here): "sandbox" or "real"; every module that builds a
  ClusterSet runs once on each, its tests grouped by kind (real ones are marked `real`),
  unless it sets `CLUSTER_KINDS` (e.g. `("sandbox",)`).
- `clusterset`: a hub and three clusters, test-cluster-north/-east/-west, each with a member
  joined as the user guide describes. On "sandbox": sandbox clusters and a hub with its
  SQLite store (mchub_cli.localset). On "real": the session's real clusters north, east and
  west, and the hub with `--store kube` on the real `leader`, members joined with
  ServiceAccount tokens as deploy/INSTALL.md says (tests/e2e/realset.py). Shared by a
  module's tests (it takes seconds to start); every test works in Namespaces of its own.
- `new_clusterset(kind, work_dir, **kwargs)`: an unstarted LocalClusterSet of that kind, for
  modules that build their own (`kube_store` applies to "real" only).
- `namespace`: a fresh Namespace name, created in every cluster (on real clusters it is
  removed with the module's ClusterSet).
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from mchub_cli.localset import LocalClusterSet
from tests.e2e.mcs import ensure_namespace
from tests.e2e.realset import RealClusterSet

_counter = itertools.count()
# Namespace names differ between pytest sessions too: the real clusters may outlive a run.
_RUN = secrets.token_hex(2)
KINDS = ("sandbox", "real")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test of a module on each kind, a module's tests grouped by kind; a module that
    sets ``CLUSTER_KINDS = ("sandbox",)`` runs on those kinds only."""
    if "cluster_kind" in metafunc.fixturenames:
        kinds = getattr(metafunc.module, "CLUSTER_KINDS", KINDS)
        metafunc.parametrize("cluster_kind", list(kinds), indirect=True, scope="module")


@pytest.fixture(scope="module")
def cluster_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    if kind == "real":
        request.getfixturevalue("real_clusters")  # skips (or, under CI, fails) with the reason
    return kind


def new_clusterset(kind: str, request: pytest.FixtureRequest, work_dir: Path, **kwargs: Any) -> LocalClusterSet:
    if kind == "sandbox":
        kwargs.pop("kube_store", None)
        return LocalClusterSet(work_dir, **kwargs)
    return RealClusterSet(work_dir, real=request.getfixturevalue("real_clusters"), **kwargs)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clusterset(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalClusterSet]:
    local = new_clusterset(cluster_kind, request, tmp_path_factory.mktemp("clusterset"), kube_store=True)
    try:
        await local.start()
        yield local
    finally:
        await local.stop()


async def make_namespace(clusterset: LocalClusterSet, name: str) -> None:
    """``name`` in every cluster of the set (recorded for removal on real clusters)."""
    if isinstance(clusterset, RealClusterSet):
        await clusterset.track_namespace(name)
        return
    for cluster in clusterset.clusters.values():
        await ensure_namespace(cluster.client, name)


@pytest_asyncio.fixture(loop_scope="module")
async def namespace(clusterset: LocalClusterSet) -> str:
    name = f"e2e-{_RUN}-{next(_counter)}"
    await make_namespace(clusterset, name)
    return name

"""Fixtures for the label identity controller, each test once on a sandbox and once on a real
kube-apiserver (`cluster_kind`, tests/conftest.py).

- `world`: a `PodWorld` (tests/member_identities/world.py) on a fresh sandbox cluster, or on
  the session's real cluster `east` in Namespaces of the test's own.
- `sink`: a `RecordingSink`, what a hub session is to the controller: it keeps the desired
  exports, and every set/remove it was handed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kube.client import connect
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.kubeenv.cluster import sandbox_cluster
from tests.kubeenv.envtest import RealCluster
from tests.member_identities.world import PodWorld


@dataclass
class RecordingSink:
    desired: dict[str, pb.ResourceExport] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    def set_export(self, export: pb.ResourceExport) -> None:
        self.desired[export.export_name] = export
        self.calls.append(("set", export.export_name))

    def remove_export(self, export_name: str) -> None:
        self.desired.pop(export_name, None)
        self.calls.append(("remove", export_name))

    def labels(self) -> set[str]:
        return {e.label_identity.normalized_label for e in self.desired.values()}


@pytest.fixture
async def world(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[PodWorld]:
    if cluster_kind == "sandbox":
        async with sandbox_cluster(tmp_path / "east", "east") as (_, client):
            yield PodWorld(client, real=False)
        return
    real: dict[str, RealCluster] = request.getfixturevalue("real_clusters")
    client = await connect(real["east"].kubeconfig)
    world = PodWorld(client, real=True)
    try:
        yield world
    finally:
        await world.close()
        await client.close()


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()

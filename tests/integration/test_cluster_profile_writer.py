"""The ClusterProfile writer (hub.leader_cluster.cluster_profiles) on a sandbox leader: a profile
it cannot write is said in the log and leaves the other members' profiles and the hub's status
passes going (it used to end the hub's status loop for the life of the process)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hub.leader_cluster.cluster_profiles import ClusterProfileWriter
from hub.store.base import MemberRecord
from kube.resources import name_of
from mcapi.crds import LABEL_CLUSTER_MANAGER
from mcapi.resources import CLUSTER_PROFILES
from tests.contract.leader_api import leader_api


def _member(cluster_id: str, now: datetime) -> MemberRecord:
    return MemberRecord(cluster_id, "clusterset", "leader", now, now)


async def test_a_profile_name_held_by_another_manager_leaves_the_others_written(
    request: pytest.FixtureRequest, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with leader_api("sandbox", request, tmp_path / "leader") as api:
        namespace = await api.namespace("profiles")
        others = {
            "metadata": {"name": "east", "labels": {LABEL_CLUSTER_MANAGER: "someone-else"}},
            "spec": {"clusterManager": {"name": "someone-else"}},
        }
        await api.client.create(CLUSTER_PROFILES, others, namespace=namespace)
        writer = ClusterProfileWriter(api.client, namespace)
        now = datetime.now(UTC)
        members = {c: _member(c, now) for c in ("east", "west")}
        try:
            async with asyncio.timeout(15):
                while "west" not in {name_of(p) for p in (await api.client.list(CLUSTER_PROFILES, namespace)).items}:
                    await writer.write(members, now, 30.0, "clusterset")  # raises nothing for east
                    await asyncio.sleep(0.05)
        finally:
            await writer.close()
        east = await api.client.get(CLUSTER_PROFILES, "east", namespace)
        assert east["metadata"]["labels"] == others["metadata"]["labels"]  # never touched
        refused = [r for r in caplog.records if r.getMessage() == "cluster profile not written"]
        assert refused and {getattr(r, "clusterID", None) for r in refused} == {"east"}

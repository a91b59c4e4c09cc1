"""hub.leader_cluster.import_outcomes after close: a report the engine still hands on is dropped, not kept."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from google.protobuf.struct_pb2 import Struct

from hub.engine.reports import ImportStatusEntry
from hub.leader_cluster.import_outcomes import ImportOutcomeWriter, ReportSource
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.contract.leader_api import leader_api


async def test_a_report_observed_after_close_leaves_nothing_pending_and_starts_no_worker(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    import_name = names.acnp_import_name("isolation")
    policy = pb.ResourceImport(import_name=import_name, name=import_name, cluster_network_policy=Struct())
    async with leader_api("sandbox", request, tmp_path / "leader") as api:
        source = ReportSource(lambda: {import_name: policy}, lambda: {})
        writer = ImportOutcomeWriter(api.client, await api.namespace("leader"), source)
        await writer.close()
        failed = ImportStatusEntry(False, "TierNotFound", "ACNP Tier random does not exist", datetime.now(UTC))
        for _ in range(3):
            writer.observe(import_name, "west", failed)
        assert writer._pending == {}
        assert not writer._work.running
        await writer.settled()

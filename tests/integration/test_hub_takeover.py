"""A watch that outlives its engine (the replica stepped down and took over again).

After a step-down the old engine's watchers still drain what was queued for
them before their stream ends. Those changes belong to the old engine's
history: stamped with the new engine's epoch, a member would resume the new
history from a revision of the old one and skip changes it never saw.

The servicer is driven directly (no gRPC server) so the take-over can happen
exactly between a commit and the watcher reading it. Both engines keep their state in
the kube store, as replicas do, on a sandbox and on a real leader cluster, and in the
sqlite store.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from hub.auth.identity import Identity
from hub.config import HubConfig
from hub.engine import Engine
from hub.grpc.calls import Context
from hub.grpc.service import CommonAreaService
from hub.metrics import HubMetrics
from hub.store.base import Store
from hub.store.kube import KubeStore
from hub.store.sqlite import SqliteStore
from hub.watch.encoded import WatchResponse, serialize
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.contract.leader_api import leader_api
from tests.integration.hubclient import service_export


class _Context:
    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", "Bearer west-token"),)

    async def abort(self, code: grpc.StatusCode, details: str) -> Any:
        raise AssertionError(f"stream ended: {code.name}: {details}")


class _West:
    async def authenticate(self, token: str) -> Identity | None:
        return Identity(cluster_id="west")


async def test_changes_queued_before_a_take_over_keep_the_epoch_of_the_engine_that_made_them(
    tmp_path: Path,
) -> None:
    await _queued_changes_keep_their_epoch(SqliteStore(tmp_path / "old"), SqliteStore(tmp_path / "new"), tmp_path)


async def test_the_same_with_replicas_of_the_kube_store(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # As replicas do: both engines load the same leader Namespace.
    async with leader_api(cluster_kind, request, tmp_path / "leader") as leader:
        namespace = await leader.namespace("leader")
        old_store, new_store = KubeStore(leader.client, namespace), KubeStore(leader.client, namespace)
        await _queued_changes_keep_their_epoch(old_store, new_store, tmp_path)


async def _queued_changes_keep_their_epoch(old_store: Store, new_store: Store, tmp_path: Path) -> None:
    config = HubConfig(data_dir=tmp_path)
    old, new = Engine(old_store, config), Engine(new_store, config)
    await old.start()
    await new.start()
    assert old.epoch != new.epoch
    serving = [old]
    service = CommonAreaService(lambda: serving[0], _West(), HubMetrics(), max_message_bytes=4 * 1024 * 1024)
    watch = cast(
        AsyncGenerator[WatchResponse, None],
        service.WatchImports(pb.WatchImportsRequest(cluster_id="west"), cast(Context, _Context())),
    )

    async def sent() -> pb.WatchImportsResponse:
        """The next message as the watcher reads it off the wire."""
        return pb.WatchImportsResponse.FromString(serialize(await anext(watch)))

    try:
        while (await sent()).WhichOneof("event") != "synced":
            pass
        east = Identity(cluster_id="east")
        await old.announce(east, pb.AnnounceRequest(cluster_id="east", cluster_set_id=config.cluster_set_id))
        await old.upsert(east, service_export("east", "default", "web"))
        # Step down, then take over again with a freshly loaded engine, before the watcher reads.
        old.imports_bus.close()
        serving[0] = new

        queued = await sent()
        assert queued.upsert.import_name.startswith("default-web-")
        assert queued.epoch == old.epoch
        assert queued.revision == old.revision
        assert names.service_import_name("default", "web") not in new.index.imports
    finally:
        await watch.aclose()
        await old.store.close()
        await new.store.close()

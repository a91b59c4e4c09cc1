"""A caller that goes away mid-write never leaves the hub's index behind its store.

The SQLite store commits a batch at once and makes it durable with its next fsync, whether or
not anybody still awaits it; the hub must then still have applied it to the index, bumped its
revision and, once it is durable, told watchers.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hub.app import HubApp
from hub.auth.identity import Identity
from hub.config import HubConfig
from hub.engine import Engine
from hub.store.sqlite import SqliteStore
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.contract.fsync_gate import FsyncGate, fsyncs_fixture  # noqa: F401 (the fixture `fsyncs`)
from tests.integration.hub_fixtures import hub_config
from tests.integration.hubclient import MemberFactory, read_until_synced, service_export


async def test_an_upsert_cancelled_while_its_write_is_in_flight_still_reaches_the_index_and_watchers(
    tmp_path: Path, fsyncs: FsyncGate
) -> None:
    config = HubConfig(data_dir=tmp_path)
    store = SqliteStore(tmp_path)
    engine = Engine(store, config)
    await engine.start()
    east = Identity(cluster_id="east")
    await engine.announce(east, pb.AnnounceRequest(cluster_id="east", cluster_set_id=config.cluster_set_id))
    try:
        with engine.imports_bus.subscribe() as watcher:
            fsyncs.held = True
            upsert = asyncio.create_task(engine.upsert(east, service_export("east", "default", "web")))
            await fsyncs.holding.wait()
            assert not watcher.items  # not durable yet: nobody was told
            upsert.cancel()
            # Another writer commits behind the cancelled one, and syncs with the next fsync.
            announce = asyncio.create_task(
                engine.announce(east, pb.AnnounceRequest(cluster_id="east", cluster_set_id=config.cluster_set_id))
            )
            fsyncs.release.set()
            await asyncio.gather(upsert, return_exceptions=True)
            await announce

            durable = await store.snapshot()
            assert engine.revision == durable.revision
            assert set(engine.index.exports) == set(durable.exports)
            assert set(engine.index.imports) == set(durable.imports)
            [published] = watcher.ready(1000)
            assert published is not None
            assert names.service_import_name("default", "web") in {c.import_name for c in published.changes}
    finally:
        await store.close()


async def test_an_export_stream_cancelled_mid_write_still_delivers_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsyncs: FsyncGate
) -> None:
    store = SqliteStore(tmp_path / "hub")
    app = HubApp(hub_config(tmp_path / "hub"), store=store)
    await app.start()
    factory = MemberFactory(app)
    stream_ended = asyncio.Event()
    gauge, dec = app.metrics.export_streams, app.metrics.export_streams.dec

    def dec_and_tell(amount: float = 1) -> None:
        dec(amount)
        stream_ended.set()

    monkeypatch.setattr(gauge, "dec", dec_and_tell)
    try:
        east, west = await factory("east"), await factory("west")
        stream = west.watch()
        _, synced = await read_until_synced(stream)

        session = east.export_session()
        fsyncs.held = True
        await session.call.write(pb.ExportRequest(sequence=1, upsert=service_export("east", "default", "web")))
        await fsyncs.holding.wait()
        session.call.cancel()  # the member goes away while the hub fsyncs
        await asyncio.wait_for(stream_ended.wait(), 5)  # the hub has seen the stream end
        fsyncs.release.set()

        wanted = names.service_import_name("default", "web")
        async with asyncio.timeout(5):
            while True:
                event = await anext(stream)
                if event.WhichOneof("event") == "upsert" and event.upsert.import_name == wanted:
                    break
        assert event.revision > synced.revision
        assert app.engine.revision == (await app.store.snapshot()).revision
    finally:
        await factory.close()
        await app.stop()

"""A caller that goes away mid-write never leaves the hub's index behind its store.

The SQLite store finishes a batch its writer has taken even when nobody awaits
it any more; the hub must then still apply it to the index, bump its revision
and tell watchers, and keep the engine lock until it did.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hub.app import HubApp
from hub.auth.identity import Identity
from hub.config import HubConfig
from hub.engine import Engine
from hub.store.base import WriteBatch
from hub.store.sqlite import SqliteStore
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hub_fixtures import hub_config
from tests.integration.hubclient import MemberFactory, read_until_synced, service_export


class GatedStore(SqliteStore):
    """A SQLite store whose commits, once `gated`, are taken by the writer at once but
    answered only when `release` is set (an fsync that takes a while)."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.gated = False
        self.taken = asyncio.Event()
        self.release = asyncio.Event()
        self.in_flight: list[asyncio.Future[int]] = []

    async def commit(self, batch: WriteBatch) -> int:
        write = asyncio.ensure_future(super().commit(batch))
        if not self.gated:
            return await write
        self.in_flight.append(write)
        self.taken.set()
        await self.release.wait()
        return await write


async def test_an_upsert_cancelled_while_its_write_is_in_flight_still_reaches_the_index_and_watchers(
    tmp_path: Path,
) -> None:
    config = HubConfig(data_dir=tmp_path)
    store = GatedStore(tmp_path)
    engine = Engine(store, config)
    await engine.start()
    east = Identity(cluster_id="east")
    await engine.announce(east, pb.AnnounceRequest(cluster_id="east", cluster_set_id=config.cluster_set_id))
    try:
        with engine.imports_bus.subscribe() as watcher:
            store.gated = True
            upsert = asyncio.create_task(engine.upsert(east, service_export("east", "default", "web")))
            await store.taken.wait()
            upsert.cancel()
            # Another writer queues behind the cancelled one on the engine lock.
            announce = asyncio.create_task(
                engine.announce(east, pb.AnnounceRequest(cluster_id="east", cluster_set_id=config.cluster_set_id))
            )
            store.release.set()
            await asyncio.gather(upsert, return_exceptions=True)
            await asyncio.gather(*store.in_flight)
            await announce

            durable = await store.snapshot()
            assert engine.revision == durable.revision
            assert set(engine.index.exports) == set(durable.exports)
            assert set(engine.index.imports) == set(durable.imports)
            published = watcher.queue.get_nowait()
            assert published is not None
            assert names.service_import_name("default", "web") in {c.import_name for c in published.changes}
    finally:
        await store.close()


async def test_an_export_stream_cancelled_mid_write_still_delivers_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = GatedStore(tmp_path / "hub")
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
        store.gated = True
        await session.call.write(pb.ExportRequest(sequence=1, upsert=service_export("east", "default", "web")))
        await store.taken.wait()
        session.call.cancel()  # the member goes away while the hub fsyncs
        await asyncio.wait_for(stream_ended.wait(), 5)  # the hub has seen the stream end
        store.release.set()
        await asyncio.gather(*store.in_flight)

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

"""A store that cannot commit: callers get UNAVAILABLE (retry later), never INTERNAL/UNKNOWN."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from hub.app import HubApp
from hub.store.base import WriteBatch
from hub.store.sqlite import CommitFailed, SqliteStore
from tests.integration.hub_fixtures import hub_config, rest_session
from tests.integration.hubclient import MemberFactory, service_export
from tests.integration.test_hub_rest import ACNP


class FailingStore(SqliteStore):
    """A SQLite store whose commits fail while `failing` is set (a full disk, say)."""

    failing = False

    def stage(self, batch: WriteBatch) -> int:
        if self.failing and not batch.is_empty():
            raise CommitFailed("the store could not write: database or disk is full")
        return super().stage(batch)


@pytest.fixture
async def failing_hub(tmp_path: Path) -> AsyncIterator[tuple[HubApp, FailingStore]]:
    store = FailingStore(tmp_path / "hub")
    app = HubApp(hub_config(tmp_path / "hub"), store=store)
    await app.start()
    try:
        yield app, store
    finally:
        await app.stop()


async def test_an_announce_the_store_cannot_commit_is_unavailable(failing_hub: tuple[HubApp, FailingStore]) -> None:
    app, store = failing_hub
    factory = MemberFactory(app)
    try:
        east = await factory("east", announce=False)
        store.failing = True
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await east.announce()
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE, info.value.details()
        assert "disk is full" in (info.value.details() or "")
    finally:
        await factory.close()


async def test_an_export_the_store_cannot_commit_ends_the_stream_unavailable(
    failing_hub: tuple[HubApp, FailingStore],
) -> None:
    app, store = failing_hub
    factory = MemberFactory(app)
    try:
        east = await factory("east")
        store.failing = True
        session = east.export_session()
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await session.upsert(service_export("east", "default", "web"))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE, info.value.details()
        assert "disk is full" in (info.value.details() or "")
        assert app.engine.index.exports == {}
    finally:
        await factory.close()


async def test_a_rest_write_the_store_cannot_commit_answers_503(failing_hub: tuple[HubApp, FailingStore]) -> None:
    app, store = failing_hub
    store.failing = True
    headers = {"Authorization": f"Bearer {app.admin_token}"}
    async with (
        rest_session(app) as http,
        http.post("/api/v1/resourceexports", json=ACNP, headers=headers) as answer,
    ):
        assert answer.status == 503, await answer.text()
        status = await answer.json()
    assert status["reason"] == "ServiceUnavailable"
    assert "disk is full" in status["message"]
    assert app.engine.index.exports == {}

"""WriteThroughCache against the sandbox: our own writes and deletes are seen before the watch
brings them, and the watch's echo of them is told apart from others' changes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kube.client import KubeClient, WatchEvent
from kube.informer import Informer
from kube.resources import CONFIG_MAPS
from kube.writecache import WriteThroughCache


def config_map(name: str, namespace: str, value: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"app": "t"}}, "data": {"k": value}}


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, bool]] = []
        self.changed = asyncio.Event()
        self.cache: WriteThroughCache | None = None

    async def __call__(self, event: WatchEvent) -> None:
        assert self.cache is not None
        own = self.cache.observe(event)
        self.events.append((event.type, event.object["metadata"].get("resourceVersion", ""), own))
        self.changed.set()

    async def until(self, count: int) -> None:
        async with asyncio.timeout(5):
            while len(self.events) < count:
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
async def cached(client: KubeClient, namespace: str) -> AsyncIterator[tuple[WriteThroughCache, Recorded]]:
    recorded = Recorded()
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector="app=t", handler=recorded)
    cache = WriteThroughCache(informer)
    recorded.cache = cache
    await informer.wait_synced()
    try:
        yield cache, recorded
    finally:
        await informer.stop()


async def test_a_write_is_visible_at_once_and_its_echo_is_ours(
    client: KubeClient, namespace: str, cached: tuple[WriteThroughCache, Recorded]
) -> None:
    cache, recorded = cached
    created = await client.create(CONFIG_MAPS, config_map("a", namespace))
    cache.wrote(created)
    assert cache.get("a", namespace) == created  # before any event
    patched = await client.patch(CONFIG_MAPS, "a", {"data": {"k": "2"}}, namespace)
    cache.wrote(patched)
    assert cache.get("a", namespace) == patched
    assert [o["metadata"]["name"] for o in cache.list(namespace)] == ["a"]

    await recorded.until(2)
    assert recorded.events == [
        ("ADDED", created["metadata"]["resourceVersion"], True),
        ("MODIFIED", patched["metadata"]["resourceVersion"], True),
    ]
    assert cache.get("a", namespace) == cache.informer.get("a", namespace)

    # Someone else's change is not ours, and is what the cache shows.
    theirs = await client.patch(CONFIG_MAPS, "a", {"data": {"k": "3"}}, namespace)
    await recorded.until(3)
    assert recorded.events[-1] == ("MODIFIED", theirs["metadata"]["resourceVersion"], False)
    assert (cache.get("a", namespace) or {})["data"] == {"k": "3"}


async def test_an_older_event_does_not_hide_a_newer_write(
    client: KubeClient, namespace: str, cached: tuple[WriteThroughCache, Recorded]
) -> None:
    cache, recorded = cached
    first = await client.create(CONFIG_MAPS, config_map("a", namespace))
    second = await client.patch(CONFIG_MAPS, "a", {"data": {"k": "2"}}, namespace)
    cache.wrote(second)
    await recorded.until(1)  # the ADDED of `first` may come before the MODIFIED of `second`
    assert recorded.events[0][1] == first["metadata"]["resourceVersion"]
    assert (cache.get("a", namespace) or {})["data"] == {"k": "2"}


async def test_a_deleted_object_is_hidden_until_the_watch_sees_it_go_and_a_new_one_shows(
    client: KubeClient, namespace: str, cached: tuple[WriteThroughCache, Recorded]
) -> None:
    cache, recorded = cached
    created = await client.create(CONFIG_MAPS, config_map("a", namespace))
    await recorded.until(1)
    await client.delete(CONFIG_MAPS, "a", namespace, uid=created["metadata"]["uid"])
    cache.deleted(created)
    assert cache.get("a", namespace) is None
    assert cache.list(namespace) == []
    await recorded.until(2)
    assert recorded.events[1][0] == "DELETED" and recorded.events[1][2] is True

    again = await client.create(CONFIG_MAPS, config_map("a", namespace, "new"))
    cache.wrote(again)
    assert (cache.get("a", namespace) or {})["data"] == {"k": "new"}

"""Informer caches keep no metadata.managedFields, on a real kube-apiserver (the sandbox keeps none
to begin with): not in what a list or the watch put in the cache, not in what handlers and event
streams get, not in what a write through the WriteThroughCache put there. And what that drops is
never missed: a PUT of a cached object, which carries none, leaves the server's managedFields as
they were."""

from __future__ import annotations

import asyncio
import copy
import secrets
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Any

import pytest

from kube.client import KubeClient, WatchEvent, connect
from kube.errors import NotFound
from kube.informer import EventStream, Informer
from kube.resources import CONFIG_MAPS, NAMESPACES, Obj
from kube.writecache import WriteThroughCache
from tests.kubeenv.envtest import RealCluster

MANAGER = "mchub-managed-fields-test"
WITHIN = 30.0  # a real apiserver on a shared 2-core machine: slack, but every wait is on an event


def config_map(name: str, namespace: str, value: str = "1") -> Obj:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"app": "t"}}, "data": {"k": value}}


def managers(obj: Obj) -> set[str]:
    return {entry.get("manager", "") for entry in obj["metadata"].get("managedFields") or []}


async def create_as_manager(client: KubeClient, obj: Obj) -> Obj:
    """POST with an explicit field manager, so that the server's managedFields name it."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", **obj}
    path = CONFIG_MAPS.path(obj["metadata"]["namespace"])
    created: Obj = await client.request("POST", path, query=[("fieldManager", MANAGER)], body=body)
    return created


@pytest.fixture
async def real(real_clusters: dict[str, RealCluster]) -> AsyncIterator[tuple[KubeClient, str]]:
    """A client of the session's real "north" cluster and a Namespace of this test, deleted at its end."""
    client = await connect(real_clusters["north"].kubeconfig)
    namespace = f"managed-fields-{secrets.token_hex(4)}"
    try:
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        yield client, namespace
    finally:
        with suppress(NotFound):
            await client.delete(NAMESPACES, namespace)
        await client.close()


class Handled:
    """The events an informer's handler got, and a way to wait for one of them."""

    def __init__(self) -> None:
        self.events: list[WatchEvent] = []
        self._changed = asyncio.Event()

    async def __call__(self, event: WatchEvent) -> None:
        self.events.append(event)
        self._changed.set()

    async def until(self, kind: str, name: str) -> None:
        async with asyncio.timeout(WITHIN):
            while not any(e.type == kind and e.object["metadata"]["name"] == name for e in self.events):
                self._changed.clear()
                await self._changed.wait()


async def stream_until(stream: EventStream, kind: str, name: str) -> list[WatchEvent]:
    seen: list[WatchEvent] = []
    async with asyncio.timeout(WITHIN):
        async for event in stream:
            seen.append(event)
            if event.type == kind and event.object["metadata"]["name"] == name:
                return seen
    raise AssertionError(f"the stream ended before {kind} {name}")


async def test_listed_and_watched_objects_are_cached_and_handed_out_without_managed_fields(
    real: tuple[KubeClient, str],
) -> None:
    client, namespace = real
    await create_as_manager(client, config_map("listed", namespace))
    # The server does keep them: a GET shows the manager that created the object.
    assert MANAGER in managers(await client.get(CONFIG_MAPS, "listed", namespace))

    handled = Handled()
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector="app=t", handler=handled)
    try:
        await informer.wait_synced()
        stream = informer.events()  # opens with an ADDED of what the cache holds
        watched = await create_as_manager(client, config_map("watched", namespace))
        assert MANAGER in managers(watched)
        await client.request(
            "PATCH",
            CONFIG_MAPS.path(namespace, "watched"),
            query=[("fieldManager", MANAGER)],
            body={"data": {"k": "2"}},
            content_type="application/merge-patch+json",
        )
        await client.delete(CONFIG_MAPS, "watched", namespace)
        await handled.until("DELETED", "watched")
        streamed = await stream_until(stream, "DELETED", "watched")

        cached = informer.get("listed", namespace)
        assert cached is not None and "managedFields" not in cached["metadata"]
        assert all("managedFields" not in obj["metadata"] for obj in informer.list())
        kinds = [(e.type, e.object["metadata"]["name"]) for e in handled.events]
        assert kinds == [("ADDED", "listed"), ("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")]
        assert [(e.type, e.object["metadata"]["name"]) for e in streamed] == [("ADDED", "listed"), *kinds[1:]]
        for event in [*handled.events, *streamed]:
            assert "managedFields" not in event.object["metadata"], (event.type, event.object["metadata"]["name"])
            # Nothing else of the metadata went with them.
            assert event.object["metadata"]["uid"] and event.object["metadata"]["resourceVersion"]
    finally:
        await informer.stop()


async def test_a_write_through_the_write_cache_is_cached_without_managed_fields(
    real: tuple[KubeClient, str],
) -> None:
    client, namespace = real
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector="app=t")
    await informer.wait_synced()
    # Stopped after its sync, the informer never echoes our writes: what the cache shows below
    # is what the write cache took from the writes' answers.
    await informer.stop()
    cache = WriteThroughCache(informer)

    created = await create_as_manager(client, config_map("written", namespace))
    cache.wrote(created)
    shown = cache.get("written", namespace)
    assert shown is not None and "managedFields" not in shown["metadata"]
    assert shown == {**created, "metadata": {k: v for k, v in created["metadata"].items() if k != "managedFields"}}
    # The answer belongs to whoever wrote: it is left as the server sent it.
    assert MANAGER in managers(created)

    patched = await client.patch(CONFIG_MAPS, "written", {"data": {"k": "2"}}, namespace)
    assert managers(patched)
    cache.wrote(patched)
    listed = cache.list(namespace)
    assert [obj["metadata"]["resourceVersion"] for obj in listed] == [patched["metadata"]["resourceVersion"]]
    assert "managedFields" not in listed[0]["metadata"]


async def test_replacing_a_cached_object_keeps_the_servers_managed_fields(real: tuple[KubeClient, str]) -> None:
    client, namespace = real
    created = await create_as_manager(client, config_map("replaced", namespace))
    before = managers(created)
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector="app=t")
    try:
        await informer.wait_synced()
        cached = informer.get("replaced", namespace)
        assert cached is not None and "managedFields" not in cached["metadata"]
        body: dict[str, Any] = copy.deepcopy(cached)
        body["data"]["k"] = "2"  # the labels stay the creator's; data.k moves to the PUT's manager
        replaced = await client.replace(CONFIG_MAPS, body)
    finally:
        await informer.stop()

    after = await client.get(CONFIG_MAPS, "replaced", namespace)
    assert after["data"] == {"k": "2"}
    assert replaced["metadata"]["managedFields"] == after["metadata"]["managedFields"]
    # The creator still owns what it set and the PUT did not touch; the PUT's manager was added.
    assert before <= managers(after) and MANAGER in managers(after)
    creator = next(e for e in after["metadata"]["managedFields"] if e["manager"] == MANAGER)
    assert "f:labels" in creator["fieldsV1"]["f:metadata"]
    assert "f:k" not in creator["fieldsV1"].get("f:data", {})
    assert len(managers(after)) == 2

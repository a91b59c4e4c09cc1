"""Informer against the sandbox: sync, events, selectors, bookmarks, 410 relist, reconnects."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest

from kube.backoff import Backoff
from kube.client import KubeClient, ObjectList, WatchEvent, connect
from kube.errors import ConnectionFailed, Forbidden, NotFound, ServerError
from kube.informer import EventStream, Informer
from kube.resources import CONFIG_MAPS, SECRETS, Resource
from sandbox.registry import DeleteOptions
from sandbox.server import SandboxServer
from tests.kube.conftest import eventually


def config_map(name: str, namespace: str, app: str = "t") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"app": app}}, "data": {"k": "v"}}


async def next_event(stream: EventStream, within: float = 5.0) -> tuple[str, str]:
    async with asyncio.timeout(within):
        event = await anext(stream)
    return event.type, event.object["metadata"]["name"]


@pytest.fixture
async def informer(client: KubeClient, namespace: str) -> AsyncIterator[Informer]:
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector="app=t")
    try:
        yield informer
    finally:
        await informer.stop()


async def test_sync_lists_existing_objects_into_the_cache(
    client: KubeClient, namespace: str, informer: Informer
) -> None:
    await client.create(CONFIG_MAPS, config_map("before", namespace))
    await informer.wait_synced()
    assert informer.synced.is_set()
    cached = informer.get("before", namespace)
    assert cached is not None
    assert cached["kind"] == "ConfigMap"
    assert informer.relists == 1


async def test_events_follow_creates_updates_and_deletes(
    client: KubeClient, namespace: str, informer: Informer
) -> None:
    await client.create(CONFIG_MAPS, config_map("before", namespace))
    await informer.wait_synced()
    stream = informer.events()
    assert await next_event(stream) == ("ADDED", "before")

    await client.create(CONFIG_MAPS, config_map("a", namespace))
    assert await next_event(stream) == ("ADDED", "a")
    await client.patch(CONFIG_MAPS, "a", {"data": {"k": "w"}}, namespace)
    assert await next_event(stream) == ("MODIFIED", "a")
    cached = informer.get("a", namespace)
    assert cached is not None
    assert cached["data"] == {"k": "w"}
    await client.delete(CONFIG_MAPS, "a", namespace)
    assert await next_event(stream) == ("DELETED", "a")
    assert informer.get("a", namespace) is None
    stream.close()


async def test_label_selector_scopes_what_is_seen(client: KubeClient, namespace: str, informer: Informer) -> None:
    await informer.wait_synced()
    stream = informer.events()
    await client.create(CONFIG_MAPS, config_map("other", namespace, app="u"))
    await client.create(CONFIG_MAPS, config_map("mine", namespace))
    assert await next_event(stream) == ("ADDED", "mine")
    assert informer.get("other", namespace) is None
    # Relabelling an object out of the selector reads as its deletion.
    await client.patch(CONFIG_MAPS, "mine", {"metadata": {"labels": {"app": "u"}}}, namespace)
    assert await next_event(stream) == ("DELETED", "mine")


async def test_an_async_handler_sees_the_cache_already_updated(client: KubeClient, namespace: str) -> None:
    seen: asyncio.Queue[tuple[str, bool]] = asyncio.Queue()

    async def handler(event: WatchEvent) -> None:
        name = event.object["metadata"]["name"]
        await seen.put((event.type, watched.get(name, namespace) is not None))

    watched = Informer(client, CONFIG_MAPS, namespace=namespace, handler=handler, label_selector="app=t")
    try:
        await watched.wait_synced()
        await client.create(CONFIG_MAPS, config_map("a", namespace))
        await client.delete(CONFIG_MAPS, "a", namespace)
        async with asyncio.timeout(5):
            assert await seen.get() == ("ADDED", True)
            assert await seen.get() == ("DELETED", False)
    finally:
        await watched.stop()


async def test_a_failing_handler_does_not_stop_the_informer(client: KubeClient, namespace: str) -> None:
    async def broken(event: WatchEvent) -> None:
        raise RuntimeError("handler bug")

    informer = Informer(client, CONFIG_MAPS, namespace=namespace, handler=broken, label_selector="app=t")
    try:
        await informer.wait_synced()
        stream = informer.events()
        await client.create(CONFIG_MAPS, config_map("a", namespace))
        assert await next_event(stream) == ("ADDED", "a")
    finally:
        await informer.stop()


async def test_bookmarks_advance_the_resource_version(client: KubeClient, namespace: str, informer: Informer) -> None:
    await informer.wait_synced()
    unrelated = await client.create(SECRETS, {"metadata": {"name": "s", "namespace": namespace}})
    target = int(unrelated["metadata"]["resourceVersion"])
    await eventually(lambda: int(informer.resource_version) >= target)
    assert informer.get("s", namespace) is None


async def test_gone_relists_and_reports_deletes_missed_while_disconnected(
    sandbox: SandboxServer, client: KubeClient, namespace: str, informer: Informer
) -> None:
    await client.create(CONFIG_MAPS, config_map("doomed", namespace))
    await client.create(CONFIG_MAPS, config_map("survivor", namespace))
    await informer.wait_synced()
    stream = informer.events()
    assert {await next_event(stream), await next_event(stream)} == {("ADDED", "doomed"), ("ADDED", "survivor")}

    # With no await in between: the watch is cut before it can carry the delete, and the
    # history it would resume from is compacted away, so only a relist can reveal the delete.
    rt = sandbox.catalog.lookup("", "v1", "configmaps")
    assert rt is not None
    # Not a CRD's deletion (ConfigMaps have none): every watch dropped, as by a restarted API server.
    sandbox.store.close_watchers()
    sandbox.registry.delete(rt, namespace, "doomed", DeleteOptions())
    sandbox.compact()

    assert await next_event(stream) == ("DELETED", "doomed")
    assert informer.relists == 2
    assert informer.get("survivor", namespace) is not None
    await client.create(CONFIG_MAPS, config_map("after", namespace))
    assert await next_event(stream) == ("ADDED", "after")


async def test_a_closed_watch_is_resumed_without_relisting(
    sandbox: SandboxServer, client: KubeClient, namespace: str, informer: Informer
) -> None:
    await informer.wait_synced()
    stream = informer.events()
    # A watch the server ends cleanly (its timeout, a restart, a proxy), not a CRD's deletion.
    sandbox.store.close_watchers()
    await client.create(CONFIG_MAPS, config_map("a", namespace))
    assert await next_event(stream) == ("ADDED", "a")
    assert informer.relists == 1


async def test_the_inactivity_watchdog_reopens_a_silent_watch(tmp_path: Any) -> None:
    # Bookmarks every 60 s: a watch on a quiet resource says nothing for longer than the watchdog allows.
    quiet = SandboxServer(name="quiet", work_dir=tmp_path / "quiet", bookmark_interval=60)
    await quiet.start()
    kube = await connect(quiet.kubeconfig_path)
    watches = 0
    third_watch = asyncio.Event()
    original = kube.watch

    def counting_watch(*args: Any, **kwargs: Any) -> AsyncGenerator[WatchEvent, None]:
        nonlocal watches
        watches += 1
        if watches >= 3:
            third_watch.set()
        return original(*args, **kwargs)

    kube.watch = counting_watch  # type: ignore[method-assign]
    informer = Informer(kube, CONFIG_MAPS, namespace="default", inactivity_timeout=0.2)
    try:
        await informer.wait_synced()
        await asyncio.wait_for(third_watch.wait(), 5)
        stream = informer.events()
        assert await next_event(stream) == ("ADDED", "kube-root-ca.crt")
        await kube.create(CONFIG_MAPS, config_map("a", "default"))
        assert await next_event(stream) == ("ADDED", "a")
        assert informer.relists == 1
    finally:
        await informer.stop()
        await kube.close()
        await quiet.stop()


async def test_a_missing_resource_type_fails_the_informer_permanently(client: KubeClient) -> None:
    missing = Resource("example.com", "v1", "widgets", "Widget", True)
    informer = Informer(client, missing, namespace="default")
    try:
        with pytest.raises(NotFound):
            await informer.wait_synced()
        with pytest.raises(NotFound):
            await informer.wait()
        with pytest.raises(NotFound):
            await anext(informer.events())
    finally:
        await informer.stop()


async def test_run_forever_runs_an_informer_again_after_it_failed_for_good(client: KubeClient, namespace: str) -> None:
    refusals = 2  # access refused twice (RBAC not there yet), then granted
    original_list = client.list_all

    async def refusing_list(*args: Any, **kwargs: Any) -> ObjectList:
        nonlocal refusals
        if refusals:
            refusals -= 1
            raise Forbidden(403, "Forbidden", "configmaps is forbidden")
        return await original_list(*args, **kwargs)

    client.list_all = refusing_list  # type: ignore[method-assign]
    await client.create(CONFIG_MAPS, config_map("a", namespace))
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector="app=t")
    task = asyncio.create_task(informer.run_forever(Backoff(initial=0.01, maximum=0.05, jitter=0)))
    try:
        async with asyncio.timeout(5):
            await informer.synced.wait()
        assert informer.get("a", namespace) is not None
        assert refusals == 0
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await informer.stop()


async def test_event_streams_end_when_the_informer_stops(client: KubeClient, namespace: str) -> None:
    async with Informer(client, CONFIG_MAPS, namespace=namespace, label_selector="app=t") as informer:
        stream = informer.events()
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_server_errors_and_dropped_connections_are_retried_with_backoff(
    client: KubeClient, namespace: str
) -> None:
    failures: list[Exception] = [ServerError(503, "ServiceUnavailable", "busy"), ConnectionFailed("reset")]
    original_list, original_watch = client.list_all, client.watch
    watch_failed = asyncio.Event()

    async def flaky_list(*args: Any, **kwargs: Any) -> ObjectList:
        if failures:
            raise failures.pop(0)
        return await original_list(*args, **kwargs)

    async def flaky_watch(*args: Any, **kwargs: Any) -> AsyncGenerator[WatchEvent, None]:
        if not watch_failed.is_set():
            watch_failed.set()
            raise ConnectionFailed("watch dropped")
        async for event in original_watch(*args, **kwargs):
            yield event

    client.list_all = flaky_list  # type: ignore[method-assign]
    client.watch = flaky_watch  # type: ignore[method-assign]
    informer = Informer(
        client, CONFIG_MAPS, namespace=namespace, label_selector="app=t", backoff=Backoff(initial=0.01, jitter=0)
    )
    try:
        await asyncio.wait_for(informer.wait_synced(), 5)
        assert not failures
        stream = informer.events()
        await client.create(CONFIG_MAPS, config_map("a", namespace))
        assert await next_event(stream) == ("ADDED", "a")
        assert watch_failed.is_set()
        assert informer.relists == 1  # a dropped watch resumes; it does not relist
    finally:
        await informer.stop()

"""Reading the importer's caches instead of watching again: ImportCaches.subscribe on a sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from kube.client import KubeClient, WatchEvent
from kube.errors import NotFound
from kube.resources import CRDS, ENDPOINT_SLICES, SERVICES, Obj
from mcapi import names
from mcapi.resources import SERVICE_IMPORTS_V1BETA1
from member.imports import ImportApplier
from member.imports.caches import CachesStopped, ImportCaches
from member.imports.objects import IMPORTED_SERVICE_IMPORTS
from member.imports.ownership import LABEL_IMPORTED_SERVICE, LABEL_MANAGED_BY, MANAGED_BY
from member.imports.policies import tier_resource
from sandbox.server import SandboxServer
from tests.kubeenv.cluster import ensure_namespace, install_crds, sandbox_cluster
from tests.kubeenv.tasks import running_informers
from tests.member_imports.conftest import Reports, eventually
from tests.member_imports.messages import service_import

SLICES = ENDPOINT_SLICES.qualified_name
SERVICE_IMPORTS = SERVICE_IMPORTS_V1BETA1.qualified_name
IMPORTED = {names.ANNOTATION_IMPORTED_SERVICE: "true"}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[SandboxServer, KubeClient, ImportCaches]]:
    """A sandbox with the CRDs and Namespace web, and started import caches of it."""
    async with sandbox_cluster(tmp_path / "west", "west") as (server, client):
        await ensure_namespace(client, "web")
        caches = ImportCaches(client, "kube-system")
        await caches.start()
        try:
            yield server, client, caches
        finally:
            await caches.stop()


def imported_slice(name: str) -> Obj:
    return {
        "metadata": {
            "name": name,
            "annotations": IMPORTED,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY, names.LABEL_MCS_SERVICE_NAME: "nginx"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}],
    }


def imported_service_import(name: str) -> Obj:
    return {
        "metadata": {"name": name, "annotations": IMPORTED, "labels": {LABEL_IMPORTED_SERVICE: "true"}},
        "spec": {"type": "ClusterSetIP", "ports": [{"port": 80, "protocol": "TCP"}]},
    }


class Seen:
    """A subscriber: every event as (type, name), and whether the cache held it by then."""

    def __init__(self, caches: ImportCaches, qualified_name: str) -> None:
        self.events: list[tuple[str, str]] = []
        self.in_cache: list[bool] = []
        self._caches = caches
        self._qualified_name = qualified_name
        self.changed = asyncio.Event()

    def __call__(self, event: WatchEvent) -> None:
        meta = event.object["metadata"]
        self.events.append((event.type, meta["name"]))
        kind = self._caches.watching(self._qualified_name)
        if kind is not None:
            held = kind.get(meta["name"], meta.get("namespace")) is not None
            self.in_cache.append(held == (event.type != "DELETED"))
        self.changed.set()

    async def until(self, holds: Callable[[], bool], within: float = 10.0) -> None:
        async with asyncio.timeout(within):
            while not holds():
                self.changed.clear()
                await self.changed.wait()


async def test_a_late_subscriber_gets_the_contents_then_each_event_after_the_cache_took_it(
    cluster: tuple[SandboxServer, KubeClient, ImportCaches],
) -> None:
    _, client, caches = cluster
    await client.create(ENDPOINT_SLICES, imported_slice("antrea-mc-nginx.east"), namespace="web")
    kind = caches.kind(ENDPOINT_SLICES)
    warm = Seen(caches, SLICES)  # only to await the cache
    stop_warm = caches.subscribe(SLICES, warm)
    await warm.until(lambda: kind.get("antrea-mc-nginx.east", "web") is not None)
    stop_warm()
    seen = Seen(caches, SLICES)

    unsubscribe = caches.subscribe(SLICES, seen)
    assert seen.events == [("ADDED", "antrea-mc-nginx.east")]
    await client.create(ENDPOINT_SLICES, imported_slice("antrea-mc-nginx.north"), namespace="web")
    await client.delete(ENDPOINT_SLICES, "antrea-mc-nginx.east", "web")
    await seen.until(lambda: ("DELETED", "antrea-mc-nginx.east") in seen.events)
    assert seen.events == [
        ("ADDED", "antrea-mc-nginx.east"),
        ("ADDED", "antrea-mc-nginx.north"),
        ("DELETED", "antrea-mc-nginx.east"),
    ]
    assert all(seen.in_cache)

    unsubscribe()
    later = Seen(caches, SLICES)
    caches.subscribe(SLICES, later)
    await client.delete(ENDPOINT_SLICES, "antrea-mc-nginx.north", "web")
    await later.until(lambda: ("DELETED", "antrea-mc-nginx.north") in later.events)
    assert len(seen.events) == 3


async def test_a_subscriber_follows_an_optional_kind_from_its_first_watch_through_its_crd_going_and_coming_back(
    cluster: tuple[SandboxServer, KubeClient, ImportCaches],
) -> None:
    _, client, caches = cluster
    await client.create(SERVICE_IMPORTS_V1BETA1, imported_service_import("nginx"), namespace="web")
    seen = Seen(caches, SERVICE_IMPORTS)
    caches.subscribe(SERVICE_IMPORTS, seen)
    assert seen.events == []  # not watched yet: nobody needed it

    first = await caches.optional_kind(IMPORTED_SERVICE_IMPORTS.in_version("v1beta1"))
    assert seen.events == [("ADDED", "nginx")]
    assert caches.watching(SERVICE_IMPORTS) is first

    # The CRD goes (the API server ends its watches): what the kind held is taken back, and it
    # is no longer watched.
    await client.delete(CRDS, SERVICE_IMPORTS)
    await seen.until(lambda: ("DELETED", "nginx") in seen.events)
    async with asyncio.timeout(10):
        await first.ended()
    assert first.failed and caches.watching(SERVICE_IMPORTS) is None

    # Back: watched anew, and the subscriber gets its contents.
    await install_crds(client)
    await client.create(SERVICE_IMPORTS_V1BETA1, imported_service_import("db"), namespace="web")
    again = await caches.optional_kind(IMPORTED_SERVICE_IMPORTS.in_version("v1beta1"))
    assert again is not first and caches.watching(SERVICE_IMPORTS) is again
    assert seen.events[-1] == ("ADDED", "db")


async def test_stopped_caches_refuse_to_watch_an_optional_kind_or_tiers_and_make_no_request(
    cluster: tuple[SandboxServer, KubeClient, ImportCaches],
) -> None:
    _, client, caches = cluster
    await caches.stop()
    before = client.metrics.total()

    with pytest.raises(CachesStopped, match="stopped"):
        await caches.optional_kind(IMPORTED_SERVICE_IMPORTS.in_version("v1beta1"))
    with pytest.raises(CachesStopped, match="stopped"):
        await caches.tiers(tier_resource("v1beta1"))
    assert client.metrics.total() == before
    assert running_informers(SERVICE_IMPORTS_V1BETA1) == 0


async def test_an_optional_kind_being_watched_when_the_caches_stop_is_stopped_too(
    cluster: tuple[SandboxServer, KubeClient, ImportCaches],
) -> None:
    _, _, caches = cluster
    pending = asyncio.create_task(caches.optional_kind(IMPORTED_SERVICE_IMPORTS.in_version("v1beta1")))
    await asyncio.sleep(0)  # its first list under way
    assert running_informers(SERVICE_IMPORTS_V1BETA1) == 1
    await caches.stop()

    with pytest.raises(CachesStopped, match="stopped"):
        await pending
    assert running_informers(SERVICE_IMPORTS_V1BETA1) == 0
    assert caches.watching(SERVICE_IMPORTS) is None


def _ignore(_: object) -> None:
    pass


async def test_the_caches_take_one_listener_at_a_time(
    cluster: tuple[SandboxServer, KubeClient, ImportCaches],
) -> None:
    _, _, caches = cluster
    unlisten = caches.listen(_ignore, _ignore, _ignore)
    with pytest.raises(RuntimeError, match="already"):
        caches.listen(_ignore, _ignore, _ignore)
    unlisten()
    second = caches.listen(_ignore, _ignore, _ignore)
    unlisten()  # once is enough: a second call unbinds nobody, not the listener bound since
    with pytest.raises(RuntimeError, match="already"):
        caches.listen(_ignore, _ignore, _ignore)
    second()
    caches.listen(_ignore, _ignore, _ignore)()


async def test_a_second_importer_on_the_same_caches_is_refused_and_the_first_still_hears_its_objects(
    cluster: tuple[SandboxServer, KubeClient, ImportCaches],
) -> None:
    _, client, caches = cluster

    def importer() -> ImportApplier:
        return ImportApplier(client, cluster_id="west", report=Reports(), caches=caches)

    first = importer()
    await first.start()
    try:
        await first.handle(service_import("web", "nginx"))
        await first.settled()
        second = importer()
        with pytest.raises(RuntimeError, match="already"):
            await second.start()
        await second.stop()  # as a join that failed stops what it built

        # Someone deletes the first importer's Service: the first hears it and puts it back.
        uid = (await client.get(SERVICES, "antrea-mc-nginx", "web"))["metadata"]["uid"]
        await client.delete(SERVICES, "antrea-mc-nginx", "web")

        async def put_back() -> bool:
            try:
                return (await client.get(SERVICES, "antrea-mc-nginx", "web"))["metadata"]["uid"] != uid
            except NotFound:
                return False

        await eventually(put_back)
    finally:
        await first.stop()

"""List+watch with a local cache: the way a controller learns about a kind.

The cycle: list (paged), remember the list's resourceVersion, mark ``synced``, then
watch from there with bookmarks, advancing the resourceVersion with every event and
bookmark. When the watch ends (server timeout, inactivity watchdog) it is reopened
from the last resourceVersion; when the server answers 410 Gone the informer lists
again and emits the difference between the old cache and the new list, so a delete
that happened while the watch was down is still seen as DELETED.

Connection failures, 5xx and 429 are retried with capped, jittered backoff; any
other error (403, 404 because the CRD is missing, ...) stops the informer and is
raised to its owner by ``run()``, ``wait()``, ``wait_synced()`` and event iterators.

Cached objects keep no ``metadata.managedFields`` (as client-go's TransformStripManagedFields):
server-side apply's bookkeeping, which no reader of a cache uses, is often the larger part of a
small object's JSON and of the dicts and lists the garbage collector scans. A PUT of a cached
object, which then carries none, leaves the server's managedFields as they were.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Self

from kube.backoff import Backoff, Retries
from kube.client import KubeClient, WatchEvent
from kube.errors import ConnectionFailed, Gone, ServerError, TooManyRequests
from kube.resources import Obj, Resource, object_ref
from kube.waiting import cancel_and_wait, until_set_or_done

log = logging.getLogger(__name__)

Handler = Callable[[WatchEvent], Awaitable[None]]
CacheKey = tuple[str, str]  # (namespace or "", name)

DEFAULT_BACKOFF = Backoff()
# Between runs of an informer that failed for good (run_forever): an operator's fix is awaited.
RERUN_BACKOFF = Backoff(initial=1.0, maximum=30.0)
_RETRYABLE = (ConnectionFailed, ServerError, TooManyRequests)


def cache_key(obj: Obj) -> CacheKey:
    meta = obj.get("metadata", {})
    return (meta.get("namespace") or "", meta.get("name", ""))


def drop_managed_fields(obj: Obj) -> Obj:
    """``obj`` without metadata.managedFields, taken out in place: only for an object nobody else
    holds yet (one just decoded from a list or a watch)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def _version(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion", ""))


class EventStream:
    """An async iterator of an informer's events, from the moment it was opened.

    It starts with ADDED events for what the cache already holds, so a consumer that
    subscribes late still sees every object. It ends when the informer stops, and
    raises the informer's error if it failed.
    """

    def __init__(self, informer: Informer) -> None:
        self._informer = informer
        self._queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()

    def _put(self, event: WatchEvent | None) -> None:
        self._queue.put_nowait(event)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent:
        event = await self._queue.get()
        if event is None:
            self._queue.put_nowait(None)  # stay ended for any later __anext__
            if self._informer.error is not None:
                raise self._informer.error
            raise StopAsyncIteration
        return event

    def close(self) -> None:
        self._informer._streams.discard(self)
        self._put(None)


class Informer:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        handler: Handler | None = None,
        inactivity_timeout: float = 120.0,
        watch_timeout_seconds: int = 600,
        backoff: Backoff = DEFAULT_BACKOFF,
        page_size: int = 500,
    ) -> None:
        """``inactivity_timeout``: seconds without any event or bookmark after which the watch
        is reopened (a half-open connection otherwise stalls forever). ``watch_timeout_seconds``:
        asked of the server so that every watch is renewed periodically."""
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.inactivity_timeout = inactivity_timeout
        self.watch_timeout_seconds = watch_timeout_seconds
        self.backoff = backoff
        self.page_size = page_size
        self._handlers: list[Handler] = [handler] if handler else []
        self._cache: dict[CacheKey, Obj] = {}
        self._streams: set[EventStream] = set()
        self._resource_version = ""
        self._failures = 0
        self._task: asyncio.Task[None] | None = None
        self.synced = asyncio.Event()
        self.error: BaseException | None = None
        self.relists = 0
        """How many times the informer listed (1 after the first sync); tests and metrics read it."""

    # Consumers

    def add_handler(self, handler: Handler) -> None:
        """Called (awaited) for every event after the cache took it; an exception is logged."""
        self._handlers.append(handler)

    def events(self) -> EventStream:
        stream = EventStream(self)
        for obj in self._cache.values():
            stream._put(WatchEvent("ADDED", obj))
        if self._task is not None and self._task.done():
            stream._put(None)
        else:
            self._streams.add(stream)
        return stream

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        return self._cache.get((namespace or "", name))

    def list(self, namespace: str | None = None) -> list[Obj]:
        return [obj for (ns, _), obj in self._cache.items() if namespace is None or ns == namespace]

    @property
    def resource_version(self) -> str:
        """The last resourceVersion seen: of the list, an event or a bookmark."""
        return self._resource_version

    # Lifecycle

    def start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"informer-{self.resource.qualified_name}")
            # The error is kept in self.error and raised by wait(); mark it retrieved for asyncio.
            self._task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        self._end_streams()

    async def wait(self) -> None:
        """Until the informer ends: raises its permanent error, returns after stop()."""
        if self._task is not None:
            await asyncio.wait({self._task})
        if self.error is not None:
            raise self.error

    async def wait_synced(self) -> None:
        """Until the first list is in the cache; raises instead if the informer failed first."""
        await until_set_or_done(self.synced, self.start())
        if not self.synced.is_set():
            await self.wait()
            raise RuntimeError("informer stopped before it synced")

    async def __aenter__(self) -> Self:
        await self.wait_synced()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # The loop

    async def run(self) -> None:
        need_list = True
        try:
            while True:
                try:
                    if need_list:
                        await self._relist()
                        need_list = False
                    if not await self._watch():
                        # A watch that ends at once with nothing in it would otherwise spin.
                        await self._pause(ConnectionFailed("watch ended without events"))
                except Gone as err:
                    log.info("watchExpired", extra={"resource": self.resource.qualified_name, "error": str(err)})
                    if not need_list:
                        need_list = True
                        continue
                    # A list's continue token expired mid-paging: list again after a pause.
                    await self._pause(err)
                except _RETRYABLE as err:
                    await self._pause(err)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.error("informerFailed", extra={"resource": self.resource.qualified_name, "error": str(err)})
            self.error = err
            raise
        finally:
            self._end_streams()

    async def run_forever(self, failed_for_good: Backoff = RERUN_BACKOFF) -> None:
        """``run()``, and again after a pause each time it fails for good (the CRD removed, access
        refused): for a process that keeps serving the rest and says, in the log, what it cannot watch."""
        retries = Retries(failed_for_good)
        while True:
            try:
                await self.run()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                if self.synced.is_set():
                    retries.reset()  # it worked for a while: a new failure starts the pauses over
                delay = retries.next_delay()
                log.error(
                    "informerRestarting",
                    extra={
                        "resource": self.resource.qualified_name,
                        "error": str(err),
                        "delaySeconds": round(delay, 3),
                    },
                )
                await asyncio.sleep(delay)

    async def _pause(self, err: Exception) -> None:
        delay = getattr(err, "delay", None)
        if delay is None:
            delay = self.backoff.delay(self._failures)
        self._failures += 1
        log.warning(
            "informerRetry",
            extra={"resource": self.resource.qualified_name, "error": str(err), "delaySeconds": round(delay, 3)},
        )
        await asyncio.sleep(delay)

    async def _relist(self) -> None:
        listed = await self.client.list_all(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
        )
        self._failures = 0
        self.relists += 1
        fresh = {cache_key(obj): drop_managed_fields(obj) for obj in listed.items}
        changes: list[WatchEvent] = []
        for key, obj in fresh.items():
            old = self._cache.get(key)
            if old is None:
                changes.append(WatchEvent("ADDED", obj))
            elif _version(old) != _version(obj):
                changes.append(WatchEvent("MODIFIED", obj))
        changes.extend(WatchEvent("DELETED", obj) for key, obj in self._cache.items() if key not in fresh)
        self._cache = fresh
        self._resource_version = listed.resource_version
        log.debug(
            "informerListed",
            extra={
                "resource": self.resource.qualified_name,
                "count": len(fresh),
                "resourceVersion": listed.resource_version,
            },
        )
        for event in changes:
            await self._dispatch(event)
        self.synced.set()

    async def _watch(self) -> bool:
        """One watch, until it ends; False if it ended at once having delivered nothing."""
        started = asyncio.get_running_loop().time()
        received = False
        stream = self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self._resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_bookmarks=True,
            timeout_seconds=self.watch_timeout_seconds,
            inactivity_timeout=self.inactivity_timeout,
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                self._failures = 0
                received = True
                version = _version(event.object)
                if version:
                    self._resource_version = version
                if event.type == "BOOKMARK":
                    continue
                drop_managed_fields(event.object)
                if event.type == "DELETED":
                    self._cache.pop(cache_key(event.object), None)
                else:
                    self._cache[cache_key(event.object)] = event.object
                await self._dispatch(event)
        # The watchdog ends a watch after inactivity_timeout: that is not "at once".
        return received or asyncio.get_running_loop().time() - started >= min(1.0, self.inactivity_timeout)

    async def _dispatch(self, event: WatchEvent) -> None:
        for stream in self._streams:
            stream._put(event)
        for handler in self._handlers:
            try:
                await handler(event)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception(
                    "informerHandlerFailed",
                    extra={"resource": self.resource.qualified_name, "object": object_ref(event.object)},
                )

    def _end_streams(self) -> None:
        streams, self._streams = self._streams, set()
        for stream in streams:
            stream._put(None)

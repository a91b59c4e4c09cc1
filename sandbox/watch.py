"""Streaming watches: ?watch=true answered as a stream of WatchEvents.

Semantics follow the apiserver: no resourceVersion (or "0") starts with synthetic
ADDED events for what exists; a resourceVersion resumes after it; one older than
the retained log gets an ERROR event carrying a 410 Expired Status (HTTP 200, as a
real apiserver answers a watch). With label or field selectors an object that
stops matching is reported DELETED (as it last matched, at the resourceVersion of the
change) and one that starts matching ADDED.
allowWatchBookmarks=true adds BOOKMARK events every `bookmark_interval` seconds and
2 s before timeoutSeconds runs out; sendInitialEvents=true ends the initial ADDED events
with a bookmark annotated k8s.io/initial-events-end.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from sandbox.context import ApiContext
from sandbox.errors import ApiError
from sandbox.resources import Obj, ResourceType
from sandbox.store import StoredEvent
from sandbox.table import render_table

log = logging.getLogger(__name__)


@dataclass
class WatchRequest:
    rt: ResourceType
    namespace: str | None
    resource_version: str
    matches: Callable[[Obj], bool]
    allow_bookmarks: bool
    send_initial_events: bool
    timeout_seconds: float | None
    table: bool
    include_object: str


def _encode(event_type: str, obj: Any) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


class _Stream:
    def __init__(self, ctx: ApiContext, req: WatchRequest, response: web.StreamResponse) -> None:
        self.ctx, self.req, self.response = ctx, req, response

    def _render(self, obj: Obj) -> Any:
        api_obj = self.req.rt.to_api(obj)
        if self.req.table:
            return render_table(
                self.req.rt,
                [api_obj],
                resource_version=obj["metadata"].get("resourceVersion", ""),
                include_object=self.req.include_object,
            )
        return api_obj

    async def send(self, event_type: str, obj: Obj) -> None:
        await self.response.write(_encode(event_type, self._render(obj)))

    async def bookmark(self, annotations: dict[str, str] | None = None) -> None:
        if not self.req.allow_bookmarks or self.req.table:
            return
        meta: dict[str, Any] = {"resourceVersion": str(self.ctx.store.revision)}
        if annotations:
            meta["annotations"] = annotations
        await self.response.write(
            _encode("BOOKMARK", {"kind": self.req.rt.kind, "apiVersion": self.req.rt.api_version, "metadata": meta})
        )

    async def deliver(self, event: StoredEvent) -> None:
        now_match = self.req.matches(event.object)
        if event.type == "ADDED":
            if now_match:
                await self.send("ADDED", event.object)
            return
        if event.type == "DELETED":
            if now_match:
                await self.send("DELETED", event.object)
            return
        was_match = event.previous is not None and self.req.matches(event.previous)
        if now_match and was_match:
            await self.send("MODIFIED", event.object)
        elif now_match:
            await self.send("ADDED", event.object)
        elif was_match and event.previous is not None:
            # As the watch cache does: the object as it last matched, at the change's resourceVersion.
            left = {**event.previous, "metadata": {**event.previous["metadata"]}}
            left["metadata"]["resourceVersion"] = event.object["metadata"]["resourceVersion"]
            await self.send("DELETED", left)


async def serve_watch(request: web.Request, ctx: ApiContext, req: WatchRequest) -> web.StreamResponse:
    store = ctx.store
    watcher = store.subscribe(req.rt.storage_key, req.namespace)
    try:
        # Subscribing and reading the backlog happen without an await in between, so no
        # event is both in the backlog and in the queue, and none falls between them.
        initial: list[Obj] = []
        backlog: list[StoredEvent] = []
        expired: ApiError | None = None
        if req.send_initial_events or req.resource_version in ("", "0"):
            initial = [o for o in store.list_objects(req.rt.storage_key, req.namespace) if req.matches(o)]
        else:
            try:
                backlog = store.events_since(req.rt.storage_key, req.namespace, int(req.resource_version))
            except ApiError as exc:
                expired = exc
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            await _stream_events(_Stream(ctx, req, response), watcher.queue, initial, backlog, expired)
        except ConnectionResetError:
            # The client went away mid-stream; the response has started, so just end it.
            log.debug("watch client gone", extra={"resource": req.rt.plural})
        return response
    finally:
        store.unsubscribe(watcher)


async def _stream_events(
    stream: _Stream,
    queue: asyncio.Queue[StoredEvent | None],
    initial: list[Obj],
    backlog: list[StoredEvent],
    expired: ApiError | None,
) -> None:
    if expired is not None:
        await stream.response.write(_encode("ERROR", expired.to_status()))
        return
    for obj in initial:
        await stream.send("ADDED", obj)
    if stream.req.send_initial_events:
        await stream.bookmark({"k8s.io/initial-events-end": "true"})
    for event in backlog:
        await stream.deliver(event)
    await _follow(stream, queue, stream.ctx.bookmark_interval, stream.req.timeout_seconds)


async def _follow(
    stream: _Stream, queue: asyncio.Queue[StoredEvent | None], interval: float, lifetime: float | None
) -> None:
    start = time.monotonic()
    deadline = start + lifetime if lifetime else None
    next_bookmark = start + interval
    # Like the apiserver's watch cache, bookmark 2 s before the watch times out.
    if deadline is not None and deadline - 2 > start:
        next_bookmark = min(next_bookmark, deadline - 2)
    while True:
        now = time.monotonic()
        wait = next_bookmark - now
        if deadline is not None:
            wait = min(wait, deadline - now)
        try:
            event = await asyncio.wait_for(queue.get(), timeout=max(wait, 0))
        except TimeoutError:
            if deadline is not None and time.monotonic() >= deadline:
                return
            if queue.empty():
                await stream.bookmark()
            next_bookmark = time.monotonic() + interval
            continue
        if event is None:
            return
        await stream.deliver(event)

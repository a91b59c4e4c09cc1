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

from kube.resources import Obj
from sandbox.context import ApiContext
from sandbox.errors import ApiError
from sandbox.resources import ResourceType
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
    """Events are encoded one by one and written in batches: whatever is queued when the stream
    wakes goes out in one chunk (a real apiserver's watch is as cheap per event as a write is
    not; one write per event would make the sandbox's watches cost a third of a write each)."""

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

    def encode(self, event_type: str, obj: Obj) -> bytes:
        return _encode(event_type, self._render(obj))

    async def write(self, chunks: list[bytes]) -> None:
        if chunks:
            await self.response.write(b"".join(chunks))

    async def bookmark(self, annotations: dict[str, str] | None = None) -> None:
        if not self.req.allow_bookmarks or self.req.table:
            return
        meta: dict[str, Any] = {"resourceVersion": str(self.ctx.store.revision)}
        if annotations:
            meta["annotations"] = annotations
        await self.response.write(
            _encode("BOOKMARK", {"kind": self.req.rt.kind, "apiVersion": self.req.rt.api_version, "metadata": meta})
        )

    def encode_event(self, event: StoredEvent) -> bytes | None:
        """The event as this watch reports it (None: its selectors hide it)."""
        now_match = self.req.matches(event.object)
        if event.type == "ADDED":
            return self._shared(event, "ADDED", event.object) if now_match else None
        if event.type == "DELETED":
            return self._shared(event, "DELETED", event.object) if now_match else None
        was_match = event.previous is not None and self.req.matches(event.previous)
        if now_match and was_match:
            return self._shared(event, "MODIFIED", event.object)
        if now_match:
            return self._shared(event, "ADDED", event.object)
        if was_match and event.previous is not None:
            # As the watch cache does: the object as it last matched, at the change's resourceVersion.
            left = {**event.previous, "metadata": {**event.previous["metadata"]}}
            left["metadata"]["resourceVersion"] = event.object["metadata"]["resourceVersion"]
            return self._shared(event, "LEFT", left)
        return None

    def _shared(self, event: StoredEvent, shown_as: str, obj: Obj) -> bytes:
        """Encoded once per version for every plain watch of the event (a table is per watch:
        its columns and the object in it depend on the request)."""
        event_type = "DELETED" if shown_as == "LEFT" else shown_as
        if self.req.table:
            return self.encode(event_type, obj)
        lines = self.ctx.watch_lines
        rt = self.req.rt
        key = (event.revision, shown_as, f"{rt.plural}.{rt.group}", rt.version)
        line = lines.get(key)
        if line is None:
            line = self.encode(event_type, obj)
            lines.put(key, line)
        return line

    async def deliver(self, events: list[StoredEvent]) -> None:
        await self.write([e for e in map(self.encode_event, events) if e is not None])


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


# Initial events go out this many to a chunk: one write per event costs, one for thousands holds
# them all in memory at once.
_INITIAL_CHUNK = 256


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
    for start in range(0, len(initial), _INITIAL_CHUNK):
        await stream.write([stream.encode("ADDED", obj) for obj in initial[start : start + _INITIAL_CHUNK]])
    if stream.req.send_initial_events:
        await stream.bookmark({"k8s.io/initial-events-end": "true"})
    await stream.deliver(backlog)
    await _follow(stream, queue, stream.ctx.bookmark_interval, stream.req.timeout_seconds)


def _queued(queue: asyncio.Queue[StoredEvent | None], first: StoredEvent) -> tuple[list[StoredEvent], bool]:
    """``first`` and the events queued behind it; True when the end marker (None) came too."""
    events = [first]
    while not queue.empty():
        event = queue.get_nowait()
        if event is None:
            return events, True
        events.append(event)
    return events, False


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
        if queue.empty():
            now = time.monotonic()
            wait = next_bookmark - now
            if deadline is not None:
                wait = min(wait, deadline - now)
            try:
                async with asyncio.timeout(max(wait, 0)):
                    event = await queue.get()
            except TimeoutError:
                if deadline is not None and time.monotonic() >= deadline:
                    return
                if queue.empty():
                    await stream.bookmark()
                next_bookmark = time.monotonic() + interval
                continue
        elif deadline is not None and time.monotonic() >= deadline:
            return
        else:
            event = queue.get_nowait()
        if event is None:
            return
        events, ended = _queued(queue, event)
        await stream.deliver(events)
        if ended:
            return

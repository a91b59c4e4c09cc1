"""GET /api/v1/events: the dashboard's view model as server-sent events.

Events:
- `snapshot` on connect: the whole view model (hub.rest.dashboard).
- `changed`: the whole view model again, when exports, imports, verdicts,
  gateways or import status changed. Commits wake the stream through the
  engine's buses (imports on topic "", verdicts on each member's topic and
  the admin's ""); a burst is debounced so one commit of many items is one
  event. What no bus announces (members' import status reports, a member
  joining) is caught by the periodic refresh, which compares what it would
  send with what it sent.
- `liveness`: ClusterSet readiness and members, when a heartbeat or a
  connection state moved. Heartbeat ages tick in the browser from
  `lastHeartbeat` and `serverTime`, so they need no event of their own.
- a `: keep-alive` comment after 15 s of silence, so proxies keep the line.

A stream ends when its client goes (noticed at the next refresh), when the
hub stops (its buses close) or when the REST app shuts down; its
subscriptions are dropped in `finally` either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web

from hub.engine import Engine
from hub.rest.dashboard import liveness_view, resources_view, view_header
from hub.watch.batches import ImportBatch
from hub.watch.bus import Bus
from kube.waiting import cancel_and_wait
from mcapi.mchub.v1 import common_area_pb2 as pb

if TYPE_CHECKING:
    from hub.rest import RestHub

log = logging.getLogger(__name__)

EVENTS_PATH = "/api/v1/events"
REFRESH_SECONDS = 2.0
DEBOUNCE_SECONDS = 0.2
KEEPALIVE_SECONDS = 15.0
RETRY_MILLISECONDS = 3000
_ADMIN_TOPIC = ""
T = TypeVar("T")


class ChangeFeed:
    """Wakes one stream when a commit touched imports or verdicts.

    One pump task per bus subscription turns published items into a flag;
    the stream reads state from the index itself, so what an item says does
    not matter and a subscription that overflows is simply renewed.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._wake = asyncio.Event()
        self._dirty = False
        self.ended = False
        self._pumps: dict[str, asyncio.Task[None]] = {}

    def start(self) -> None:
        self._pumps["imports"] = asyncio.create_task(
            self._pump(self._engine.imports_bus, "", self._has_changes), name="live-imports"
        )
        self.follow([])

    def follow(self, cluster_ids: Iterable[str]) -> None:
        """Listen for verdicts of exactly these members (and the admin's)."""
        wanted = {f"verdicts:{topic}": topic for topic in {_ADMIN_TOPIC, *cluster_ids}}
        for key in [k for k in self._pumps if k.startswith("verdicts:") and k not in wanted]:
            self._pumps.pop(key).cancel()
        for key, topic in wanted.items():
            if key not in self._pumps:
                self._pumps[key] = asyncio.create_task(
                    self._pump(self._engine.verdicts_bus, topic, self._any), name=f"live-{key}"
                )

    def end(self) -> None:
        self.ended = True
        self._wake.set()

    async def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for a change; whether one happened (and forget it)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._wake.wait()
        return self.settle()

    def settle(self) -> bool:
        """Forget the changes seen so far (the caller is about to read the state)."""
        self._wake.clear()
        dirty, self._dirty = self._dirty, False
        return dirty

    async def close(self) -> None:
        pumps = list(self._pumps.values())
        self._pumps.clear()
        await cancel_and_wait(*pumps)

    def _mark(self) -> None:
        self._dirty = True
        self._wake.set()

    @staticmethod
    def _has_changes(batch: ImportBatch) -> bool:
        return bool(batch.changes)  # empty batches are bookmark ticks

    @staticmethod
    def _any(_: pb.ExportResponse) -> bool:
        return True

    async def _pump(self, bus: Bus[T], topic: str, relevant: Callable[[T], bool]) -> None:
        while not bus.closed:
            with bus.subscribe(topic) as subscription:
                while (item := await subscription.get()) is not None:
                    if relevant(item):
                        self._mark()
            if not bus.closed:
                self._mark()  # overflowed: something was missed, rebuild from state
        self.end()


def _liveness_key(live: dict[str, Any]) -> Any:
    """What a `liveness` event is sent for: ages move every second and are left out."""
    members = [{k: v for k, v in m.items() if k != "heartbeatAgeSeconds"} for m in live["members"]]
    return live["clusterSet"], members


async def _send(response: web.StreamResponse, event: str, data: dict[str, Any]) -> None:
    payload = json.dumps(data, separators=(",", ":"))
    await response.write(f"event: {event}\ndata: {payload}\n\n".encode())


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _stream(request: web.Request, hub: RestHub, feeds: set[ChangeFeed]) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # nginx and friends: do not buffer the stream
        }
    )
    await response.prepare(request)
    feed = ChangeFeed(hub.engine)
    feeds.add(feed)
    loop = asyncio.get_running_loop()
    try:
        feed.start()
        feed.follow(hub.engine.index.members)
        live, sent_resources = liveness_view(hub), resources_view(hub)
        sent_liveness = _liveness_key(live)
        await response.write(f"retry: {RETRY_MILLISECONDS}\n\n".encode())
        await _send(response, "snapshot", {**view_header(hub), **live, **sent_resources})
        last_write = loop.time()
        while True:
            changed = await feed.wait(REFRESH_SECONDS)
            if changed and not feed.ended:
                await asyncio.sleep(DEBOUNCE_SECONDS)  # let the rest of a burst land: one event
                feed.settle()
            if feed.ended or _client_gone(request):
                break
            feed.follow(hub.engine.index.members)
            live, resources = liveness_view(hub), resources_view(hub)
            if resources != sent_resources:
                await _send(response, "changed", {**view_header(hub), **live, **resources})
                sent_resources, sent_liveness = resources, _liveness_key(live)
            elif _liveness_key(live) != sent_liveness:
                await _send(response, "liveness", {**view_header(hub), **live})
                sent_liveness = _liveness_key(live)
            elif loop.time() - last_write >= KEEPALIVE_SECONDS:
                await response.write(b": keep-alive\n\n")
            else:
                continue
            last_write = loop.time()
    except ConnectionResetError:
        log.debug("live client went away", extra={"peer": request.remote})
    finally:
        feeds.discard(feed)
        await feed.close()
    return response


def add_live_routes(app: web.Application, hub: RestHub) -> None:
    """Register the event stream; end every open stream when the app shuts down."""
    feeds: set[ChangeFeed] = set()

    async def end_streams(_: web.Application) -> None:
        for feed in list(feeds):
            feed.end()

    async def events(request: web.Request) -> web.StreamResponse:
        return await _stream(request, hub, feeds)

    app.on_shutdown.append(end_streams)
    app.router.add_get(EVENTS_PATH, events)

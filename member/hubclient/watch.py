"""The member's one WatchImports stream, resumed from the last position the member applied.

Position rule: after the member applied an event of revision r, every revision below r is
complete (the hub sends changes in revision order), but other changes of r may still be on
their way; so the position becomes r-1, and r itself once a bookmark or Synced says so.
Resuming from r-1 re-delivers all of r, which is harmless: applying is idempotent. During
a snapshot the position does not move at all (a snapshot cut short must start over).

The member asks for batches: a Changes message carries several changes, each applied as if it
had come alone, and then moves the position to the message's revision (complete up to there).
A hub that does not batch sends the single form, which is read as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import grpc

from mcapi import trace
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from member.hubclient.connection import CallMetadata
from member.hubclient.errors import HubCallError, TemporaryHubError, classify
from member.hubclient.events import Delete, ImportConsumer, ImportEvent, Resumed, Synced, Upsert, WatchPosition
from member.hubclient.pulse import Pulse
from member.hubclient.retry import HubRetry, RetryPacing
from member.hubclient.state import StateTracker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WatchSettings:
    pacing: RetryPacing
    metadata: CallMetadata = ()  # the token, on every call
    # The largest message the member's channel takes: the hub keeps batches under it.
    max_message_bytes: int = 0


class ImportApplyError(Exception):
    """The member's consumer raised: the event was not applied and will be delivered again."""


class ImportWatch:
    def __init__(
        self,
        stub: pb_grpc.CommonAreaServiceAsyncStub,
        cluster_id: str,
        consumer: ImportConsumer,
        tracker: StateTracker,
        settings: WatchSettings,
        *,
        position: WatchPosition | None = None,
        known_imports: Iterable[str] | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self._stub = stub
        self._cluster_id = cluster_id
        self._consumer = consumer
        self._tracker = tracker
        self._settings = settings
        self._on_lost = on_lost
        self._position = position or WatchPosition()
        # The imports the member holds, as far as the session knows; None: it does not know.
        self._known: set[str] | None = set(known_imports) if known_imports is not None else None
        # Per stream: names of the snapshot being received, None outside a snapshot.
        self._snapshot: set[str] | None = None
        self._live = False
        # Fired whenever the position moves.
        self._moved = Pulse()
        self.streams_opened = 0
        # Snapshots received whole: a stream that resumed at the position took none.
        self.snapshots = 0

    @property
    def position(self) -> WatchPosition:
        return self._position

    @property
    def known_imports(self) -> frozenset[str] | None:
        return frozenset(self._known) if self._known is not None else None

    async def wait_applied(self, revision: int) -> None:
        """Until every import change up to `revision` is applied (with the hub's current epoch)."""
        await self._moved.wait_until(lambda: self._position.revision >= revision)

    async def run(self) -> None:
        retry = HubRetry(self._settings.pacing, self._tracker, ask_announce=self._on_lost)
        while True:
            await self._tracker.joined.wait()
            try:
                await self._stream(retry)
                error: Exception = TemporaryHubError(grpc.StatusCode.UNAVAILABLE, "the hub ended the import watch")
            except (HubCallError, ImportApplyError) as exc:
                error = exc
            delay = retry.after(error)
            log.info(
                "import watch ended",
                extra={"error": str(error), "retryInSeconds": round(delay, 3), "revision": self._position.revision},
            )
            await asyncio.sleep(delay)

    async def _stream(self, retry: HubRetry) -> None:
        self.streams_opened += 1
        self._snapshot, self._live = None, False
        request = pb.WatchImportsRequest(
            cluster_id=self._cluster_id,
            epoch=self._position.epoch,
            revision=self._position.revision,
            batched=True,
            max_message_bytes=self._settings.max_message_bytes,
        )
        call = self._stub.WatchImports(request, metadata=self._settings.metadata)
        try:
            while True:
                event = await call.read()
                if event is grpc.aio.EOF:
                    return
                assert isinstance(event, pb.WatchImportsResponse)
                if await self._handle(event):
                    retry.succeeded()
        except grpc.aio.AioRpcError as exc:
            raise classify(exc) from None
        finally:
            call.cancel()
            self._tracker.update(imports_synced=False)

    async def _handle(self, event: pb.WatchImportsResponse) -> bool:
        """Apply one event; True when the watch became live (Resumed or Synced)."""
        kind = event.WhichOneof("event")
        if kind == "resumed":
            self._live = True
            await self._deliver(Resumed())
            self._tracker.update(imports_synced=True)
            log.info("import watch resumed", extra={"epoch": event.epoch, "revision": self._position.revision})
            return True
        if kind == "synced":
            return await self._synced(event)
        if kind == "bookmark":
            if self._live:
                self._advance(event.revision)
            return False
        if kind == "upsert":
            await self._upsert(event.upsert, event.revision)
            return False
        if kind == "delete":
            await self._delete(event.delete.import_name, event.revision)
            return False
        if kind == "changes":
            for change in event.changes.changes:
                if change.HasField("upsert"):
                    await self._upsert(change.upsert, change.revision)
                else:
                    await self._delete(change.delete.import_name, change.revision)
            if self._snapshot is None:
                self._advance(event.revision)
            return False
        log.warning("unknown import watch event", extra={"event": kind or ""})
        return False

    async def _upsert(self, resource: pb.ResourceImport, revision: int) -> None:
        if not self._live and self._snapshot is None:
            self._snapshot = set()
        name = resource.import_name
        trace.mark_import(trace.Hop.IMPORT_RECEIVED, resource, self._cluster_id)
        await self._deliver(Upsert(resource))
        if self._known is not None:
            self._known.add(name)
        if self._snapshot is not None:
            self._snapshot.add(name)
        else:
            self._advance(revision - 1)

    async def _delete(self, name: str, revision: int) -> None:
        # The hub also says "delete" for changes to imports never meant for this member.
        if self._known is None or name in self._known:
            await self._deliver(Delete(name))
            if self._known is not None:
                self._known.discard(name)
        if self._snapshot is None:
            self._advance(revision - 1)

    async def _synced(self, event: pb.WatchImportsResponse) -> bool:
        names = frozenset(self._snapshot or ())
        stale = frozenset(self._known - names) if self._known is not None else frozenset()
        await self._deliver(Synced(event.synced.reason, names, stale))
        self._known = set(names)
        self._snapshot, self._live = None, True
        self.snapshots += 1
        self._position = WatchPosition(event.epoch, event.revision)
        self._moved.fire()
        self._tracker.update(imports_synced=True)
        log.info(
            "import watch synced",
            extra={"epoch": event.epoch, "revision": event.revision, "imports": len(names), "stale": len(stale)},
        )
        return True

    def _advance(self, revision: int) -> None:
        if revision > self._position.revision:
            self._position = WatchPosition(self._position.epoch, revision)
            self._moved.fire()

    async def _deliver(self, item: ImportEvent) -> None:
        try:
            await self._consumer(item)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("import consumer failed", extra={"event": type(item).__name__})
            raise ImportApplyError(f"the member could not apply {type(item).__name__}: {exc}") from exc

"""The member's one Export stream: a sync bracket on every (re)connect, then only changes.

Writes are pipelined (up to `max_in_flight` unanswered requests, each with its own
sequence) but an export never has two writes in flight: updates that arrive meanwhile
coalesce into its latest value, sent when the previous answer is in.

Several upserts to send at once (the bracket's, or changes that queued) go in one ExportUpserts
request, to a hub that says in the stream's initial metadata that it takes them; each still
has its own sequence and counts against `max_in_flight`. A lone upsert goes alone, and so does
everything to a hub that does not say so (an older one).

The hub handles a stream's requests in order and stops at the first it refuses
(PERMISSION_DENIED / INVALID_ARGUMENT end the whole stream), so the refused request is
the oldest one still unanswered: that export is set aside (reported once, not sent again
until it changes) and a new stream, with a new bracket, carries the rest at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from mcapi import names, trace
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from member.hubclient.connection import CallMetadata
from member.hubclient.desired import DesiredExports, ExportRejection
from member.hubclient.errors import HubCallError, TemporaryHubError, classify
from member.hubclient.pulse import sleep_or
from member.hubclient.retry import HubRetry, RetryPacing
from member.hubclient.state import StateTracker
from member.hubclient.verdicts import DELETED, VerdictBook

log = logging.getLogger(__name__)

VerdictListener = Callable[[str, pb.ExportStatus], None]
RejectionListener = Callable[[str, ExportRejection], None]

_ITEM_REFUSALS = (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT)
# One ExportUpserts holds at most this many exports (and half of `max_in_flight`, so that the
# next batch is on its way while the hub stores one) and about this many bytes (the hub takes
# 4 MiB messages by default; an export larger than this goes alone).
MAX_BATCH = 64
MAX_BATCH_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ExportSettings:
    pacing: RetryPacing
    max_in_flight: int
    metadata: CallMetadata = ()  # the token, on every call


@dataclass(frozen=True)
class _Sent:
    """An unanswered request: which item, and for which export value (None: a delete)."""

    kind: str
    name: str = ""
    value: pb.ResourceExport | None = None


class _ItemRefused(TemporaryHubError):
    """One export was refused and set aside; reconnect at once for the others."""


class ExportPump:
    def __init__(
        self,
        stub: pb_grpc.CommonAreaServiceAsyncStub,
        desired: DesiredExports,
        verdicts: VerdictBook,
        tracker: StateTracker,
        settings: ExportSettings,
        *,
        on_verdict: VerdictListener | None = None,
        on_rejected: RejectionListener | None = None,
        on_not_joined: Callable[[], None] | None = None,
    ) -> None:
        self._stub = stub
        self._desired = desired
        self._verdicts = verdicts
        self._tracker = tracker
        self._settings = settings
        self._on_verdict = on_verdict
        self._on_rejected = on_rejected
        self._on_not_joined = on_not_joined
        # Answers, changes and stop all fire this: the writer and idle waiters re-check on it.
        self._activity = desired.changed
        self._stopping = asyncio.Event()
        self._streaming = False
        self._sequence = 0
        self._flight: dict[int, _Sent] = {}
        # Whether this stream's hub takes ExportUpserts (its initial metadata says so).
        self._batches = False
        self._busy: set[str] = set()
        self._bracket_done = False
        # Streams opened so far: lets tests (and metrics) see that nothing loops tightly.
        self.streams_opened = 0

    # ---- observers -----------------------------------------------------------

    def idle(self) -> bool:
        """The hub has heard every desired change and answered every write."""
        return self._bracket_done and not self._flight and not self._desired.has_pending(set())

    async def wait_idle(self) -> None:
        await self._activity.wait_until(self.idle)

    # ---- lifecycle -----------------------------------------------------------

    async def run(self) -> None:
        retry = HubRetry(self._settings.pacing, self._tracker, ask_announce=self._on_not_joined)
        while not self._stopping.is_set():
            await self._tracker.joined.wait()
            if self._stopping.is_set():
                return
            try:
                await self._stream(retry)
                if self._stopping.is_set():
                    return
                error: HubCallError = TemporaryHubError(grpc.StatusCode.UNAVAILABLE, "the hub ended the export stream")
            except HubCallError as exc:
                error = exc
            if isinstance(error, _ItemRefused):
                retry.succeeded()
                delay = 0.0  # the others go on a new stream at once
            else:
                delay = retry.after(error)
            log.info(
                "export stream ended",
                extra={"code": error.code.name, "details": error.details, "retryInSeconds": round(delay, 3)},
            )
            if delay > 0 and await sleep_or(self._stopping, delay):
                return

    async def close(self, task: asyncio.Task[None], grace: float) -> None:
        """Finish what is in flight and close the stream; cancel after `grace` seconds."""
        self._stopping.set()
        self._activity.fire()
        if not self._streaming:
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            log.warning("export stream did not drain in time", extra={"inFlight": len(self._flight)})
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    # ---- one stream ----------------------------------------------------------

    async def _stream(self, retry: HubRetry) -> None:
        self.streams_opened += 1
        call = self._stub.Export(metadata=self._settings.metadata)
        self._streaming = True
        writer = asyncio.create_task(self._write(call), name="hubclient-export-writer")
        try:
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    return
                assert isinstance(response, pb.ExportResponse)
                if self._answer(response):
                    retry.succeeded()
        except grpc.aio.AioRpcError as exc:
            raise self._refused_item(exc) or classify(exc) from None
        finally:
            self._streaming = False
            writer.cancel()
            [outcome] = await asyncio.gather(writer, return_exceptions=True)
            if isinstance(outcome, Exception):
                log.error("export writer failed", exc_info=outcome)
            call.cancel()
            self._flight.clear()
            self._busy.clear()
            self._bracket_done = False
            self._tracker.update(exports_synced=False)
            self._activity.fire()

    async def _write(self, call: grpc.aio.StreamStreamCall[pb.ExportRequest, pb.ExportResponse]) -> None:
        try:
            await self._send(call, pb.ExportRequest(sync_begin=pb.SyncBegin()), _Sent("sync_begin"))
            self._batches = (names.EXPORT_BATCHES_METADATA, "1") in tuple(await call.initial_metadata() or ())
            await self._send_upserts(call, self._desired.begin_sync())
            await self._send(call, pb.ExportRequest(sync_end=pb.SyncEnd()), _Sent("sync_end"))
            while True:
                if self._stopping.is_set() and not self._flight and not self._desired.has_pending(set()):
                    await call.done_writing()
                    return
                free = self._settings.max_in_flight - len(self._flight)
                changes = self._desired.take_pending(self._busy, free) if free > 0 else []
                if not changes:
                    await self._activity.wait()
                    continue
                upserts: list[pb.ResourceExport] = []
                for name, value in changes:
                    if value is not None:
                        upserts.append(value)
                        continue
                    await self._send_upserts(call, upserts)
                    upserts = []
                    request = pb.ExportRequest(delete=pb.ExportDelete(export_name=name))
                    await self._send(call, request, _Sent("delete", name))
                await self._send_upserts(call, upserts)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError, grpc.aio.UsageError):
            return  # the stream failed; the reader reports how

    def _batch_limit(self) -> int:
        return max(1, min(MAX_BATCH, self._settings.max_in_flight // 2)) if self._batches else 1

    async def _send_upserts(
        self, call: grpc.aio.StreamStreamCall[pb.ExportRequest, pb.ExportResponse], exports: list[pb.ResourceExport]
    ) -> None:
        """Upserts in order: in batches to a hub that takes them, else (or when alone) one by one."""
        limit = self._batch_limit()
        batch: list[pb.ResourceExport] = []
        size = 0
        for export in exports:
            export_size = export.ByteSize()
            if batch and (len(batch) >= limit or size + export_size > MAX_BATCH_BYTES):
                await self._send_batch(call, batch)
                batch, size = [], 0
            batch.append(export)
            size += export_size
        if batch:
            await self._send_batch(call, batch)

    async def _send_batch(
        self, call: grpc.aio.StreamStreamCall[pb.ExportRequest, pb.ExportResponse], batch: list[pb.ResourceExport]
    ) -> None:
        sent = [_Sent("upsert", export.export_name, export) for export in batch]
        if len(batch) == 1:
            await self._send(call, pb.ExportRequest(upsert=batch[0]), *sent)
        else:
            await self._send(call, pb.ExportRequest(upserts=pb.ExportUpserts(exports=batch)), *sent)

    async def _send(
        self,
        call: grpc.aio.StreamStreamCall[pb.ExportRequest, pb.ExportResponse],
        request: pb.ExportRequest,
        *sent: _Sent,
    ) -> None:
        """One request carrying the items ``sent`` (several: an ExportUpserts), each with a
        sequence of its own, the first the request's; once that many more may be in flight."""
        while len(self._flight) + len(sent) > self._settings.max_in_flight:
            await self._activity.wait()
        request.sequence = self._sequence + 1
        for item in sent:
            self._sequence += 1
            self._flight[self._sequence] = item
            if item.name:
                self._busy.add(item.name)
            if item.value is not None:
                trace.mark_export(trace.Hop.EXPORT_SENT, item.value, item.value.cluster_id)
        await call.write(request)

    # ---- answers -------------------------------------------------------------

    def _answer(self, response: pb.ExportResponse) -> bool:
        """Apply one answer (or a batch's answers); True when it completed a sync bracket."""
        if response.HasField("answers"):
            return any([self._answer(answer) for answer in response.answers.answers])
        if response.sequence == 0:
            self._unsolicited(response)
            return False
        sent = self._flight.pop(response.sequence, None)
        if sent is None:
            log.warning("export answer for an unknown request", extra={"sequence": response.sequence})
            return False
        self._busy.discard(sent.name)
        self._activity.fire()
        if sent.kind == "upsert":
            assert sent.value is not None
            if self._desired.is_current(sent.name, sent.value) and self._verdicts.answered(
                sent.name, sent.value, response.status
            ):
                self._tell_verdict(sent.name, response.status)
        elif sent.kind == "delete":
            if self._desired.get(sent.name) is None:
                self._verdicts.forget(sent.name)
                self._tell_verdict(sent.name, response.status if response.HasField("status") else DELETED)
        elif sent.kind == "sync_end":
            for name in response.sync_end.deleted:
                if self._desired.get(name) is None or self._desired.rejection(name) is not None:
                    self._verdicts.forget(name)
                    self._tell_verdict(name, DELETED)
            self._bracket_done = True
            self._tracker.update(exports_synced=True)
            log.info("export sync bracket done", extra={"swept": len(response.sync_end.deleted)})
            return True
        return False

    def _unsolicited(self, response: pb.ExportResponse) -> None:
        name = response.export_name
        if self._desired.get(name) is not None and self._verdicts.changed(name, response.status):
            self._tell_verdict(name, response.status)

    def _refused_item(self, exc: grpc.aio.AioRpcError) -> HubCallError | None:
        """If the hub refused one export (not the stream), set it aside and say so."""
        if exc.code() not in _ITEM_REFUSALS or not self._flight:
            return None
        sent = self._flight[min(self._flight)]
        if sent.kind not in ("upsert", "delete"):
            return None
        rejection = ExportRejection(exc.code(), exc.details() or "")
        if self._desired.reject(sent.name, sent.value, rejection):
            log.warning(
                "export refused by the hub",
                extra={"exportName": sent.name, "code": rejection.code.name, "details": rejection.message},
            )
            self._tell_rejected(sent.name, rejection)
        return _ItemRefused(exc.code(), exc.details() or "")

    # ---- listeners -----------------------------------------------------------

    def _tell_verdict(self, name: str, status: pb.ExportStatus) -> None:
        if self._on_verdict is None:
            return
        try:
            self._on_verdict(name, status)
        except Exception:
            log.exception("verdict listener failed", extra={"exportName": name})

    def _tell_rejected(self, name: str, rejection: ExportRejection) -> None:
        if self._on_rejected is None:
            return
        try:
            self._on_rejected(name, rejection)
        except Exception:
            log.exception("rejection listener failed", extra={"exportName": name})

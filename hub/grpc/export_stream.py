"""One Export stream: a member's requests in order, answered, with its unsolicited verdicts.

Three tasks meet in one queue of answers: the pump reads the member's requests into an inbox
(while the inbox is full, gRPC flow control slows the member); the reader processes them in
order, upserts that queued up meanwhile sharing one durable write (Engine.upsert_many); the
forwarder adds the verdicts the engine publishes for this owner unasked. The stream ends at
the member's half-close, or with the first failure, which the call maps (hub.grpc.calls).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from hub.auth.identity import Identity
from hub.engine import Engine
from hub.errors import DETAIL_BYTES, HubError, InvalidRequest, NotJoined, Unavailable, bounded
from hub.grpc.export_bracket import SyncBracket
from hub.grpc.lenient import Malformed
from hub.merge.ownership import ADMIN_OWNER
from hub.metrics import HubMetrics
from hub.store.base import StoreError
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)

_END = object()
# Upserts that queued while the previous write was syncing are committed together.
_BATCH_LIMIT = 256
Request = pb.ExportRequest | Malformed


class ExportStream:
    def __init__(self, engine: Callable[[], Engine], who: Identity, metrics: HubMetrics) -> None:
        # The engine serving now (replaced when this replica takes over or steps down).
        self._engine = engine
        self._who = who
        self._metrics = metrics

    async def answers(self, requests: AsyncIterator[Request]) -> AsyncIterator[pb.ExportResponse]:
        """The stream's answers; raises what ended it (a refusal, a store failure, ...)."""
        out: asyncio.Queue[object] = asyncio.Queue()
        topic = ADMIN_OWNER if self._who.admin else self._who.cluster_id
        with self._engine().verdicts_bus.subscribe(topic) as verdicts:
            reader = asyncio.create_task(self._read(requests, out))
            forwarder = asyncio.create_task(self._forward_verdicts(verdicts, out))
            try:
                while True:
                    item = await out.get()
                    if item is _END:
                        return
                    if isinstance(item, Exception):
                        raise item
                    assert isinstance(item, pb.ExportResponse)
                    yield item
            finally:
                reader.cancel()
                forwarder.cancel()

    async def _forward_verdicts(self, verdicts: Any, out: asyncio.Queue[object]) -> None:
        while True:
            item = await verdicts.get()
            if item is None:
                if verdicts.ended:  # the member was removed, or the ClusterSet ended: it must announce again
                    out.put_nowait(NotJoined(verdicts.ended))
                    return
                reason = "hub shutting down" if self._engine().verdicts_bus.closed else "verdict queue overflowed"
                out.put_nowait(Unavailable(reason))
                return
            out.put_nowait(item)

    @staticmethod
    async def _pump(requests: AsyncIterator[Request], inbox: asyncio.Queue[object]) -> None:
        try:
            async for request in requests:
                # Waits while the inbox is full: gRPC flow control then slows the member.
                await inbox.put(request)
            await inbox.put(_END)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # handed to the reader, which ends the stream
            await inbox.put(exc)

    async def _read(self, requests: AsyncIterator[Request], out: asyncio.Queue[object]) -> None:
        """Process requests in order; upserts that queued up meanwhile share one durable write."""
        inbox: asyncio.Queue[object] = asyncio.Queue(maxsize=_BATCH_LIMIT * 4)
        pump = asyncio.create_task(self._pump(requests, inbox))
        bracket = SyncBracket()
        who = self._who
        try:
            while True:
                items = [await inbox.get()]
                while not inbox.empty() and len(items) < _BATCH_LIMIT:
                    items.append(inbox.get_nowait())
                upserts: list[tuple[Any, int]] = []
                for item in items:
                    if isinstance(item, pb.ExportRequest) and item.WhichOneof("item") == "upsert":
                        upserts.append((item.upsert, item.sequence))
                        continue
                    await self._flush_upserts(upserts, bracket, out)
                    upserts = []
                    if item is _END:
                        out.put_nowait(_END)
                        return
                    if isinstance(item, BaseException):
                        raise item
                    try:
                        await self._handle_other(item, bracket, out)
                    except HubError as exc:
                        raise _naming_sequence(exc, getattr(item, "sequence", 0)) from None
                await self._flush_upserts(upserts, bracket, out)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # ends the stream (hub.grpc.calls maps it)
            if isinstance(exc, HubError):
                log.info("export refused", extra={"caller": who.describe(), "error": str(exc)})
            elif isinstance(exc, StoreError):  # nothing was acknowledged; the member retries
                detail = bounded(str(exc), DETAIL_BYTES)
                log.warning("export not stored", extra={"caller": who.describe(), "error": detail})
            out.put_nowait(exc)
        finally:
            pump.cancel()

    async def _flush_upserts(
        self, upserts: list[tuple[Any, int]], bracket: SyncBracket, out: asyncio.Queue[object]
    ) -> None:
        if not upserts:
            return
        responses, refusal = await self._engine().upsert_many(self._who, upserts)
        for response in responses:
            bracket.mention(response.export_name)
            out.put_nowait(response)
        for export, _ in upserts[: len(responses)]:
            self._metrics.exports_received.labels(kind=export.WhichOneof("payload") or "").inc()
        if refusal is not None:
            raise _naming_sequence(refusal, upserts[len(responses)][1])

    async def _handle_other(self, request: object, bracket: SyncBracket, out: asyncio.Queue[object]) -> None:
        """Everything but upserts, moving the stream's state machine (export_bracket)."""
        if isinstance(request, Malformed):
            raise InvalidRequest(request.describe())
        assert isinstance(request, pb.ExportRequest)
        item = request.WhichOneof("item")
        if item == "sync_begin":
            bracket.begin()
            out.put_nowait(pb.ExportResponse(sequence=request.sequence, sync_begun=True))
        elif item == "delete":
            response = await self._engine().delete(self._who, request.delete.export_name, request.sequence)
            bracket.drop(request.delete.export_name)
            out.put_nowait(response)
        elif item == "sync_end":
            out.put_nowait(await self._engine().sweep(self._who, bracket.mentioned(), request.sequence))
            bracket.end()
        else:
            raise InvalidRequest("an ExportRequest must carry sync_begin, upsert, delete or sync_end")


def _naming_sequence(error: HubError, sequence: int) -> HubError:
    """The same refusal, saying which request it answers (the stream ends with it)."""
    if not sequence:
        return error
    return error.with_note(f" (request sequence {sequence})")

"""One Export stream: a member's requests in order, answered, with its unsolicited verdicts.

Four tasks meet in one queue of answers: the pump reads the member's requests into an inbox
(while the inbox is full, gRPC flow control slows the member); the reader processes them in
order, upserts that queued up meanwhile sharing one write (Engine.admit_many); the answerer
sends each write's answers, in order, once the write is durable (Engine.published), while the
reader already decides the next one, so a stream's writes share fsyncs; the forwarder adds the
verdicts the engine publishes for this owner unasked. The stream ends at the member's
half-close, or with the first failure, which the call maps (hub.grpc.calls).

An ExportUpserts request is several upserts, the i-th with the request's sequence + i, each
admitted as if it had come alone (in the same write as the upserts around it); their answers
go back together in one ExportResponse, so a member with many exports to send (a resync, a
burst) pays gRPC's cost per message once per batch, on both sides.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from hub.auth.identity import Identity
from hub.engine import Engine
from hub.errors import DETAIL_BYTES, HubError, InvalidRequest, NotJoined, Unavailable, bounded
from hub.grpc.export_bracket import SyncBracket
from hub.grpc.lenient import Malformed
from hub.merge.ownership import ADMIN_OWNER
from hub.metrics import HubMetrics
from hub.store.base import StoreError
from mcapi import trace
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)

_END = object()
# Upserts that queued while the previous write was being decided are committed together, up to
# this many (a batch request is never split).
_BATCH_LIMIT = 256
# The most exports one ExportUpserts may carry (a member sends 64): a request that names more is
# refused, since its one write would hold every other stream's writes up while it is decided.
MAX_BATCH_UPSERTS = 1000
# Writes decided whose answers wait for durability, beyond the one being answered: then the
# reader waits before it takes the next requests, and those that come meanwhile make one
# larger write (an export costs about half as much in a write of fifty as alone).
_UNANSWERED_LIMIT = 1
Request = pb.ExportRequest | Malformed


@dataclass(frozen=True)
class _Upsert:
    export: pb.ResourceExport
    sequence: int
    # The sequence of the ExportUpserts request it came in; None: it came alone.
    batch: int | None = None


def _upserts_of(request: object) -> list[_Upsert]:
    """The upserts a request carries (none: it is another kind of request, or an empty batch)."""
    if not isinstance(request, pb.ExportRequest):
        return []
    kind = request.WhichOneof("item")
    if kind == "upsert":
        return [_Upsert(request.upsert, request.sequence)]
    if kind == "upserts":
        first = request.sequence
        return [_Upsert(e, first + i, first) for i, e in enumerate(request.upserts.exports)]
    return []


class ExportStream:
    def __init__(self, engine: Callable[[], Engine], who: Identity, metrics: HubMetrics) -> None:
        # The engine serving now (replaced when this replica takes over or steps down).
        self._engine = engine
        self._who = who
        self._metrics = metrics

    async def answers(self, requests: AsyncIterator[Request]) -> AsyncIterator[pb.ExportResponse]:
        """The stream's answers; raises what ended it (a refusal, a store failure, ...)."""
        out: asyncio.Queue[object] = asyncio.Queue()
        decided = _Decided(_UNANSWERED_LIMIT)
        topic = ADMIN_OWNER if self._who.admin else self._who.cluster_id
        with self._engine().verdicts_bus.subscribe(topic) as verdicts:
            reader = asyncio.create_task(self._read(requests, decided))
            answerer = asyncio.create_task(self._answer(decided, out))
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
                answerer.cancel()
                forwarder.cancel()

    async def _answer(self, decided: _Decided, out: asyncio.Queue[object]) -> None:
        """Each write's answers, in order, once it is durable."""
        while True:
            revision, items = await decided.take()
            try:
                await self._engine().published(revision)
            except StoreError as exc:  # nothing after the last durable write was acknowledged
                log.warning("export not stored", extra={"caller": self._who.describe(), "error": str(exc)})
                out.put_nowait(exc)
                return
            for item in items:
                out.put_nowait(item)

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

    async def _pump(self, requests: AsyncIterator[Request], inbox: asyncio.Queue[object]) -> None:
        counted = self._metrics.export_requests
        try:
            async for request in requests:
                item = request.WhichOneof("item") if isinstance(request, pb.ExportRequest) else None
                counted.labels(item=item or "malformed").inc()
                if trace.enabled():
                    for upsert in _upserts_of(request):
                        trace.mark_export(trace.Hop.HUB_RECEIVED, upsert.export)
                # Waits while the inbox is full: gRPC flow control then slows the member.
                await inbox.put(request)
            await inbox.put(_END)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # handed to the reader, which ends the stream
            await inbox.put(exc)

    async def _read(self, requests: AsyncIterator[Request], decided: _Decided) -> None:
        """Process requests in order; upserts that queued up meanwhile share one write."""
        inbox: asyncio.Queue[object] = asyncio.Queue(maxsize=_BATCH_LIMIT * 4)
        pump = asyncio.create_task(self._pump(requests, inbox))
        bracket = SyncBracket()
        who = self._who
        try:
            while True:
                first = await inbox.get()
                # Until a decision may wait for its answers: the requests that come meanwhile join
                # this write, rather than wait behind a small one decided now.
                await decided.room()
                items = [(first, _upserts_of(first))]
                taken = len(items[0][1])
                while not inbox.empty() and taken < _BATCH_LIMIT:
                    item = inbox.get_nowait()
                    items.append((item, _upserts_of(item)))
                    taken += len(items[-1][1])
                upserts: list[_Upsert] = []
                for item, carried in items:
                    if 0 < len(carried) <= MAX_BATCH_UPSERTS:
                        upserts.extend(carried)
                        continue
                    await self._flush_upserts(upserts, bracket, decided)
                    upserts = []
                    if item is _END:
                        await decided.put((0, [_END]))
                        return
                    if isinstance(item, BaseException):
                        raise item
                    try:
                        await decided.put((0, [await self._handle_other(item, bracket)]))
                    except HubError as exc:
                        raise _naming_sequence(exc, getattr(item, "sequence", 0)) from None
                await self._flush_upserts(upserts, bracket, decided)
        except asyncio.CancelledError:
            raise
        except _Ended:
            return
        except Exception as exc:  # ends the stream (hub.grpc.calls maps it), after the answers before it
            if isinstance(exc, HubError):
                log.info("export refused", extra={"caller": who.describe(), "error": str(exc)})
            elif isinstance(exc, StoreError):  # nothing was acknowledged; the member retries
                detail = bounded(str(exc), DETAIL_BYTES)
                log.warning("export not stored", extra={"caller": who.describe(), "error": detail})
            await decided.put((0, [exc]))
        finally:
            pump.cancel()

    async def _flush_upserts(self, upserts: list[_Upsert], bracket: SyncBracket, decided: _Decided) -> None:
        if not upserts:
            return
        admitted = await self._engine().admit_many(self._who, [(u.export, u.sequence) for u in upserts])
        answers: list[object] = []
        together = pb.ExportResponse()  # the answer to the batch being answered
        for upsert, response in zip(upserts, admitted.responses, strict=False):
            bracket.mention(response.export_name)
            if upsert.batch is None:
                answers.append(response)
                continue
            if upsert.sequence == upsert.batch:  # the first of its request (a batch is never split)
                together = pb.ExportResponse()
                answers.append(together)
            together.answers.answers.append(response)
        kinds = Counter(u.export.WhichOneof("payload") or "" for u in upserts[: len(admitted.responses)])
        for kind, count in kinds.items():
            self._metrics.exports_received.labels(kind=kind).inc(count)
        if admitted.refusal is not None:
            refusal = _naming_sequence(admitted.refusal, upserts[len(admitted.responses)].sequence)
            log.info("export refused", extra={"caller": self._who.describe(), "error": str(refusal)})
            answers.append(refusal)
        await decided.put((admitted.revision, answers))
        if admitted.refusal is not None:
            raise _Ended

    async def _handle_other(self, request: object, bracket: SyncBracket) -> pb.ExportResponse:
        """Everything but upserts, moving the stream's state machine (export_bracket)."""
        if isinstance(request, Malformed):
            raise InvalidRequest(request.describe())
        assert isinstance(request, pb.ExportRequest)
        item = request.WhichOneof("item")
        if item == "sync_begin":
            bracket.begin()
            return pb.ExportResponse(sequence=request.sequence, sync_begun=True)
        if item == "delete":
            response = await self._engine().delete(self._who, request.delete.export_name, request.sequence)
            bracket.drop(request.delete.export_name)
            return response
        if item == "sync_end":
            response = await self._engine().sweep(self._who, bracket.mentioned(), request.sequence)
            bracket.end()
            return response
        if item == "upserts":  # with 1..MAX_BATCH_UPSERTS exports, it went the way of the upserts
            count = len(request.upserts.exports)
            if count:
                raise InvalidRequest(f"an ExportUpserts carries at most {MAX_BATCH_UPSERTS} exports; this one {count}")
            raise InvalidRequest("an ExportUpserts must carry at least one export")
        raise InvalidRequest("an ExportRequest must carry sync_begin, upsert, upserts, delete or sync_end")


class _Decided:
    """What the reader decided, in order, for the answerer: the revision its answers wait for, and
    the answers (responses, then maybe the error or the end that follows them). At most `limit`
    wait beyond the one being answered; `room` waits until one more may."""

    def __init__(self, limit: int) -> None:
        self._queue: asyncio.Queue[tuple[int, list[object]]] = asyncio.Queue(maxsize=limit)
        self._room = asyncio.Event()
        self._room.set()

    async def room(self) -> None:
        while self._queue.full():
            self._room.clear()
            await self._room.wait()

    async def put(self, decision: tuple[int, list[object]]) -> None:
        await self._queue.put(decision)

    async def take(self) -> tuple[int, list[object]]:
        decision = await self._queue.get()
        self._room.set()
        return decision


class _Ended(Exception):
    """The stream ended with a refusal already queued behind its answers."""


def _naming_sequence(error: HubError, sequence: int) -> HubError:
    """The same refusal, saying which request it answers (the stream ends with it)."""
    if not sequence:
        return error
    return error.with_note(f" (request sequence {sequence})")

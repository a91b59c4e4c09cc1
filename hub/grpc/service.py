"""CommonAreaService: authenticate, then hand each request to the engine."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from hub.auth.identity import INVALID_TOKEN, Authenticator, Identity
from hub.engine import Engine
from hub.errors import HubError, InvalidRequest, bounded, quote
from hub.grpc.codes import status_code
from hub.grpc.export_bracket import SyncBracket
from hub.grpc.lenient import Malformed, lenient
from hub.grpc.watch_messages import MAX_BATCH_CHANGES, batch_bytes, batched_deltas, batched_snapshot, single_deltas
from hub.import_batch import ImportBatch
from hub.merge.ownership import ADMIN_OWNER
from hub.metrics import HubMetrics
from hub.store.base import EpochMismatch, RevisionCompacted, RevisionInFuture, StoreError
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)

SERVICE_NAME = "mchub.v1.CommonAreaService"

# Metadata a member sends with every call: its cluster ID (needed with shared tokens).
CLUSTER_ID_METADATA = "mchub-cluster-id"
# Trailing metadata of a write refused by a follower: the leader, as this replica knows it.
LEADER_METADATA = "mchub-leader"


@dataclass(frozen=True)
class _Abort:
    code: grpc.StatusCode
    message: str


_END = object()
# Texts of store and transport errors (not client values) are cut to this in logs and refusals.
_DETAIL_BYTES = 512
# Upserts that queued while the previous write was syncing are committed together.
_BATCH_LIMIT = 256
Context = grpc.aio.ServicerContext[Any, Any]


@dataclass
class _Sent:
    """Where a watch stands: the revision it sent in full; whether its subscription overflowed."""

    revision: int
    overflowed: bool = False


class CommonAreaService:
    def __init__(
        self,
        engine: Callable[[], Engine],
        authenticator: Authenticator,
        metrics: HubMetrics,
        is_leader: Callable[[], bool] | None = None,
        *,
        serves_watches: Callable[[], bool] | None = None,
        leader_hint: Callable[[], str] | None = None,
        max_message_bytes: int,
    ) -> None:
        # The engine is replaced when this replica (re)gains the leader Lease, or follows anew.
        self._current_engine = engine
        # The largest message this server sends (its channel's limit): batches of imports fit it.
        self._max_message_bytes = max_message_bytes
        self._auth = authenticator
        self._metrics = metrics
        # Whether this replica takes writes (with the kube store, it holds the Lease).
        self._is_leader: Callable[[], bool] = is_leader or (lambda: True)
        # Whether it serves WatchImports: the leader, or a follower that holds the leader's history.
        self._serves_watches: Callable[[], bool] = serves_watches or self._is_leader
        # Who the leader is, as far as this replica knows ("" when it does not).
        self._leader_hint: Callable[[], str] = leader_hint or (lambda: "")

    # ---- plumbing ------------------------------------------------------------

    @property
    def _engine(self) -> Engine:
        return self._current_engine()

    async def _identity(self, context: Context, *, write: bool = True) -> Identity:
        if write and not self._is_leader():
            await self._not_leader(context)
        if not write and not self._serves_watches():
            await context.abort(grpc.StatusCode.UNAVAILABLE, "this hub replica does not serve watches yet; retry")
        metadata = {key: value for key, value in context.invocation_metadata() or ()}
        scheme, _, token = str(metadata.get("authorization", "")).partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing 'authorization: Bearer <token>'")
        try:
            identity = await self._auth.authenticate(token.strip())
        except HubError as exc:  # cannot tell now: not a verdict on the token
            await self._refuse(context, exc)
            raise
        if identity is None:
            self._metrics.auth_failures.inc()
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, INVALID_TOKEN)
        assert identity is not None
        if identity.any_cluster:
            # A credential shared by several members speaks for the cluster it names.
            named = str(metadata.get(CLUSTER_ID_METADATA, ""))
            if not names.is_valid_cluster_id(named):
                await context.abort(
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"this token is shared by several members: name your cluster in '{CLUSTER_ID_METADATA}' metadata",
                )
            identity = Identity(cluster_id=named)
        return identity

    async def _not_leader(self, context: Context) -> None:
        """A write on a follower: UNAVAILABLE, naming the leader in the text and in trailing
        metadata `mchub-leader` (writes are not proxied: a member sends them to the leader)."""
        leader = self._leader_hint()
        where = f"; the leader is {leader}" if leader else ""
        await context.abort(
            grpc.StatusCode.UNAVAILABLE,
            f"this hub replica is not the leader and takes no writes{where}",
            trailing_metadata=((LEADER_METADATA, leader),) if leader else (),
        )

    @staticmethod
    async def _refuse(context: Context, error: HubError) -> None:
        await context.abort(status_code(error), str(error))

    @staticmethod
    async def _check_parsed(context: Context, request: object) -> None:
        if isinstance(request, Malformed):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, bounded(request.describe()))

    # ---- Announce ------------------------------------------------------------

    async def Announce(self, request: pb.AnnounceRequest | Malformed, context: Context) -> pb.AnnounceResponse:
        who = await self._identity(context)
        await self._check_parsed(context, request)
        assert isinstance(request, pb.AnnounceRequest)
        try:
            return await self._engine.announce(who, request)
        except HubError as exc:
            await self._refuse(context, exc)
            raise
        except StoreError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, _store_failed(exc))
            raise

    # ---- Leave ---------------------------------------------------------------

    async def Leave(self, request: pb.LeaveRequest | Malformed, context: Context) -> pb.LeaveResponse:
        who = await self._identity(context)
        await self._check_parsed(context, request)
        assert isinstance(request, pb.LeaveRequest)
        try:
            return await self._engine.leave(who, request)
        except HubError as exc:
            await self._refuse(context, exc)
            raise
        except StoreError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, _store_failed(exc))
            raise

    # ---- ReportImportStatus --------------------------------------------------

    async def ReportImportStatus(
        self, request: pb.ReportImportStatusRequest | Malformed, context: Context
    ) -> pb.ReportImportStatusResponse:
        who = await self._identity(context)
        await self._check_parsed(context, request)
        assert isinstance(request, pb.ReportImportStatusRequest)
        try:
            self._engine.report_import_status(who, request)
        except HubError as exc:
            await self._refuse(context, exc)
        self._metrics.status_report_calls.labels(method="ReportImportStatus").inc()
        self._metrics.status_reports.inc()
        return pb.ReportImportStatusResponse()

    async def ReportImportStatuses(
        self, request: pb.ReportImportStatusesRequest | Malformed, context: Context
    ) -> pb.ReportImportStatusesResponse:
        who = await self._identity(context)
        await self._check_parsed(context, request)
        assert isinstance(request, pb.ReportImportStatusesRequest)
        try:
            self._engine.report_import_statuses(who, request)
        except HubError as exc:
            await self._refuse(context, exc)
        self._metrics.status_report_calls.labels(method="ReportImportStatuses").inc()
        self._metrics.status_reports.inc(len(request.statuses))
        return pb.ReportImportStatusesResponse()

    # ---- Export --------------------------------------------------------------

    async def Export(
        self, requests: AsyncIterator[pb.ExportRequest | Malformed], context: Context
    ) -> AsyncIterator[pb.ExportResponse]:
        who = await self._identity(context)
        out: asyncio.Queue[object] = asyncio.Queue()
        topic = ADMIN_OWNER if who.admin else who.cluster_id
        self._metrics.export_streams.inc()
        with self._engine.verdicts_bus.subscribe(topic) as verdicts:
            reader = asyncio.create_task(self._read_exports(who, requests, out))
            forwarder = asyncio.create_task(self._forward_verdicts(verdicts, out))
            try:
                while True:
                    item = await out.get()
                    if item is _END:
                        return
                    if isinstance(item, _Abort):
                        await context.abort(item.code, item.message)
                    assert isinstance(item, pb.ExportResponse)
                    yield item
            finally:
                reader.cancel()
                forwarder.cancel()
                self._metrics.export_streams.dec()

    async def _forward_verdicts(self, verdicts: Any, out: asyncio.Queue[object]) -> None:
        while True:
            item = await verdicts.get()
            if item is None:
                if verdicts.ended:  # the member was removed, or the ClusterSet ended: it must announce again
                    out.put_nowait(_Abort(grpc.StatusCode.FAILED_PRECONDITION, verdicts.ended))
                    return
                reason = "hub shutting down" if self._engine.verdicts_bus.closed else "verdict queue overflowed"
                out.put_nowait(_Abort(grpc.StatusCode.UNAVAILABLE, reason))
                return
            out.put_nowait(item)

    async def _pump(self, requests: AsyncIterator[pb.ExportRequest | Malformed], inbox: asyncio.Queue[object]) -> None:
        try:
            async for request in requests:
                # Waits while the inbox is full: gRPC flow control then slows the member.
                await inbox.put(request)
            await inbox.put(_END)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # handed to the processor, which ends the stream
            await inbox.put(exc)

    async def _read_exports(
        self, who: Identity, requests: AsyncIterator[pb.ExportRequest | Malformed], out: asyncio.Queue[object]
    ) -> None:
        """Process requests in order; upserts that queued up meanwhile share one durable write."""
        inbox: asyncio.Queue[object] = asyncio.Queue(maxsize=_BATCH_LIMIT * 4)
        pump = asyncio.create_task(self._pump(requests, inbox))
        bracket = SyncBracket()
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
                    await self._flush_upserts(who, upserts, bracket, out)
                    upserts = []
                    if item is _END:
                        out.put_nowait(_END)
                        return
                    if isinstance(item, BaseException):
                        raise item
                    try:
                        await self._handle_other(who, item, bracket, out)
                    except HubError as exc:
                        raise _naming_sequence(exc, getattr(item, "sequence", 0)) from None
                await self._flush_upserts(who, upserts, bracket, out)
        except HubError as exc:
            log.info("export refused", extra={"caller": who.describe(), "error": str(exc)})
            out.put_nowait(_Abort(status_code(exc), str(exc)))
        except StoreError as exc:  # nothing was acknowledged; the member retries
            log.warning(
                "export not stored", extra={"caller": who.describe(), "error": bounded(str(exc), _DETAIL_BYTES)}
            )
            out.put_nowait(_Abort(grpc.StatusCode.UNAVAILABLE, _store_failed(exc)))
        except asyncio.CancelledError:
            raise
        except grpc.aio.AioRpcError as exc:  # the client went away mid-read
            out.put_nowait(_Abort(exc.code(), bounded(exc.details() or "stream failed")))
        except Exception as exc:  # keep one bad stream from killing others
            log.exception("export stream failed", extra={"caller": who.describe()})
            out.put_nowait(_Abort(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}"))
        finally:
            pump.cancel()

    async def _flush_upserts(
        self,
        who: Identity,
        upserts: list[tuple[Any, int]],
        bracket: SyncBracket,
        out: asyncio.Queue[object],
    ) -> None:
        if not upserts:
            return
        responses, refusal = await self._engine.upsert_many(who, upserts)
        for response in responses:
            bracket.mention(response.export_name)
            out.put_nowait(response)
        for export, _ in upserts[: len(responses)]:
            self._metrics.exports_received.labels(kind=export.WhichOneof("payload") or "").inc()
        if refusal is not None:
            raise _naming_sequence(refusal, upserts[len(responses)][1])

    async def _handle_other(
        self, who: Identity, request: object, bracket: SyncBracket, out: asyncio.Queue[object]
    ) -> None:
        """Everything but upserts, moving the stream's state machine (export_bracket)."""
        if isinstance(request, Malformed):
            raise InvalidRequest(request.describe())
        assert isinstance(request, pb.ExportRequest)
        item = request.WhichOneof("item")
        if item == "sync_begin":
            bracket.begin()
            out.put_nowait(pb.ExportResponse(sequence=request.sequence, sync_begun=True))
        elif item == "delete":
            response = await self._engine.delete(who, request.delete.export_name, request.sequence)
            bracket.drop(request.delete.export_name)
            out.put_nowait(response)
        elif item == "sync_end":
            out.put_nowait(await self._engine.sweep(who, bracket.mentioned(), request.sequence))
            bracket.end()
        else:
            raise InvalidRequest("an ExportRequest must carry sync_begin, upsert, delete or sync_end")

    # ---- WatchImports --------------------------------------------------------

    async def WatchImports(
        self, request: pb.WatchImportsRequest | Malformed, context: Context
    ) -> AsyncIterator[pb.WatchImportsResponse]:
        who = await self._identity(context, write=False)
        await self._check_parsed(context, request)
        assert isinstance(request, pb.WatchImportsRequest)
        if not who.admin and request.cluster_id != who.cluster_id:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"token belongs to cluster {quote(who.cluster_id)}, not {quote(request.cluster_id)}",
            )
        audience: str | None = None if who.admin and not request.cluster_id else request.cluster_id
        engine = self._engine
        self._metrics.watchers.inc()
        try:
            with engine.imports_bus.subscribe() as sub:
                last = 0
                try:
                    async for response in self._initial(engine, request, audience):
                        last = max(last, response.revision)
                        yield response
                except StoreError as exc:
                    await context.abort(grpc.StatusCode.UNAVAILABLE, _store_failed(exc))
                sent = _Sent(last)
                while True:
                    # A batched watcher takes what queued behind the first item too, about one
                    # message's worth at a time (the rest stays counted against its limit).
                    items = [await sub.get()]
                    if request.batched:
                        items += sub.ready(MAX_BATCH_CHANGES)
                    for response in self._answer(engine, items, audience, self._batch_bytes(request), sent):
                        yield response
                    if sent.overflowed:
                        if engine.imports_bus.closed:
                            await context.abort(grpc.StatusCode.UNAVAILABLE, "hub shutting down; resume later")
                        await context.abort(
                            grpc.StatusCode.ABORTED, "watch fell behind; resume from your last revision"
                        )
                        return
        finally:
            self._metrics.watchers.dec()

    async def _initial(
        self, engine: Engine, request: pb.WatchImportsRequest, audience: str | None
    ) -> AsyncIterator[pb.WatchImportsResponse]:
        """Snapshot or resumption, from the engine whose bus the watch subscribed to."""
        reason = pb.SYNCED_REASON_INITIAL
        if request.epoch:
            reason = pb.SYNCED_REASON_EPOCH_CHANGED
            if request.epoch == engine.epoch:
                try:
                    changes = await engine.store.import_changes_since(request.epoch, request.revision)
                except EpochMismatch:
                    reason = pb.SYNCED_REASON_EPOCH_CHANGED
                except (RevisionCompacted, RevisionInFuture):
                    reason = pb.SYNCED_REASON_REVISION_COMPACTED
                else:
                    yield pb.WatchImportsResponse(epoch=engine.epoch, revision=request.revision, resumed=pb.Resumed())
                    by_revision: dict[int, list[Any]] = {}
                    for change in changes:
                        by_revision.setdefault(change.revision, []).append(change)
                    batches = [ImportBatch(r, group, engine.epoch) for r, group in sorted(by_revision.items())]
                    limit = self._batch_bytes(request)
                    for response in self._deltas(engine, batches, audience, limit, request.revision):
                        yield response
                    return
        # A snapshot, read without awaiting so it is consistent with its revision.
        revision = engine.watch_revision
        imports = engine.index.imports_for(audience)
        limit = self._batch_bytes(request)
        if limit is not None:
            for response in batched_snapshot(imports, engine.epoch, revision, limit):
                yield response
        else:
            for imp in imports:
                yield pb.WatchImportsResponse(epoch=engine.epoch, revision=revision, upsert=imp)
        yield pb.WatchImportsResponse(epoch=engine.epoch, revision=revision, synced=pb.Synced(reason=reason))

    def _batch_bytes(self, request: pb.WatchImportsRequest) -> int | None:
        """How large a batch may be for this watch (None: it reads one change per message)."""
        if not request.batched:
            return None
        return batch_bytes(self._max_message_bytes, request.max_message_bytes)

    def _answer(
        self,
        engine: Engine,
        items: list[ImportBatch | None],
        audience: str | None,
        batch_limit: int | None,
        sent: _Sent,
    ) -> Iterator[pb.WatchImportsResponse]:
        """What to send for items taken from the watch's subscription, in order, each message
        made when the one before was taken: their changes (those not sent yet), bookmarks for the
        ticks. ``sent`` follows the revision sent in full, and whether the subscription
        overflowed (the watch ends after what came before)."""
        changed: list[ImportBatch] = []
        for item in items:
            if item is not None and item.changes:
                if item.revision > sent.revision:
                    changed.append(item)
                continue
            yield from self._changed(engine, changed, audience, batch_limit, sent)
            changed = []
            if item is None:
                sent.overflowed = True
                return
            # A bookmark tick: everything up to the engine's revision was sent.
            sent.revision = max(sent.revision, item.revision)
            yield pb.WatchImportsResponse(epoch=engine.epoch, revision=sent.revision, bookmark=pb.Bookmark())
        yield from self._changed(engine, changed, audience, batch_limit, sent)

    def _changed(
        self, engine: Engine, batches: list[ImportBatch], audience: str | None, batch_limit: int | None, sent: _Sent
    ) -> Iterator[pb.WatchImportsResponse]:
        """Batches published since the watch began (counted: resumed ones are not)."""
        yield from self._deltas(engine, batches, audience, batch_limit, sent.revision)
        self._metrics.imports_sent.inc(sum(len(b.changes) for b in batches))
        sent.revision = max([sent.revision, *(b.revision for b in batches)])

    @staticmethod
    def _deltas(
        engine: Engine, batches: list[ImportBatch], audience: str | None, batch_limit: int | None, complete: int
    ) -> Iterator[pb.WatchImportsResponse]:
        """The batches' changes as messages, one per change or in batches of ``batch_limit``
        bytes; ``complete``: the revision sent in full before them."""
        # The epoch of the history that made a batch, even if another serves by now (take-over):
        # a message holds the changes of one epoch, and a new epoch's revisions start anew.
        for n, (epoch, group) in enumerate(itertools.groupby(batches, key=lambda b: b.epoch or engine.epoch)):
            same_epoch = list(group)
            if n:
                complete = same_epoch[0].revision - 1  # another history: nothing of it was sent
            if batch_limit is None:
                for batch in same_epoch:
                    yield from single_deltas(batch, epoch, audience)
            else:
                yield from batched_deltas(same_epoch, epoch, audience, complete, batch_limit)


def _store_failed(error: StoreError) -> str:
    return f"the hub could not use its store ({bounded(str(error), _DETAIL_BYTES)}); retry later"


def _naming_sequence(error: HubError, sequence: int) -> HubError:
    """The same refusal, saying which request it answers (the stream ends with it)."""
    if not sequence:
        return error
    return error.with_note(f" (request sequence {sequence})")


def handlers(service: CommonAreaService) -> grpc.GenericRpcHandler:
    methods: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "Announce": grpc.unary_unary_rpc_method_handler(
            service.Announce,
            request_deserializer=lenient(pb.AnnounceRequest),
            response_serializer=pb.AnnounceResponse.SerializeToString,
        ),
        "Export": grpc.stream_stream_rpc_method_handler(
            service.Export,
            request_deserializer=lenient(pb.ExportRequest),
            response_serializer=pb.ExportResponse.SerializeToString,
        ),
        "WatchImports": grpc.unary_stream_rpc_method_handler(
            service.WatchImports,
            request_deserializer=lenient(pb.WatchImportsRequest),
            response_serializer=pb.WatchImportsResponse.SerializeToString,
        ),
        "ReportImportStatus": grpc.unary_unary_rpc_method_handler(
            service.ReportImportStatus,
            request_deserializer=lenient(pb.ReportImportStatusRequest),
            response_serializer=pb.ReportImportStatusResponse.SerializeToString,
        ),
        "ReportImportStatuses": grpc.unary_unary_rpc_method_handler(
            service.ReportImportStatuses,
            request_deserializer=lenient(pb.ReportImportStatusesRequest),
            response_serializer=pb.ReportImportStatusesResponse.SerializeToString,
        ),
        "Leave": grpc.unary_unary_rpc_method_handler(
            service.Leave,
            request_deserializer=lenient(pb.LeaveRequest),
            response_serializer=pb.LeaveResponse.SerializeToString,
        ),
    }
    return grpc.method_handlers_generic_handler(SERVICE_NAME, methods)

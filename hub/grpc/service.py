"""CommonAreaService: each call gated and authenticated (hub.grpc.calls), then handed to the engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import grpc

from hub.auth.identity import Authenticator, Identity
from hub.engine import Engine
from hub.errors import Forbidden, quote
from hub.grpc.calls import Context, Gate, rpc
from hub.grpc.export_stream import ExportStream
from hub.grpc.export_stream import Request as ExportRequest
from hub.grpc.lenient import lenient
from hub.grpc.watch_stream import WatchImportsStream
from hub.metrics import HubMetrics
from hub.watch.encoded import WatchResponse, serialize
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

SERVICE_NAME = "mchub.v1.CommonAreaService"


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
        self._metrics = metrics
        leads = is_leader or (lambda: True)
        self.gate = Gate(authenticator, metrics, leads, serves_watches or leads, leader_hint or (lambda: ""))

    @property
    def _engine(self) -> Engine:
        return self._current_engine()

    @rpc(writes=True)
    async def Announce(self, who: Identity, request: pb.AnnounceRequest, _: Context) -> pb.AnnounceResponse:
        return await self._engine.announce(who, request)

    @rpc(writes=True)
    async def Leave(self, who: Identity, request: pb.LeaveRequest, _: Context) -> pb.LeaveResponse:
        return await self._engine.leave(who, request)

    @rpc(writes=True)
    async def ReportImportStatus(
        self, who: Identity, request: pb.ReportImportStatusRequest, _: Context
    ) -> pb.ReportImportStatusResponse:
        status = pb.ImportStatus(
            import_name=request.import_name, succeeded=request.succeeded, reason=request.reason, message=request.message
        )
        self._report(who, request.cluster_id, [status], "ReportImportStatus")
        return pb.ReportImportStatusResponse()

    @rpc(writes=True)
    async def ReportImportStatuses(
        self, who: Identity, request: pb.ReportImportStatusesRequest, _: Context
    ) -> pb.ReportImportStatusesResponse:
        self._report(who, request.cluster_id, request.statuses, "ReportImportStatuses")
        return pb.ReportImportStatusesResponse()

    def _report(self, who: Identity, cluster_id: str, statuses: Sequence[pb.ImportStatus], method: str) -> None:
        self._engine.report_import_statuses(who, cluster_id, statuses)
        self._metrics.status_report_calls.labels(method=method).inc()
        self._metrics.status_reports.inc(len(statuses))

    @rpc(writes=True)
    async def Export(
        self, who: Identity, requests: AsyncIterator[ExportRequest], context: Context
    ) -> AsyncIterator[pb.ExportResponse]:
        # Before any answer: the member may send ExportUpserts from here on.
        await context.send_initial_metadata(((names.EXPORT_BATCHES_METADATA, "1"),))
        self._metrics.export_streams.inc()
        try:
            async for response in ExportStream(lambda: self._engine, who, self._metrics).answers(requests):
                yield response
        finally:
            self._metrics.export_streams.dec()

    @rpc(writes=False)
    async def WatchImports(
        self, who: Identity, request: pb.WatchImportsRequest, _: Context
    ) -> AsyncIterator[WatchResponse]:
        if not who.admin and request.cluster_id != who.cluster_id:
            raise Forbidden(f"token belongs to cluster {quote(who.cluster_id)}, not {quote(request.cluster_id)}")
        audience: str | None = None if who.admin and not request.cluster_id else request.cluster_id
        watch = WatchImportsStream(self._engine, request, audience, self._metrics, self._max_message_bytes)
        self._metrics.watchers.inc()
        try:
            async for response in watch.responses():
                yield response
        finally:
            self._metrics.watchers.dec()


# Each method: how grpc calls it, the message it takes, and how it serializes its answers
# (WatchImports sends messages encoded once for many watchers as they are: hub.watch.encoded).
_METHODS: dict[str, tuple[Callable[..., grpc.RpcMethodHandler[Any, Any]], type[Any], Callable[[Any], bytes]]] = {
    "Announce": (grpc.unary_unary_rpc_method_handler, pb.AnnounceRequest, pb.AnnounceResponse.SerializeToString),
    "Export": (grpc.stream_stream_rpc_method_handler, pb.ExportRequest, pb.ExportResponse.SerializeToString),
    "WatchImports": (grpc.unary_stream_rpc_method_handler, pb.WatchImportsRequest, serialize),
    "ReportImportStatus": (
        grpc.unary_unary_rpc_method_handler,
        pb.ReportImportStatusRequest,
        pb.ReportImportStatusResponse.SerializeToString,
    ),
    "ReportImportStatuses": (
        grpc.unary_unary_rpc_method_handler,
        pb.ReportImportStatusesRequest,
        pb.ReportImportStatusesResponse.SerializeToString,
    ),
    "Leave": (grpc.unary_unary_rpc_method_handler, pb.LeaveRequest, pb.LeaveResponse.SerializeToString),
}


def handlers(service: CommonAreaService) -> grpc.GenericRpcHandler:
    """The service's methods for a grpc server; a request that does not decode reaches the
    method as Malformed (hub.grpc.lenient), which refuses it with INVALID_ARGUMENT."""
    methods = {
        name: handler(
            getattr(service, name),
            request_deserializer=lenient(request),
            response_serializer=serializer,
        )
        for name, (handler, request, serializer) in _METHODS.items()
    }
    return grpc.method_handlers_generic_handler(SERVICE_NAME, methods)

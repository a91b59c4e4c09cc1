"""Every method of the hub's gRPC service ends a failed call the same way (hub.grpc.calls):
a typed refusal with its code, a store that failed with UNAVAILABLE (retry later), a bug with
INTERNAL naming only the error's type. The engine's part of each call is made to fail here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from hub.app import HubApp
from hub.errors import Forbidden
from hub.store.base import StoreError
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import Member, MemberFactory, read_until_synced, service_export

Call = Callable[[Member], Awaitable[object]]


async def _announce(east: Member) -> object:
    return await east.announce()


async def _leave(east: Member) -> object:
    return await east.stub.Leave(pb.LeaveRequest(cluster_id="east"))


async def _report(east: Member) -> object:
    request = pb.ReportImportStatusRequest(cluster_id="east", import_name="default-web-service", succeeded=True)
    return await east.stub.ReportImportStatus(request)


async def _reports(east: Member) -> object:
    status = pb.ImportStatus(import_name="default-web-service", succeeded=True)
    return await east.stub.ReportImportStatuses(pb.ReportImportStatusesRequest(cluster_id="east", statuses=[status]))


async def _export(east: Member) -> object:
    return await east.export_session().upsert(service_export("east", "default", "web"))


async def _watch(east: Member) -> object:
    return await read_until_synced(east.watch())


# Each method, the engine's part it hands the call to (made to fail), and the call.
METHODS: dict[str, tuple[Callable[[HubApp], tuple[object, str]], Call]] = {
    "Announce": (lambda hub: (hub.engine, "announce"), _announce),
    "Leave": (lambda hub: (hub.engine, "leave"), _leave),
    "ReportImportStatus": (lambda hub: (hub.engine, "report_import_statuses"), _report),
    "ReportImportStatuses": (lambda hub: (hub.engine, "report_import_statuses"), _reports),
    "Export": (lambda hub: (hub.engine, "admit_many"), _export),
    "WatchImports": (lambda hub: (hub.engine.index, "imports_for"), _watch),
}
FAILURES: dict[str, tuple[Exception, grpc.StatusCode, str]] = {
    "store": (
        StoreError("database or disk is full"),
        grpc.StatusCode.UNAVAILABLE,
        "the hub could not use its store (database or disk is full); retry later",
    ),
    "refusal": (Forbidden("not yours"), grpc.StatusCode.PERMISSION_DENIED, "not yours"),
    "bug": (KeyError("secret"), grpc.StatusCode.INTERNAL, "internal error: KeyError"),
}


@pytest.mark.parametrize("failure", FAILURES)
@pytest.mark.parametrize("method", METHODS)
async def test_every_method_ends_a_failed_call_the_same_way(
    hub: HubApp, connect: MemberFactory, monkeypatch: pytest.MonkeyPatch, method: str, failure: str
) -> None:
    east = await connect("east")
    error, code, details = FAILURES[failure]

    def fail(*_: Any, **__: Any) -> Any:
        raise error

    owner, attribute = METHODS[method][0](hub)
    monkeypatch.setattr(owner, attribute, fail)
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await METHODS[method][1](east)
    assert (failed.value.code(), failed.value.details()) == (code, details)

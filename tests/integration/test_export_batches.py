"""Several upserts in one Export request (ExportUpserts; proto/mchub/v1/common_area.proto, rpc
Export, Batches): the hub says it takes them, handles each as if it had come alone, answers them
together in order, and refuses one of them the way it refuses a lone upsert."""

from __future__ import annotations

import grpc
import pytest

from hub.app import HubApp
from hub.grpc.export_stream import MAX_BATCH_UPSERTS
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import Member, endpoints_export, service_export
from tests.integration.test_export_stream_order import KEPT, east_holding_kept  # noqa: F401 (the fixture east)
from tests.integration.test_hub_security import refused, store_state


def _batch(sequence: int, *exports: pb.ResourceExport) -> pb.ExportRequest:
    return pb.ExportRequest(sequence=sequence, upserts=pb.ExportUpserts(exports=exports))


async def _exported(hub: HubApp) -> dict[str, pb.ResourceExport]:
    return (await store_state(hub))[1]


async def test_the_hub_says_it_takes_batches_before_its_first_answer(east: Member) -> None:
    call = east.stub.Export()
    await call.write(pb.ExportRequest(sequence=1, sync_begin=pb.SyncBegin()))
    assert (names.EXPORT_BATCHES_METADATA, "1") in tuple(await call.initial_metadata() or ())
    assert (await call.read()).sync_begun
    call.cancel()


async def test_a_batch_is_stored_and_answered_together_in_order_one_sequence_each(hub: HubApp, east: Member) -> None:
    exports = [service_export("east", "default", f"web-{i}") for i in range(3)]
    call = east.stub.Export()
    await call.write(_batch(5, *exports))
    answer = await call.read()
    assert answer.sequence == 0 and not answer.export_name, "a batch's answer carries only its answers"
    answers = list(answer.answers.answers)
    assert [a.sequence for a in answers] == [5, 6, 7]
    assert [a.export_name for a in answers] == [e.export_name for e in exports]
    assert all(a.status.verdict == pb.VERDICT_ACCEPTED and a.revision > 0 for a in answers)
    # The stream goes on with lone requests.
    await call.write(pb.ExportRequest(sequence=8, upsert=service_export("east", "default", "alone")))
    alone = await call.read()
    assert alone.sequence == 8 and alone.status.verdict == pb.VERDICT_ACCEPTED
    call.cancel()
    stored = await _exported(hub)
    assert {e.export_name for e in exports} | {KEPT.export_name} < set(stored)


async def test_lone_upserts_and_batches_sent_at_once_are_answered_in_the_order_sent(east: Member) -> None:
    call = east.stub.Export()
    await call.write(pb.ExportRequest(sequence=1, upsert=service_export("east", "default", "a")))
    await call.write(
        _batch(2, service_export("east", "default", "b"), endpoints_export("east", "default", "b", ["10.0.0.2"]))
    )
    await call.write(_batch(4, service_export("east", "default", "c"), service_export("east", "default", "d")))
    await call.write(pb.ExportRequest(sequence=6, upsert=service_export("east", "default", "e")))
    read = [await call.read() for _ in range(4)]
    call.cancel()
    shapes = [[a.sequence for a in r.answers.answers] if r.HasField("answers") else r.sequence for r in read]
    assert shapes == [1, [2, 3], [4, 5], 6]


async def test_a_batch_in_a_bracket_mentions_each_of_its_exports(hub: HubApp, east: Member) -> None:
    web = service_export("east", "default", "web")
    web_endpoints = endpoints_export("east", "default", "web", ["10.0.0.1"])
    call = east.stub.Export()
    await call.write(pb.ExportRequest(sequence=1, sync_begin=pb.SyncBegin()))
    await call.write(_batch(2, web, web_endpoints))
    await call.write(pb.ExportRequest(sequence=4, sync_end=pb.SyncEnd()))
    begun, batch, ended = [await call.read() for _ in range(3)]
    call.cancel()
    assert begun.sync_begun
    assert [a.sequence for a in batch.answers.answers] == [2, 3]
    assert list(ended.sync_end.deleted) == [KEPT.export_name], "only what the bracket did not mention is swept"
    assert set(await _exported(hub)) == {web.export_name, web_endpoints.export_name}


async def test_a_refused_export_in_a_batch_answers_those_before_it_and_names_its_own_sequence(
    hub: HubApp, east: Member
) -> None:
    before, after = service_export("east", "default", "before"), service_export("east", "default", "after")
    theirs = service_export("west", "default", "web")
    call = east.stub.Export()
    await call.write(_batch(10, before, theirs, after))
    answer = await call.read()
    assert [a.export_name for a in answer.answers.answers] == [before.export_name]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call.read()
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "(request sequence 11)" in (info.value.details() or "")
    assert set(await _exported(hub)) == {KEPT.export_name, before.export_name}, "nothing after the refusal is looked at"


async def test_an_empty_batch_is_an_invalid_argument_and_changes_nothing(hub: HubApp, east: Member) -> None:
    session = east.export_session()
    details = await refused(
        hub, grpc.StatusCode.INVALID_ARGUMENT, lambda: session.send(_batch(0)), "at least one export"
    )
    assert "(request sequence 1)" in details


async def test_a_batch_of_more_than_the_hub_takes_is_an_invalid_argument_and_changes_nothing(
    hub: HubApp, east: Member
) -> None:
    too_many = [service_export("east", "default", f"web-{i}") for i in range(MAX_BATCH_UPSERTS + 1)]
    session = east.export_session()
    request = _batch(0, *too_many)
    details = await refused(hub, grpc.StatusCode.INVALID_ARGUMENT, lambda: session.send(request), "at most")
    assert f"this one {MAX_BATCH_UPSERTS + 1}" in details

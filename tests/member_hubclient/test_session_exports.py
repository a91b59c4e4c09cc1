"""Exports: a desired set streamed as differences, verdicts back, refusals set aside, brackets on reconnect."""

from __future__ import annotations

import asyncio

import grpc

from hub.app import HubApp
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import HubSession
from tests.integration.hubclient import endpoints_export, service_export
from tests.member_hubclient.conftest import HubRunner, SessionFactory
from tests.member_hubclient.recorders import WAIT, VerdictRecorder


async def _settled(session: HubSession) -> None:
    async with asyncio.timeout(WAIT):
        await session.wait_exports_settled()


async def test_exports_reach_the_hub_and_their_verdicts_come_back(sessions: SessionFactory, hub: HubApp) -> None:
    verdicts = VerdictRecorder()
    session = await sessions.open("east", on_verdict=verdicts.on_verdict)
    session.set_export(service_export("east", "default", "nginx"))
    session.set_export(endpoints_export("east", "default", "nginx", ["10.96.0.10"]))
    await _settled(session)
    service_name = names.service_export_name("east", "default", "nginx")
    assert service_name in hub.engine.index.exports
    assert names.endpoints_export_name("east", "default", "nginx") in hub.engine.index.exports
    assert names.service_import_name("default", "nginx") in hub.engine.index.imports
    status = session.verdict(service_name)
    assert status is not None and status.verdict == pb.VERDICT_ACCEPTED
    assert verdicts.latest(service_name) == status


async def test_a_later_conflicting_exporter_gives_the_first_an_unsolicited_conflict_verdict(
    sessions: SessionFactory, hub: HubApp
) -> None:
    east_verdicts, west_verdicts = VerdictRecorder(), VerdictRecorder()
    east = await sessions.open("east", on_verdict=east_verdicts.on_verdict)
    west = await sessions.open("west", on_verdict=west_verdicts.on_verdict)
    east.set_export(service_export("east", "default", "nginx", [("http", 80)]))
    await _settled(east)
    west.set_export(service_export("west", "default", "nginx", [("http", 8080)]))
    await _settled(west)
    west_status = west.verdict(names.service_export_name("west", "default", "nginx"))
    assert west_status is not None and west_status.reason == "PortConflict"

    east_name = names.service_export_name("east", "default", "nginx")

    def east_in_conflict() -> bool:
        latest = east_verdicts.latest(east_name)
        return latest is not None and latest.verdict == pb.VERDICT_CONFLICT

    await east_verdicts.wait_for(east_in_conflict)
    status = east.verdict(east_name)
    assert status is not None and (status.verdict, status.reason) == (pb.VERDICT_CONFLICT, "PortConflict")


async def test_rapid_updates_of_one_export_coalesce_into_far_fewer_writes(
    sessions: SessionFactory, hub: HubApp
) -> None:
    session = await sessions.open("east")
    await _settled(session)
    before = hub.engine.revision
    for port in range(1000, 1100):
        session.set_export(service_export("east", "default", "busy", [("http", port)]))
        await asyncio.sleep(0)  # give the writer every chance to send each one
    await _settled(session)
    export = hub.engine.index.exports[names.service_export_name("east", "default", "busy")]
    assert [p.port for p in export.service.ports] == [1099]
    writes = hub.engine.revision - before
    assert 1 <= writes <= 10, f"{writes} writes for 100 updates"


async def test_many_exports_are_pipelined_and_all_arrive(sessions: SessionFactory, hub: HubApp) -> None:
    session = await sessions.open("east", config={"max_in_flight": 16})
    session.replace_all(service_export("east", "default", f"svc-{i}") for i in range(200))
    await _settled(session)
    owned = hub.engine.index.owned_by("east", admin=False)
    assert len(owned) == 200
    session.replace_all(service_export("east", "default", f"svc-{i}") for i in range(150))
    await _settled(session)
    assert len(hub.engine.index.owned_by("east", admin=False)) == 150


def _export_requests(hub: HubApp) -> dict[str, float]:
    return {
        sample.labels["item"]: sample.value
        for metric in hub.metrics.registry.collect()
        if metric.name == "mchub_export_requests"
        for sample in metric.samples
        if sample.name == "mchub_export_requests_total"
    }


async def test_many_exports_go_in_batches_each_answered_and_a_lone_change_goes_alone(
    sessions: SessionFactory, hub: HubApp
) -> None:
    session = await sessions.open("east")  # max_in_flight 128: batches of 64
    session.replace_all(service_export("east", "default", f"svc-{i}") for i in range(200))
    await _settled(session)
    assert len(hub.engine.index.owned_by("east", admin=False)) == 200
    sent = _export_requests(hub)
    assert sent.get("upserts") == 4 and not sent.get("upsert"), f"200 exports of a bracket came in {sent}"
    status = session.verdict(names.service_export_name("east", "default", "svc-199"))
    assert status is not None and status.verdict == pb.VERDICT_ACCEPTED, "each export of a batch has its verdict"
    session.set_export(service_export("east", "default", "svc-0", [("http", 8080)]))
    await _settled(session)
    assert _export_requests(hub).get("upsert") == 1


async def test_a_refused_export_in_a_batch_is_set_aside_and_the_others_of_its_batch_still_arrive(
    sessions: SessionFactory, hub: HubApp
) -> None:
    session = await sessions.open("east")
    bad = service_export("east", "default", "bad")
    bad.service.ports[0].port = 0  # invalid: the hub refuses it alone
    exports = [service_export("east", "default", f"svc-{i}") for i in range(10)]
    session.replace_all([*exports[:5], bad, *exports[5:]])
    await _settled(session)
    owned = set(hub.engine.index.owned_by("east", admin=False))
    assert owned == {e.export_name for e in exports}
    assert session.rejection(bad.export_name) is not None
    assert _export_requests(hub).get("upserts", 0) >= 2, "the others went in batches again on the new stream"


async def test_removing_an_export_while_the_hub_is_down_is_swept_by_the_next_sync_bracket(
    sessions: SessionFactory, hubs: HubRunner, hub: HubApp
) -> None:
    session = await sessions.open("east")
    kept, dropped = service_export("east", "default", "kept"), service_export("east", "default", "dropped")
    session.replace_all([kept, dropped])
    await _settled(session)
    opened = session.export_streams_opened
    await hubs.stop()
    async with asyncio.timeout(WAIT):
        await session.wait_for_state(lambda s: not s.exports_synced)
    session.remove_export(dropped.export_name)
    restarted = await hubs.start()
    await _settled(session)
    assert session.export_streams_opened > opened
    assert kept.export_name in restarted.engine.index.exports
    assert dropped.export_name not in restarted.engine.index.exports
    assert names.service_import_name("default", "dropped") not in restarted.engine.index.imports


async def test_a_refused_export_is_reported_once_and_the_others_still_flow(
    sessions: SessionFactory, hub: HubApp
) -> None:
    verdicts = VerdictRecorder()
    session = await sessions.open("east", on_verdict=verdicts.on_verdict, on_rejected=verdicts.on_rejected)
    good = service_export("east", "default", "good")
    # Claims to be west's export: the hub refuses it with PERMISSION_DENIED, ending the stream.
    foreign = service_export("west", "default", "foreign")
    # Not a DNS-1123 namespace: INVALID_ARGUMENT.
    malformed = service_export("east", "Bad_Namespace", "web")
    session.replace_all([foreign, good, malformed])
    await _settled(session)
    assert good.export_name in hub.engine.index.exports
    assert sorted((n, r.code) for n, r in verdicts.rejections) == [
        (malformed.export_name, grpc.StatusCode.INVALID_ARGUMENT),
        (foreign.export_name, grpc.StatusCode.PERMISSION_DENIED),
    ]
    rejection = session.rejection(foreign.export_name)
    assert rejection is not None and "west" in rejection.message
    streams = session.export_streams_opened
    # Later changes flow on the same stream; the refused exports are not sent again.
    later = service_export("east", "default", "later")
    session.set_export(later)
    await _settled(session)
    assert later.export_name in hub.engine.index.exports
    assert session.export_streams_opened == streams
    assert len(verdicts.rejections) == 2
    # Fixing an export lifts its rejection.
    session.set_export(service_export("east", "good-namespace", "web"))
    session.remove_export(malformed.export_name)
    await _settled(session)
    assert session.rejection(malformed.export_name) is None


async def test_an_oversized_export_is_rejected_locally_without_reaching_the_hub(
    sessions: SessionFactory, hub: HubApp
) -> None:
    verdicts = VerdictRecorder()
    session = await sessions.open("east", on_rejected=verdicts.on_rejected, config={"max_message_bytes": 64 * 1024})
    huge = endpoints_export(
        "east", "default", "huge", [f"10.{i // 65536}.{i // 256 % 256}.{i % 256}" for i in range(5000)]
    )
    session.set_export(huge)
    await _settled(session)
    assert [(n, r.code) for n, r in verdicts.rejections] == [(huge.export_name, grpc.StatusCode.RESOURCE_EXHAUSTED)]
    assert huge.export_name not in hub.engine.index.exports


async def test_an_export_made_before_the_hub_knows_the_member_arrives_after_the_announce(
    sessions: SessionFactory, hubs: HubRunner, hub: HubApp
) -> None:
    session = await sessions.open("east")
    session.set_export(service_export("east", "default", "first"))
    await _settled(session)
    # A hub with an empty store does not know "east": exports are refused (FAILED_PRECONDITION)
    # until the session announces again, which it does on its own.
    replaced = await hubs.replace_data_dir()
    await _settled(session)
    assert names.service_export_name("east", "default", "first") in replaced.engine.index.exports

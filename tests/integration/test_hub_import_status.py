"""ReportImportStatus(es): what members report lives exactly as long as the import it is about."""

from __future__ import annotations

import grpc
import pytest

from hub.app import HubApp
from hub.engine.reports import MAX_REPORTS_PER_CALL
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import Member, MemberFactory, service_export


async def _report(member: Member, import_name: str, succeeded: bool = False) -> None:
    await member.stub.ReportImportStatus(
        pb.ReportImportStatusRequest(
            cluster_id=member.cluster_id, import_name=import_name, succeeded=succeeded, reason="ServiceConflict"
        )
    )


async def test_a_report_about_an_import_not_delivered_to_the_reporter_is_kept_nowhere(
    hub: HubApp, connect: MemberFactory
) -> None:
    east = await connect("east")
    info = pb.ResourceExport(
        export_name=names.cluster_info_export_name("east"),
        cluster_id="east",
        cluster_info=pb.ClusterInfo(cluster_id="east", service_cidr="10.96.0.0/12"),
    )
    await east.export(info)
    await _report(east, names.cluster_info_import_name("east"))  # its own ClusterInfo never goes to east
    assert hub.engine.import_status == {}


async def test_reports_go_with_the_import_they_are_about(hub: HubApp, connect: MemberFactory) -> None:
    east, west = await connect("east"), await connect("west")
    session = east.export_session()
    await session.upsert(service_export("east", "default", "web"))
    imported = names.service_import_name("default", "web")
    await _report(west, imported)
    assert set(hub.engine.import_status[imported]) == {"west"}

    await session.delete(names.service_export_name("east", "default", "web"))
    assert imported not in hub.engine.index.imports
    assert imported not in hub.engine.import_status
    # Exported again: a new import, with nothing reported about it yet.
    await session.upsert(service_export("east", "default", "web"))
    assert imported in hub.engine.index.imports
    assert imported not in hub.engine.import_status


async def test_reports_of_a_removed_member_go_with_it(hub: HubApp, connect: MemberFactory) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "web"))
    await west.export(service_export("west", "default", "web"))
    imported = names.service_import_name("default", "web")
    await _report(east, imported, succeeded=True)
    await _report(west, imported)
    await hub.engine.remove_member("west", "removed by the test")
    assert set(hub.engine.import_status[imported]) == {"east"}


def _statuses(
    member: Member, *reports: pb.ImportStatus, cluster_id: str | None = None
) -> pb.ReportImportStatusesRequest:
    return pb.ReportImportStatusesRequest(cluster_id=cluster_id or member.cluster_id, statuses=reports)


async def test_several_reports_in_one_call_are_kept_as_one_each(hub: HubApp, connect: MemberFactory) -> None:
    east, west = await connect("east"), await connect("west")
    session = east.export_session()
    for name in ("web", "db"):
        await session.upsert(service_export("east", "default", name))
    web, db = names.service_import_name("default", "web"), names.service_import_name("default", "db")
    await west.stub.ReportImportStatuses(
        _statuses(
            west,
            pb.ImportStatus(import_name=web, succeeded=True),
            pb.ImportStatus(import_name=db, succeeded=False, reason="ServiceConflict", message="taken"),
        )
    )
    assert hub.engine.import_status[web]["west"].succeeded
    failed = hub.engine.import_status[db]["west"]
    assert (failed.succeeded, failed.reason, failed.message) == (False, "ServiceConflict", "taken")


@pytest.mark.parametrize(
    ("cluster_id", "reports", "code"),
    [
        ("east", [pb.ImportStatus(import_name="a", succeeded=True)], grpc.StatusCode.PERMISSION_DENIED),
        (
            "west",
            [pb.ImportStatus(import_name="a", succeeded=True), pb.ImportStatus(succeeded=True)],
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            "west",
            [pb.ImportStatus(import_name=f"i{n}", succeeded=True) for n in range(MAX_REPORTS_PER_CALL + 1)],
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    ],
    ids=["another cluster's ID", "a report without import name", "too many reports"],
)
async def test_a_call_with_a_bad_report_keeps_none_of_them(
    hub: HubApp, connect: MemberFactory, cluster_id: str, reports: list[pb.ImportStatus], code: grpc.StatusCode
) -> None:
    west = await connect("west")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await west.stub.ReportImportStatuses(_statuses(west, *reports, cluster_id=cluster_id))
    assert refused.value.code() == code
    assert hub.engine.import_status == {}

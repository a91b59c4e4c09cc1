"""Refusals and log lines quote client values bounded (hub.errors.quote).

A client sends a 1 MiB field; the refusal must still fit grpc's default 8 KiB
metadata limit, so that a member with default channel options reads the real
status (not RESOURCE_EXHAUSTED), and the hub's log must not grow by the value.
The members here use default channel options (tests.integration.hubclient).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator

import grpc
import pytest

from hub.app import HubApp
from mcapi.mchub.v1 import common_area_pb2 as pb
from mchub_cli.logs import JsonFormatter
from tests.integration.hubclient import Member, MemberFactory, service_export
from tests.integration.test_hub_security import refused

HUGE = "a" * (1 << 20)
# What the whole log may grow by for one refused call carrying HUGE.
LOG_BUDGET = 2048


class ByteCounter(logging.Handler):
    """Counts the bytes the hub's JSON log lines would take."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(JsonFormatter())
        self.written = 0
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record)
        self.written += len(line.encode()) + 1
        self.lines.append(line[:300])


@pytest.fixture
def hub_log() -> Iterator[ByteCounter]:
    counter = ByteCounter()
    root = logging.getLogger()
    level = root.level
    root.addHandler(counter)
    root.setLevel(logging.DEBUG)
    try:
        yield counter
    finally:
        root.removeHandler(counter)
        root.setLevel(level)


@pytest.fixture
async def east(connect: MemberFactory) -> Member:
    return await connect("east")


def _huge_namespace() -> pb.ResourceExport:
    export = service_export("east", "default", "web")
    export.namespace = HUGE
    return export


async def _upsert(member: Member, export: pb.ResourceExport) -> object:
    return await member.export_session().upsert(export)


async def _delete(member: Member, name: str) -> object:
    return await member.export_session().delete(name)


async def _watch(member: Member, cluster_id: str) -> object:
    stream = member.stub.WatchImports(pb.WatchImportsRequest(cluster_id=cluster_id)).__aiter__()
    return await anext(stream)


CALLS: list[tuple[str, grpc.StatusCode, Callable[[Member], Awaitable[object]]]] = [
    ("a namespace", grpc.StatusCode.INVALID_ARGUMENT, lambda m: _upsert(m, _huge_namespace())),
    (
        "an export name",
        grpc.StatusCode.INVALID_ARGUMENT,
        lambda m: _upsert(m, pb.ResourceExport(export_name=HUGE, cluster_id="east", cluster_info=pb.ClusterInfo())),
    ),
    ("a deleted name", grpc.StatusCode.PERMISSION_DENIED, lambda m: _delete(m, "west-" + HUGE)),
    (
        "a ClusterSet ID",
        grpc.StatusCode.INVALID_ARGUMENT,
        lambda m: m.stub.Announce(pb.AnnounceRequest(cluster_id="east", cluster_set_id=HUGE)),
    ),
    ("an announced cluster ID", grpc.StatusCode.PERMISSION_DENIED, lambda m: m.announce(HUGE)),
    ("a watched cluster ID", grpc.StatusCode.PERMISSION_DENIED, lambda m: _watch(m, HUGE)),
    (
        "a reported cluster ID",
        grpc.StatusCode.PERMISSION_DENIED,
        lambda m: m.stub.ReportImportStatus(pb.ReportImportStatusRequest(cluster_id=HUGE, import_name="x")),
    ),
]


@pytest.mark.parametrize("case", CALLS, ids=[c[0] for c in CALLS])
async def test_a_1_mib_field_is_refused_with_its_real_status_and_a_bounded_log(
    hub: HubApp,
    east: Member,
    hub_log: ByteCounter,
    case: tuple[str, grpc.StatusCode, Callable[[Member], Awaitable[object]]],
) -> None:
    what, code, call = case
    before = hub_log.written
    details = await refused(hub, code, lambda: call(east))
    assert "bytes)" in details, f"the refusal does not say how long {what} was: {details[:200]}"
    assert len(details.encode()) <= 2048
    assert hub_log.written - before < LOG_BUDGET, hub_log.lines


async def test_a_1_mib_failure_report_is_logged_bounded(hub: HubApp, east: Member, hub_log: ByteCounter) -> None:
    before = hub_log.written
    report = pb.ReportImportStatusRequest(
        cluster_id="east", import_name=HUGE, succeeded=False, reason=HUGE, message=HUGE
    )
    await east.stub.ReportImportStatus(report)
    assert hub_log.written - before < LOG_BUDGET, hub_log.lines

"""The session's pure parts: the desired set, the backoff, the meaning of status codes."""

from __future__ import annotations

import grpc

from kube.backoff import Backoff, Retries
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import ExportRejection, NotJoinedHubError, PermanentHubError, ResumeHubError, TemporaryHubError
from member.hubclient.desired import DesiredExports
from member.hubclient.errors import classify
from tests.integration.hubclient import service_export

REFUSED = ExportRejection(grpc.StatusCode.INVALID_ARGUMENT, "bad")


def test_updates_of_one_export_leave_one_pending_change_with_the_latest_value() -> None:
    desired = DesiredExports(1 << 20)
    for port in (80, 81, 82):
        desired.put(service_export("east", "default", "web", [("http", port)]))
    [(name, value)] = desired.take_pending(set(), 10)
    assert value is not None and value.service.ports[0].port == 82
    assert name == "east-default-web-service"


def test_an_export_with_a_write_in_flight_waits_its_turn() -> None:
    desired = DesiredExports(1 << 20)
    desired.put(service_export("east", "default", "a"))
    desired.put(service_export("east", "default", "b"))
    assert [n for n, _ in desired.take_pending({"east-default-a-service"}, 10)] == ["east-default-b-service"]
    assert desired.has_pending(set()) and not desired.has_pending({"east-default-a-service"})


def test_the_hubs_own_fields_are_not_part_of_the_desired_value() -> None:
    desired = DesiredExports(1 << 20)
    export = service_export("east", "default", "a")
    desired.put(export)
    desired.take_pending(set(), 10)
    echoed = pb.ResourceExport()
    echoed.CopyFrom(export)
    echoed.status.verdict = pb.VERDICT_ACCEPTED
    echoed.create_time.GetCurrentTime()
    desired.put(echoed)
    assert not desired.has_pending(set())


def test_a_rejected_export_is_not_sent_again_until_it_changes() -> None:
    desired = DesiredExports(1 << 20)
    bad = service_export("east", "default", "a", [("http", 80)])
    desired.put(bad)
    [(name, value)] = desired.take_pending(set(), 10)
    assert desired.reject(name, value, REFUSED)
    assert desired.begin_sync() == []
    desired.put(bad)
    assert not desired.has_pending(set()) and desired.rejection(name) == REFUSED
    desired.put(service_export("east", "default", "a", [("http", 81)]))
    assert desired.rejection(name) is None and len(desired.begin_sync()) == 1


def test_a_refusal_of_a_value_already_replaced_changes_nothing() -> None:
    desired = DesiredExports(1 << 20)
    old = service_export("east", "default", "a", [("http", 80)])
    desired.put(old)
    desired.put(service_export("east", "default", "a", [("http", 81)]))
    assert not desired.reject(old.export_name, old, REFUSED)
    assert desired.rejection(old.export_name) is None


def test_replace_all_removes_what_is_not_listed_and_reports_oversized_exports() -> None:
    desired = DesiredExports(200)
    desired.replace_all([service_export("east", "default", "a"), service_export("east", "default", "b")])
    desired.take_pending(set(), 10)
    big = service_export("east", "default", "big", [(f"p{i}", 1000 + i) for i in range(20)])
    rejections = desired.replace_all([service_export("east", "default", "a"), big])
    assert [(n, r.code) for n, r in rejections] == [(big.export_name, grpc.StatusCode.RESOURCE_EXHAUSTED)]
    assert desired.take_pending(set(), 10) == [("east-default-b-service", None)]
    assert desired.names() == {"east-default-a-service", big.export_name}


def test_the_backoff_grows_to_its_cap_with_jitter_and_starts_over_on_reset() -> None:
    backoff = Retries(Backoff(initial=0.5, maximum=30.0))
    delays = [backoff.next_delay() for _ in range(12)]
    assert 0.4 <= delays[0] <= 0.6
    assert all(d <= 30.0 for d in delays) and delays[-1] >= 24.0
    backoff.reset()
    assert backoff.next_delay() <= 0.6


def test_status_codes_map_to_what_the_member_should_do() -> None:
    def error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
        return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details="x")

    assert type(classify(error(grpc.StatusCode.UNAVAILABLE))) is TemporaryHubError
    assert type(classify(error(grpc.StatusCode.RESOURCE_EXHAUSTED))) is TemporaryHubError
    assert type(classify(error(grpc.StatusCode.ABORTED))) is ResumeHubError
    assert type(classify(error(grpc.StatusCode.FAILED_PRECONDITION))) is NotJoinedHubError
    assert type(classify(error(grpc.StatusCode.UNAUTHENTICATED))) is PermanentHubError
    assert type(classify(TimeoutError())) is TemporaryHubError

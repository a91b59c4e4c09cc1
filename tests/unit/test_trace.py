"""mcapi.trace: marks are kept only while a trace is on, first time per hop and cluster, and
only for a Service's own export and import."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcapi import trace
from mcapi.mchub.v1 import common_area_pb2 as pb


@pytest.fixture(autouse=True)
def _off_afterwards() -> Iterator[None]:
    yield
    trace.stop()


def _service_export() -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name="west-ns-foo-service", cluster_id="west", namespace="ns", name="foo", service=pb.ServiceSpec()
    )


def _endpoints_import() -> pb.ResourceImport:
    return pb.ResourceImport(import_name="ns-foo-endpoints", namespace="ns", name="foo", endpoints=pb.EndpointsSpec())


def test_off_nothing_is_kept() -> None:
    assert not trace.enabled()
    trace.mark(trace.Hop.EXPORT_EVENT, "ns", "foo", "west")
    traced = trace.start()
    assert traced.marks == {}


def test_the_first_time_of_each_hop_and_cluster_is_kept() -> None:
    traced = trace.start()
    trace.mark(trace.Hop.EXPORT_EVENT, "ns", "foo", "west")
    first = traced.marks[("ns", "foo")][(trace.Hop.EXPORT_EVENT, "west")]
    trace.mark(trace.Hop.EXPORT_EVENT, "ns", "foo", "west")
    trace.mark(trace.Hop.EXPORT_EVENT, "ns", "foo", "east")
    marks = traced.marks[("ns", "foo")]
    assert marks[(trace.Hop.EXPORT_EVENT, "west")] == first
    assert set(marks) == {(trace.Hop.EXPORT_EVENT, "west"), (trace.Hop.EXPORT_EVENT, "east")}


def test_only_a_services_own_export_and_import_mark() -> None:
    traced = trace.start()
    trace.mark_import(trace.Hop.HUB_STAGED, _endpoints_import())
    endpoints = pb.ResourceExport(export_name="west-ns-foo-endpoints", namespace="ns", name="foo")
    endpoints.endpoints.SetInParent()
    trace.mark_export(trace.Hop.EXPORT_SENT, endpoints, "west")
    assert traced.marks == {}
    trace.mark_export(trace.Hop.EXPORT_SENT, _service_export(), "west")
    assert set(traced.marks[("ns", "foo")]) == {(trace.Hop.EXPORT_SENT, "west")}


def test_a_batch_marks_each_service_import_it_carries() -> None:
    traced = trace.start()
    service_import = pb.ResourceImport(import_name="ns-bar-service", namespace="ns", name="bar")
    service_import.service_import.SetInParent()
    batch = pb.WatchImportsResponse(
        changes=pb.Changes(
            changes=[
                pb.ImportChange(upsert=_endpoints_import()),
                pb.ImportChange(upsert=service_import),
                pb.ImportChange(delete=pb.ImportDelete(import_name="ns-baz-service")),
            ]
        )
    )
    trace.mark_imports(trace.Hop.WATCH_SENT, trace.sent_imports(batch), "east")
    assert list(traced.marks) == [("ns", "bar")]


def test_path_reads_each_hop_where_it_happens_and_spans_add_up() -> None:
    traced = trace.start()
    marks = traced.marks.setdefault(("ns", "foo"), {})
    for n, hop in enumerate(trace.HOPS):
        where = "west" if hop in trace.EXPORTER_HOPS else "" if hop in trace.HUB_HOPS else "east"
        marks[(hop, where)] = float(n + 1)
        marks[(hop, "north")] = 100.0  # another cluster's import of it
    path = traced.path("ns", "foo", "west", "east")
    assert list(path) == list(trace.HOPS)
    assert list(path.values()) == [float(n + 1) for n in range(len(trace.HOPS))]
    spans = trace.spans(path, 0.0, len(trace.HOPS) + 0.5)
    assert list(spans) == [hop.value for hop in trace.HOPS] + ["seen"]
    assert sum(spans.values()) == pytest.approx(len(trace.HOPS) + 0.5)


def test_processes_tracing_into_one_file_read_as_one_trace_the_earliest_marks_standing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "trace.jsonl"
    monkeypatch.setenv(trace.FILE_ENV, str(shared))
    with trace.from_environment():  # a member
        trace.mark(trace.Hop.IMPORT_RECEIVED, "ns", "foo", "east")
    with trace.from_environment():  # the same member restarted: it receives the import again, later
        trace.mark(trace.Hop.IMPORT_RECEIVED, "ns", "foo", "east")
        trace.mark(trace.Hop.APPLY_STARTED, "ns", "foo", "east")
    assert not trace.enabled()
    hub_file = tmp_path / "hub.jsonl"
    monkeypatch.setenv(trace.FILE_ENV, str(hub_file))
    with trace.from_environment():
        trace.mark(trace.Hop.HUB_STAGED, "ns", "foo")
    lines = [json.loads(line) for line in shared.read_text().splitlines()]
    first_receipt = lines[0][4]
    assert lines[1][4] > first_receipt
    joined = trace.read([shared, hub_file])
    assert joined.marks[("ns", "foo")] == {
        (trace.Hop.IMPORT_RECEIVED, "east"): first_receipt,
        (trace.Hop.APPLY_STARTED, "east"): lines[2][4],
        (trace.Hop.HUB_STAGED, ""): json.loads(hub_file.read_text())[4],
    }


def test_without_the_variable_nothing_is_traced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(trace.FILE_ENV, raising=False)
    with trace.from_environment():
        assert not trace.enabled()

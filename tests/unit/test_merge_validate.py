"""validate_export: structural problems of one export, as sentences."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hub.merge import validate_export
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit.test_merge_builders import (
    acnp_export,
    cluster_info_export,
    endpoints_export,
    label_export,
    service_export,
)


@pytest.mark.parametrize(
    "export",
    [
        service_export("east", ports=[("http", "TCP", 80), ("dns", "UDP", 53), ("s", "SCTP", 9)]),
        service_export("east", service_type="", affinity="ClientIP", timeout=86400, ip_families=["IPv4", "IPv6"]),
        service_export("east", cluster_ip="None", internal_traffic_policy="Local"),
        service_export(
            "east",
            exported_labels={"dummy-label": "true", "example.com/tier": "", "a": "x" * 63},
            exported_annotations={"dummy-annotation": "any text: even {json}", "example.com/n": ""},
        ),
        service_export("east", service_type="ExternalName", cluster_ip="", ports=[]),
        endpoints_export("east", ["10.244.1.5", "fd00::5"]),
        cluster_info_export("east"),
        acnp_export("deny-all"),
        label_export("east"),
    ],
)
def test_well_formed_exports_have_no_problems(export: pb.ResourceExport) -> None:
    assert validate_export(export) == []


def _with(export: pb.ResourceExport, change: Callable[[pb.ResourceExport], object]) -> pb.ResourceExport:
    copy = pb.ResourceExport()
    copy.CopyFrom(export)
    change(copy)
    return copy


def _clear_payload(e: pb.ResourceExport) -> None:
    e.ClearField("service")


def _bad_cluster_ip(e: pb.ResourceExport) -> None:
    e.service.cluster_ip = "10.96.0.300"


def _bad_cluster_ips(e: pb.ResourceExport) -> None:
    e.service.cluster_ips.append("nope")


@pytest.mark.parametrize(
    ("export", "expected_words"),
    [
        (_with(service_export("east"), lambda e: setattr(e, "export_name", "")), "export name is missing"),
        (
            _with(service_export("east"), lambda e: setattr(e, "export_name", "East_Svc")),
            "not a valid object name",
        ),
        (_with(service_export("east"), lambda e: setattr(e, "cluster_id", "")), "cluster ID is missing"),
        (_with(service_export("east"), lambda e: setattr(e, "cluster_id", "East")), "DNS-1123"),
        (_with(service_export("east"), _clear_payload), "no payload"),
        (service_export("east", namespace="Demo"), "Namespace 'Demo'"),
        (service_export("east", namespace=""), "Namespace is missing"),
        # A regex's "$" also matches before a final newline; names must not end with one.
        (service_export("east", namespace="demo\n"), "Namespace 'demo\\n'"),
        (_with(service_export("east"), lambda e: setattr(e, "cluster_id", "east\n")), "DNS-1123"),
        (_with(service_export("east"), lambda e: setattr(e, "export_name", e.export_name + "\n")), "object name"),
        (service_export("east", name="web.v1"), "Service name 'web.v1'"),
        (service_export("east", name="x" * 64), "Service name"),
        (service_export("east", ports=[("http", "TCP", 0)]), "within 1..65535"),
        (service_export("east", ports=[("http", "TCP", 70000)]), "within 1..65535"),
        (service_export("east", ports=[("http", "ICMP", 80)]), "protocol 'ICMP'"),
        (service_export("east", ports=[("http", "", 80)]), "protocol ''"),
        (service_export("east", ports=[("http", "TCP", 80), ("http", "TCP", 81)]), "more than once"),
        (service_export("east", service_type="Gateway"), "Service type 'Gateway'"),
        (service_export("east", affinity="Sticky"), "session affinity 'Sticky'"),
        (service_export("east", affinity="ClientIP", timeout=86401), "timeout"),
        (service_export("east", affinity="ClientIP", timeout=-1), "timeout"),
        (service_export("east", ip_families=["IPv5"]), "IP family 'IPv5'"),
        (service_export("east", ip_families=["IPv4", "IPv4"]), "at most once"),
        (service_export("east", internal_traffic_policy="Nearby"), "internalTrafficPolicy"),
        (_with(service_export("east"), _bad_cluster_ip), "not an IP address"),
        (_with(service_export("east"), _bad_cluster_ips), "not an IP address"),
        (endpoints_export("east", ["10.244.1.500"]), "not an IP address"),
        (endpoints_export("east", ["10.244.1.5"], ports=[("http", "TCP", 0)]), "within 1..65535"),
        (endpoints_export("east", ["10.244.1.5"], ports=[("http", "HTTP", 80)]), "protocol 'HTTP'"),
        (endpoints_export("east", ["10.244.1.5"], namespace="Bad_NS"), "Namespace"),
        (_with(cluster_info_export("east"), lambda e: setattr(e.cluster_info, "cluster_id", "west")), "same"),
        (
            _with(cluster_info_export("east"), lambda e: setattr(e.cluster_info, "service_cidr", "10.96/x")),
            "CIDR",
        ),
        (_with(cluster_info_export("east"), lambda e: e.cluster_info.pod_cidrs.append("pods")), "Pod CIDR"),
        (
            _with(cluster_info_export("east"), lambda e: e.cluster_info.gateway_infos.add(gateway_ip="gw")),
            "gateway",
        ),
        (_with(acnp_export(), lambda e: setattr(e, "name", "")), "name is missing"),
        (_with(acnp_export(), lambda e: setattr(e, "name", "Deny All")), "DNS-1123 subdomain"),
        (label_export("east", ""), "normalized label is empty"),
        (service_export("east", exported_labels={"bad key": "x"}), "label key 'bad key'"),
        (service_export("east", exported_labels={"/x": "x"}), "label key '/x'"),
        (service_export("east", exported_labels={"Bad_Prefix/x": "x"}), "not a qualified name"),
        (service_export("east", exported_labels={"ok": "not ok"}), "value 'not ok' of label 'ok'"),
        (service_export("east", exported_labels={"ok": "v" * 64}), "not a label value"),
        (service_export("east", exported_annotations={"": "x"}), "annotation key ''"),
        (service_export("east", exported_annotations={"big": "x" * (256 * 1024)}), "at most 262144"),
    ],
)
def test_malformed_exports_are_reported_in_a_sentence(export: pb.ResourceExport, expected_words: str) -> None:
    problems = validate_export(export)
    assert problems, "expected a problem"
    assert any(expected_words in p for p in problems), problems
    assert all(p.endswith(".") for p in problems)


def test_every_problem_of_an_export_is_reported_at_once() -> None:
    export = service_export("East", namespace="", ports=[("a", "XTP", 0)])
    assert len(validate_export(export)) >= 4

"""The member's pure rules: reading a ClusterSet, the token Secret, statuses and conditions."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest

from mcapi.mchub.v1 import common_area_pb2 as pb
from member.exports.conditions import HubAnswer, apply_conditions, wanted_conditions
from member.exports.evaluate import InvalidReason, evaluate
from member.hubclient import ExportRejection
from member.join.credentials import InvalidSecret, endpoint_from_secret
from member.join.spec import InvalidClusterSet, parse_join_spec
from member.join.status import LeaderLink, desired_status

T0 = datetime(2025, 1, 1, tzinfo=UTC)
LEADER = {"clusterID": "north", "secret": "member-east-token", "server": "https://10.0.0.1:6443"}


def _cluster_set(spec: dict[str, Any], name: str = "test-clusterset") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "kube-system", "generation": 1}, "spec": spec}


def _claim(claim_name: str, value: str, metadata_name: str = "some-claim") -> dict[str, Any]:
    return {"metadata": {"name": metadata_name}, "name": claim_name, "value": value}


def test_a_v1alpha2_cluster_set_names_the_cluster_the_leader_and_the_cluster_set() -> None:
    spec = parse_join_spec(_cluster_set({"clusterID": "east", "leaders": [LEADER], "namespace": "antrea-mc"}))
    assert (spec.cluster_set_id, spec.cluster_id, spec.leader_cluster_id) == ("test-clusterset", "east", "north")
    assert (spec.server, spec.secret, spec.leader_namespace) == (LEADER["server"], LEADER["secret"], "antrea-mc")
    assert not spec.legacy


@pytest.mark.parametrize("cluster_set_claim", ["clusterset.k8s.io", "clusterSet.k8s.io"])
def test_a_legacy_cluster_set_takes_its_cluster_id_from_the_id_claim(cluster_set_claim: str) -> None:
    claims = [_claim("id.k8s.io", "east"), _claim(cluster_set_claim, "test-clusterset")]
    spec = parse_join_spec(_cluster_set({"leaders": [LEADER], "members": [{"clusterID": "x"}]}), claims)
    assert spec.cluster_id == "east" and spec.legacy


def test_a_v1alpha2_cluster_claim_is_named_by_its_metadata() -> None:
    claims = [{"metadata": {"name": "id.k8s.io"}, "value": "east"}]
    assert parse_join_spec(_cluster_set({"leaders": [LEADER]}), claims).cluster_id == "east"


def test_a_legacy_cluster_set_without_claims_uses_its_only_member() -> None:
    assert parse_join_spec(_cluster_set({"leaders": [LEADER], "members": [{"clusterID": "east"}]})).cluster_id == "east"


def test_a_legacy_cluster_set_whose_name_is_not_the_claimed_cluster_set_is_refused() -> None:
    claims = [_claim("id.k8s.io", "east"), _claim("clusterset.k8s.io", "other")]
    with pytest.raises(InvalidClusterSet, match="other"):
        parse_join_spec(_cluster_set({"leaders": [LEADER]}), claims)


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"clusterID": "east", "leaders": []}, "exactly one leader"),
        ({"clusterID": "east", "leaders": [{**LEADER, "server": ""}]}, "server"),
        ({"clusterID": "east", "leaders": [{**LEADER, "secret": ""}]}, "secret"),
        ({"leaders": [LEADER]}, "id.k8s.io"),
        ({"clusterID": "East_1", "leaders": [LEADER]}, "DNS-1123"),
    ],
)
def test_an_unusable_cluster_set_says_what_to_fix(spec: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidClusterSet, match=problem):
        parse_join_spec(_cluster_set(spec))


def test_the_token_secret_gives_the_token_and_the_ca() -> None:
    secret = {"data": {"token": base64.b64encode(b"abc\n").decode(), "ca.crt": base64.b64encode(b"PEM").decode()}}
    endpoint = endpoint_from_secret(secret, "https://hub:443", "kube-system/t")
    assert (endpoint.token, endpoint.ca_cert, endpoint.target) == ("abc", b"PEM", "hub:443")


def test_a_token_secret_without_a_token_is_refused() -> None:
    with pytest.raises(InvalidSecret, match="token"):
        endpoint_from_secret({"data": {"ca.crt": "UEVN"}}, "https://hub:443", "kube-system/t")


def test_a_bad_leader_address_is_a_cluster_set_problem() -> None:
    with pytest.raises(InvalidClusterSet, match="scheme"):
        endpoint_from_secret({"stringData": {"token": "t"}}, "ftp://hub", "kube-system/t")


def test_the_cluster_set_status_keeps_its_transition_time_until_the_link_flips() -> None:
    up = desired_status(None, 3, LeaderLink("north", connected=True), T0)
    assert up["observedGeneration"] == 3 and up["readyClusters"] == 1 and up["totalClusters"] == 1
    again = desired_status(up, 3, LeaderLink("north", connected=True), T0 + timedelta(minutes=5))
    assert again == up
    down = desired_status(up, 3, LeaderLink("north", connected=False, why="hub unreachable"), T0 + timedelta(hours=1))
    ready = down["conditions"][0]
    assert (ready["status"], ready["reason"]) == ("False", "Disconnected")
    assert ready["message"] == "Disconnected from leader: hub unreachable"
    assert ready["lastTransitionTime"] == "2025-01-01T01:00:00Z"
    is_leader = next(c for c in down["clusterStatuses"][0]["conditions"] if c["type"] == "IsLeader")
    assert is_leader["lastTransitionTime"] == "2025-01-01T00:00:00Z"


def _service(**spec: Any) -> dict[str, Any]:
    base = {"clusterIP": "10.96.0.9", "ports": [{"name": "http", "port": 80}]}
    return {"metadata": {"name": "web", "namespace": "ns"}, "spec": {**base, **spec}}


def test_an_export_names_its_cluster_and_source() -> None:
    evaluation = evaluate("east", "ClusterIP", ("ns", "web"), _service(), None)
    service, endpoints = evaluation.exports
    assert service.export_name == "east-ns-web-service" and endpoints.export_name == "east-ns-web-endpoints"
    assert endpoints.endpoints.subsets[0].addresses[0].ip == "10.96.0.9"


def test_a_load_balancer_service_is_exported_like_a_cluster_ip_one() -> None:
    assert evaluate("east", "ClusterIP", ("ns", "web"), _service(type="LoadBalancer"), None).valid


def test_a_missing_service_is_no_service() -> None:
    assert evaluate("east", "PodIP", ("ns", "web"), None, None).invalid == InvalidReason.NO_SERVICE


def _service_export(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns", "labels": {"own": "x"}}, "spec": spec}


def test_the_exported_labels_and_annotations_come_from_the_service_export_not_the_service() -> None:
    service = _service()
    service["metadata"].update(labels={"dummy-svc": "dummy"}, annotations={"dummy-svc": "dummy"})
    service_export = _service_export(
        exportedLabels={"dummy-label": "true"}, exportedAnnotations={"dummy-annotation": "true"}
    )
    spec = evaluate("east", "ClusterIP", ("ns", "web"), service, None, service_export=service_export).exports[0].service
    assert dict(spec.exported_labels) == {"dummy-label": "true"}
    assert dict(spec.exported_annotations) == {"dummy-annotation": "true"}
    bare = (
        evaluate("east", "ClusterIP", ("ns", "web"), service, None, service_export=_service_export()).exports[0].service
    )
    assert (dict(bare.exported_labels), dict(bare.exported_annotations)) == ({}, {})


@pytest.mark.parametrize(
    ("spec", "reason", "words"),
    [
        ({"exportedLabels": {"bad key": "x"}}, InvalidReason.INVALID_EXPORTED_LABELS, "label key 'bad key'"),
        ({"exportedLabels": {"ok": "not ok"}}, InvalidReason.INVALID_EXPORTED_LABELS, "value 'not ok'"),
        ({"exportedLabels": ["a"]}, InvalidReason.INVALID_EXPORTED_LABELS, "not a map of strings"),
        ({"exportedAnnotations": {"a/b/c": "x"}}, InvalidReason.INVALID_EXPORTED_ANNOTATIONS, "'a/b/c'"),
        ({"exportedAnnotations": {"n": 1}}, InvalidReason.INVALID_EXPORTED_ANNOTATIONS, "not a map of strings"),
    ],
)
def test_exported_labels_or_annotations_no_service_import_could_carry_make_the_export_invalid(
    spec: dict[str, Any], reason: InvalidReason, words: str
) -> None:
    evaluation = evaluate("east", "ClusterIP", ("ns", "web"), _service(), None, service_export=_service_export(**spec))
    assert evaluation.invalid == reason and evaluation.exports == ()
    assert words in evaluation.message and evaluation.message.endswith(".")


def test_many_bad_labels_are_named_a_few_at_a_time() -> None:
    labels = {f"bad key {i}": "x" for i in range(20)}
    evaluation = evaluate(
        "east", "ClusterIP", ("ns", "web"), _service(), None, service_export=_service_export(exportedLabels=labels)
    )
    assert evaluation.message.count("bad key") == 5 and "(and 15 more)" in evaluation.message


def _by_type(conditions: list[Any]) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in conditions}


def test_conditions_follow_the_hub_answer() -> None:
    valid = evaluate("east", "ClusterIP", ("ns", "web"), _service(), None)
    nothing = HubAnswer()
    assert _by_type(wanted_conditions(valid, nothing, nothing))["Ready"] == ("False", "Pending")
    accepted = HubAnswer(pb.ExportStatus(verdict=pb.VERDICT_ACCEPTED))
    assert _by_type(wanted_conditions(valid, accepted, nothing)) == {
        "Valid": ("True", "Valid"),
        "Ready": ("True", "Exported"),
        "Conflict": ("False", "NoConflicts"),
    }
    conflict = HubAnswer(pb.ExportStatus(verdict=pb.VERDICT_CONFLICT, reason="TypeConflict", message="m"))
    assert _by_type(wanted_conditions(valid, conflict, nothing))["Conflict"] == ("True", "TypeConflict")
    refused = HubAnswer(rejection=ExportRejection(grpc.StatusCode.INVALID_ARGUMENT, "bad port"))
    assert _by_type(wanted_conditions(valid, accepted, refused))["Ready"] == ("False", "Failed")


def test_a_ready_export_stays_ready_while_a_new_session_has_no_answer_yet() -> None:
    valid = evaluate("east", "ClusterIP", ("ns", "web"), _service(), None)
    current = [{"type": "Ready", "status": "True", "reason": "Exported"}]
    assert [c.type for c in wanted_conditions(valid, HubAnswer(), HubAnswer(), current)] == ["Valid"]


def test_applying_the_same_conditions_again_changes_nothing() -> None:
    valid = evaluate("east", "ClusterIP", ("ns", "web"), _service(), None)
    wanted = wanted_conditions(valid, HubAnswer(pb.ExportStatus(verdict=pb.VERDICT_ACCEPTED)), HubAnswer())
    first, changed = apply_conditions(None, wanted, 2, T0)
    assert changed and all(c["observedGeneration"] == 2 for c in first)
    second, changed = apply_conditions(first, wanted, 2, T0 + timedelta(hours=1))
    assert not changed and second == first

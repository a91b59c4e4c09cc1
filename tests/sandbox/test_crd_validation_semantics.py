"""Custom resources are validated against their CRD's structural schema, with the apiserver's errors.

Every expected message below is what kube-apiserver v1.28 answers (the real-cluster run of
this module checks exactly that). A real apiserver walks object properties in Go map order,
so when one object has several errors their order is random: those are compared as sets.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sandbox.cluster import Cluster
from tests.sandbox.probe_crd import NewProbeCRD, ProbeCRD, probe_version

SPEC = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "minimum": 1, "maximum": 10},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5, "minLength": 2},
        "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
        "port": {"x-kubernetes-int-or-string": True},
        "optional": {"type": "string", "nullable": True},
        "plain": {"type": "string"},
        "withDefault": {"type": "string", "default": "d"},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "weights": {"type": "object", "additionalProperties": {"type": "integer"}},
        "step": {"type": "integer", "multipleOf": 5},
        "address": {"type": "string", "format": "ipv4"},
        "network": {"type": "string", "format": "cidr"},
        "when": {"type": "string", "format": "date-time"},
        "count": {"type": "integer", "format": "int32"},
        "closed": {"type": "object", "maxProperties": 1},
        "large": {"type": "number", "minimum": 1000000},
        "level": {"type": "number", "enum": [1.5, 1000000]},
        "either": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
        "items": {
            "type": "array",
            "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
        },
    },
}
STATUS = {
    "type": "object",
    "properties": {"phase": {"type": "string", "enum": ["Ready"]}, "n": {"type": "integer", "minimum": 0}},
}
SCHEMA = {"type": "object", "properties": {"spec": SPEC, "status": STATUS}}

# spec -> the one cause the apiserver gives: (reason, field, message).
REFUSED: list[tuple[dict[str, Any], tuple[str, str, str]]] = [
    ({}, ("FieldValueRequired", "spec.size", "Required value")),
    (
        {"size": 11},
        ("FieldValueInvalid", "spec.size", "Invalid value: 11: spec.size in body should be less than or equal to 10"),
    ),
    (
        {"size": "x"},
        (
            "FieldValueTypeInvalid",
            "spec.size",
            'Invalid value: "string": spec.size in body must be of type integer: "string"',
        ),
    ),
    (
        {"size": 1.5},
        (
            "FieldValueTypeInvalid",
            "spec.size",
            'Invalid value: "number": spec.size in body must be of type integer: "number"',
        ),
    ),
    (
        {"size": 1, "mode": "c"},
        ("FieldValueNotSupported", "spec.mode", 'Unsupported value: "c": supported values: "a", "b"'),
    ),
    (
        {"size": 1, "name": "AB"},
        ("FieldValueInvalid", "spec.name", "Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"),
    ),
    ({"size": 1, "name": "abcdef"}, ("FieldValueTooLong", "spec.name", "Too long: may not be longer than 5")),
    (
        {"size": 1, "name": "a"},
        ("FieldValueInvalid", "spec.name", 'Invalid value: "a": spec.name in body should be at least 2 chars long'),
    ),
    (
        {"size": 1, "tags": ["a", "b", "c"]},
        ("FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items"),
    ),
    (
        {"size": 1, "tags": []},
        ("FieldValueInvalid", "spec.tags", "Invalid value: 0: spec.tags in body should have at least 1 items"),
    ),
    (
        {"size": 1, "tags": [1]},
        (
            "FieldValueTypeInvalid",
            "spec.tags[0]",
            'Invalid value: "integer": spec.tags[0] in body must be of type string: "integer"',
        ),
    ),
    (
        {"size": 1, "port": True},
        (
            "FieldValueTypeInvalid",
            "spec.port",
            'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
        ),
    ),
    (
        {"size": 1, "ratio": 0},
        ("FieldValueInvalid", "spec.ratio", "Invalid value: 0: spec.ratio in body should be greater than 0"),
    ),
    (
        {"size": 1, "weights": {"a": "x"}},
        (
            "FieldValueTypeInvalid",
            "spec.weights.a",
            'Invalid value: "string": spec.weights.a in body must be of type integer: "string"',
        ),
    ),
    (
        {"size": 1, "step": 7},
        ("FieldValueInvalid", "spec.step", "Invalid value: 7: spec.step in body should be a multiple of 5"),
    ),
    (
        {"size": 1, "address": "300.1.1.1"},
        (
            "FieldValueTypeInvalid",
            "spec.address",
            'Invalid value: "300.1.1.1": spec.address in body must be of type ipv4: "300.1.1.1"',
        ),
    ),
    (
        {"size": 1, "network": "10.0.0.0/33"},
        (
            "FieldValueTypeInvalid",
            "spec.network",
            'Invalid value: "10.0.0.0/33": spec.network in body must be of type cidr: "10.0.0.0/33"',
        ),
    ),
    (
        {"size": 1, "when": "yesterday"},
        (
            "FieldValueTypeInvalid",
            "spec.when",
            'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
        ),
    ),
    (
        {"size": 1, "items": [{"id": "a"}, {}]},
        ("FieldValueRequired", "spec.items[1].id", "Required value"),
    ),
    # Numbers print as Go prints an int64 or a float64.
    (
        {"size": 1, "large": 5.5},
        (
            "FieldValueInvalid",
            "spec.large",
            "Invalid value: 5.5: spec.large in body should be greater than or equal to 1e+06",
        ),
    ),
    (
        {"size": 1, "large": 5},
        (
            "FieldValueInvalid",
            "spec.large",
            "Invalid value: 5: spec.large in body should be greater than or equal to 1000000",
        ),
    ),
    (
        {"size": 1, "level": 2e6},
        ("FieldValueNotSupported", "spec.level", 'Unsupported value: 2e+06: supported values: "1.5", "1000000"'),
    ),
]

# spec written -> spec stored (as the apiserver answers it).
ACCEPTED: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"size": 1, "port": "http"}, {"size": 1, "port": "http", "withDefault": "d"}),
    ({"size": 1, "port": 8080}, {"size": 1, "port": 8080, "withDefault": "d"}),
    # null stays where the schema allows it, goes where it does not, and a default replaces it.
    ({"size": 1, "optional": None, "plain": None}, {"size": 1, "optional": None, "withDefault": "d"}),
    ({"size": 1, "withDefault": None}, {"size": 1, "withDefault": "d"}),
    # An integral number is an integer; format int32 is not checked.
    ({"size": 5.0, "count": 2**40}, {"size": 5, "count": 2**40, "withDefault": "d"}),
    # Pruning happens before validation: undeclared fields are gone before maxProperties counts.
    ({"size": 1, "closed": {"a": 1, "b": 2}}, {"size": 1, "closed": {}, "withDefault": "d"}),
    ({"size": 1, "level": 1000000, "either": "b"}, {"size": 1, "level": 1000000, "either": "b", "withDefault": "d"}),
    (
        {"size": 10, "ratio": 0.5, "weights": {"a": 1}},
        {"size": 10, "ratio": 0.5, "weights": {"a": 1}, "withDefault": "d"},
    ),
]


def probe(crd: ProbeCRD, name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{crd.group}/{crd.version}", "kind": "Probe", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
async def crd(new_probe_crd: NewProbeCRD) -> ProbeCRD:
    return await new_probe_crd([probe_version(schema=SCHEMA)])


def causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_a_value_below_the_minimum_is_422_invalid_naming_the_field(
    cluster: Cluster, crd: ProbeCRD, namespace: str
) -> None:
    reply = await cluster.request("POST", crd.path(namespace), body=probe(crd, "small", {"size": 0}))
    assert reply.status == 422
    cause = "Invalid value: 0: spec.size in body should be greater than or equal to 1"
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Probe.{crd.group} "small" is invalid: spec.size: {cause}',
        "reason": "Invalid",
        "details": {
            "name": "small",
            "group": crd.group,
            "kind": "Probe",
            "causes": [{"reason": "FieldValueInvalid", "message": cause, "field": "spec.size"}],
        },
        "code": 422,
    }
    assert (await cluster.request("GET", f"{crd.path(namespace)}/small")).status == 404


async def test_each_schema_rule_refuses_with_the_apiservers_cause(
    cluster: Cluster, crd: ProbeCRD, namespace: str
) -> None:
    wrong = []
    for index, (spec, expected) in enumerate(REFUSED):
        reply = await cluster.request("POST", crd.path(namespace), body=probe(crd, f"p{index}", spec))
        if reply.status != 422 or causes(reply.body) != [expected]:
            wrong.append((spec, reply.status, reply.body))
        elif reply.body["message"] != f'Probe.{crd.group} "p{index}" is invalid: {expected[1]}: {expected[2]}':
            wrong.append((spec, reply.status, reply.body["message"]))
    assert wrong == []


async def test_values_the_schema_allows_are_stored_as_the_apiserver_stores_them(
    cluster: Cluster, crd: ProbeCRD, namespace: str
) -> None:
    wrong = []
    for index, (spec, stored) in enumerate(ACCEPTED):
        reply = await cluster.request("POST", crd.path(namespace), body=probe(crd, f"p{index}", spec))
        if reply.status != 201 or reply.body["spec"] != stored:
            wrong.append((spec, reply.status, reply.body.get("spec", reply.body)))
    assert wrong == []


async def test_every_error_of_an_object_is_reported(cluster: Cluster, crd: ProbeCRD, namespace: str) -> None:
    spec = {"size": 0, "mode": "c", "name": "AB"}
    reply = await cluster.request("POST", crd.path(namespace), body=probe(crd, "bad", spec))
    assert reply.status == 422
    assert set(causes(reply.body)) == {
        ("FieldValueInvalid", "spec.size", "Invalid value: 0: spec.size in body should be greater than or equal to 1"),
        ("FieldValueNotSupported", "spec.mode", 'Unsupported value: "c": supported values: "a", "b"'),
        ("FieldValueInvalid", "spec.name", "Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"),
    }
    message = reply.body["message"]
    assert message.startswith(f'Probe.{crd.group} "bad" is invalid: [') and message.endswith("]")
    # anyOf (oneOf, allOf, not) failures have no field path; the first alternative's errors follow.
    reply = await cluster.request("POST", crd.path(namespace), body=probe(crd, "either", {"size": 1, "either": "c"}))
    assert causes(reply.body) == [
        ("FieldValueInvalid", "<nil>", 'Invalid value: "": "spec.either" must validate at least one schema (anyOf)'),
        ("FieldValueInvalid", "spec.either", "Invalid value: \"c\": spec.either in body should match '^a'"),
    ]
    # Beyond int64 a number is a float64: not an integer, and over the maximum as well.
    reply = await cluster.request("POST", crd.path(namespace), body=probe(crd, "huge", {"size": 2**70}))
    assert set(causes(reply.body)) == {
        (
            "FieldValueTypeInvalid",
            "spec.size",
            'Invalid value: "number": spec.size in body must be of type integer: "number"',
        ),
        (
            "FieldValueInvalid",
            "spec.size",
            "Invalid value: 1.1805916207174113e+21: spec.size in body should be less than or equal to 10",
        ),
    }
    # A bad name is reported with the schema's errors, first.
    reply = await cluster.request("POST", crd.path(namespace), body=probe(crd, "Bad_Name", {"size": 0}))
    assert [c[1] for c in causes(reply.body)] == ["metadata.name", "spec.size"]


async def test_validation_comes_after_admission_and_before_the_name_is_taken(
    cluster: Cluster, crd: ProbeCRD, namespace: str
) -> None:
    missing = await cluster.request("POST", crd.path("no-such-namespace-v1"), body=probe(crd, "Bad_Name", {}))
    assert missing.status == 404
    assert missing.body["message"] == 'namespaces "no-such-namespace-v1" not found'
    assert (await cluster.request("POST", crd.path(namespace), body=probe(crd, "taken", {"size": 1}))).status == 201
    again = await cluster.request("POST", crd.path(namespace), body=probe(crd, "taken", {"size": 0}))
    assert again.status == 422
    dry = await cluster.request(
        "POST", crd.path(namespace), body=probe(crd, "dry", {"size": 0}), query={"dryRun": "All"}
    )
    assert dry.status == 422


async def test_updates_patches_and_status_writes_are_validated(cluster: Cluster, crd: ProbeCRD, namespace: str) -> None:
    path = f"{crd.path(namespace)}/p1"
    created = await cluster.request(
        "POST", crd.path(namespace), body={**probe(crd, "p1", {"size": 1}), "status": {"phase": "Nope"}}
    )
    assert created.status == 201, created.body
    assert "status" not in created.body  # dropped on create (status subresource), so never validated
    replaced = await cluster.request("PUT", path, body={**created.body, "spec": {"size": 20}})
    assert replaced.status == 422
    assert causes(replaced.body)[0][1] == "spec.size"
    merge = "application/merge-patch+json"
    patched = await cluster.request("PATCH", path, body={"spec": {"mode": "x"}}, content_type=merge)
    assert patched.status == 422
    assert causes(patched.body) == [
        ("FieldValueNotSupported", "spec.mode", 'Unsupported value: "x": supported values: "a", "b"')
    ]
    # The status subresource validates the status alone: field paths start inside it.
    status = await cluster.request(
        "PATCH", f"{path}/status", body={"status": {"phase": "Nope", "n": -1}}, content_type=merge
    )
    assert status.status == 422
    assert set(causes(status.body)) == {
        ("FieldValueNotSupported", "phase", 'Unsupported value: "Nope": supported values: "Ready"'),
        ("FieldValueInvalid", "n", "Invalid value: -1: n in body should be greater than or equal to 0"),
    }
    fine = await cluster.request("PATCH", f"{path}/status", body={"status": {"phase": "Ready"}}, content_type=merge)
    assert fine.status == 200, fine.body
    assert fine.body["status"] == {"phase": "Ready"}

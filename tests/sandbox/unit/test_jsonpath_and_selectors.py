"""Printer-column JSONPath, label/field selectors and ages, without a server."""

from __future__ import annotations

import pytest

from sandbox.errors import ApiError
from sandbox.jsonpath import evaluate
from sandbox.selectors import fields_match, labels_match, parse_field_selector, parse_label_selector
from sandbox.timefmt import human_duration

OBJ = {
    "metadata": {"name": "x", "labels": {"app": "web", "tier": "front"}},
    "spec": {"clusterID": "east", "ports": [{"port": 80}, {"port": 443}]},
    "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]},
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (".spec.clusterID", ["east"]),
        ("{.spec.clusterID}", ["east"]),
        (".spec.ports[1].port", [443]),
        (".spec.ports[*].port", [80, 443]),
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        (".spec.missing", []),
    ],
)
def test_jsonpath_selects_what_printer_columns_name(expression: str, expected: list[object]) -> None:
    assert evaluate(expression, OBJ) == expected


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("app=web", True),
        ("app==web,tier=front", True),
        ("app!=web", False),
        ("app in (web, api)", True),
        ("tier notin (front)", False),
        ("app", True),
        ("!app", False),
        ("missing!=x", True),
    ],
)
def test_label_selectors_match_like_the_apiserver(selector: str, matches: bool) -> None:
    assert labels_match(parse_label_selector(selector), OBJ) is matches


def test_field_selectors_accept_only_declared_fields() -> None:
    assert fields_match(parse_field_selector("metadata.name=x", ()), OBJ)
    assert not fields_match(parse_field_selector("metadata.name!=x", ()), OBJ)
    assert fields_match(parse_field_selector("spec.clusterID=east", ("spec.clusterID",)), OBJ)
    with pytest.raises(ApiError) as caught:
        parse_field_selector("spec.clusterID=east", ())
    assert caught.value.code == 400


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (5, "5s"),
        (119, "119s"),
        (185, "3m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (9 * 86400, "9d"),
    ],
)
def test_ages_read_like_kubectls(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown

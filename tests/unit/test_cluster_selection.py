"""KEP-5939's cluster selection: checking selectors, resolving them per importer, and the
consumer's rule (mcapi.cluster_selection)."""

from __future__ import annotations

from typing import Any

import pytest

from mcapi import cluster_selection as cs
from mcapi.mchub.v1 import common_area_pb2 as pb

REGION = "region.topology.k8s.io"
ID = "cluster.clusterset.k8s.io"
SAME = "@SameAsImporter@"

MEMBERS = {
    "east-1": {ID: "east-1", REGION: "east", "gpu": "high"},
    "east-2": {ID: "east-2", REGION: "east"},
    "west-1": {ID: "west-1", REGION: "west", "gpu": "low"},
    "lost": {ID: "lost"},
}


def by_json(entries: list[dict[str, Any]]) -> list[pb.ClusterSelector]:
    return cs.selectors_from_json(entries)


def region_then_gpu() -> list[pb.ClusterSelector]:
    return by_json(
        [
            {"propertySelector": {"matchExpressions": [{"key": ID, "operator": "In", "values": [SAME]}]}},
            {"propertySelector": {"matchProperties": {REGION: SAME}}},
            {"propertySelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
        ]
    )


def test_same_as_importer_stands_for_the_importers_value_of_the_property() -> None:
    exporters = {c: MEMBERS[c] for c in ("east-1", "east-2", "west-1")}
    assert cs.resolve(region_then_gpu(), MEMBERS["east-2"], exporters) == [
        ["east-2"],
        ["east-1", "east-2"],
        ["east-1", "west-1"],
    ]
    assert cs.resolve(region_then_gpu(), MEMBERS["west-1"], exporters) == [["west-1"], ["west-1"], ["east-1", "west-1"]]


def test_a_placeholder_for_a_property_the_importer_lacks_matches_no_cluster() -> None:
    exporters = {c: MEMBERS[c] for c in ("east-1", "west-1")}
    assert cs.resolve(region_then_gpu(), MEMBERS["lost"], exporters) == [[], [], ["east-1", "west-1"]]


@pytest.mark.parametrize(
    ("requirement", "selected"),
    [
        ({"key": "gpu", "operator": "In", "values": ["high", "low"]}, ["east-1", "west-1"]),
        ({"key": "gpu", "operator": "NotIn", "values": ["high"]}, ["east-2", "west-1"]),
        ({"key": "gpu", "operator": "DoesNotExist"}, ["east-2"]),
        ({"key": REGION, "operator": "NotIn", "values": [SAME]}, ["west-1"]),
    ],
)
def test_expressions_read_as_label_selector_requirements(requirement: dict[str, Any], selected: list[str]) -> None:
    (selector,) = by_json([{"propertySelector": {"matchExpressions": [requirement]}}])
    exporters = {c: MEMBERS[c] for c in ("east-1", "east-2", "west-1")}
    assert cs.select(selector, MEMBERS["east-1"], exporters) == selected


def test_match_properties_and_expressions_are_anded() -> None:
    (selector,) = by_json(
        [
            {
                "propertySelector": {
                    "matchProperties": {REGION: SAME},
                    "matchExpressions": [{"key": "gpu", "operator": "Exists"}],
                }
            }
        ]
    )
    assert cs.select(selector, MEMBERS["east-2"], MEMBERS) == ["east-1"]


def test_selections_group_importers_with_equal_results_and_cover_every_member() -> None:
    selectors = by_json([{"propertySelector": {"matchProperties": {REGION: SAME}}}])
    found = cs.selections(selectors, ["east-1", "west-1"], MEMBERS)
    assert [(list(s.importers), [list(r.clusters) for r in s.results]) for s in found] == [
        (["east-1", "east-2"], [["east-1"]]),
        (["lost"], [[]]),
        (["west-1"], [["west-1"]]),
    ]
    spec = pb.ServiceImportSpec(cluster_selectors=selectors, selections=found)
    assert cs.results_for(spec, "east-2") == [["east-1"]]
    assert cs.results_for(spec, "newcomer") is None
    assert cs.results_for(pb.ServiceImportSpec(), "east-2") is None


def test_the_first_result_with_a_ready_endpoint_wins_else_every_exporter() -> None:
    results = [["east-2"], ["east-1", "east-2"], ["east-1", "west-1"]]
    exporters = {"east-1", "east-2", "west-1"}
    assert cs.preferred_clusters(results, {"east-2", "west-1"}, exporters) == {"east-2"}
    assert cs.preferred_clusters(results, {"east-1"}, exporters) == {"east-1", "east-2"}
    assert cs.preferred_clusters(results, {"west-1"}, exporters) == {"east-1", "west-1"}
    assert cs.preferred_clusters([[], []], {"west-1"}, exporters) == exporters
    assert cs.preferred_clusters(None, set(), exporters) == exporters


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ([{"propertySelector": {}}], "propertySelector is empty"),
        ([{}], "has no propertySelector"),
        ([{"propertySelector": {"matchProperties": {"Bad Key": "x"}}}], "not a ClusterProperty name"),
        ([{"propertySelector": {"matchProperties": {REGION: ""}}}], "empty value"),
        (
            [{"propertySelector": {"matchExpressions": [{"key": REGION, "operator": "In"}]}}],
            "needs at least one value",
        ),
        (
            [{"propertySelector": {"matchExpressions": [{"key": REGION, "operator": "Exists", "values": ["a"]}]}}],
            "takes no values",
        ),
        (
            [{"propertySelector": {"matchExpressions": [{"key": REGION, "operator": "Gt", "values": ["1"]}]}}],
            "operator",
        ),
        ([{"propertySelector": {"matchProperties": {REGION: "a"}}}] * 17, "at most 16"),
        ("not a list", "not a list"),
    ],
)
def test_invalid_selectors_are_refused_with_what_to_fix(entries: Any, problem: str) -> None:
    with pytest.raises(cs.InvalidClusterSelectors, match=problem):
        cs.selectors_from_json(entries)


def test_selectors_go_to_json_and_back_unchanged() -> None:
    selectors = region_then_gpu()
    assert cs.selectors_from_json(cs.selectors_to_json(selectors)) == selectors
    assert cs.selectors_to_json(selectors)[1] == {"propertySelector": {"matchProperties": {REGION: SAME}}}

"""metav1.Condition rules over dicts (the one place of the rule), and what they write is a valid condition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kube.conditions import find_condition, is_condition_true, keep_transition_times, set_condition
from mcapi.crds.conditions import AntreaCondition, Condition

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def test_a_new_condition_is_appended_with_a_transition_time() -> None:
    conditions: list[dict[str, object]] = []
    assert set_condition(conditions, "Ready", "True", "Exported", "ok", observed_generation=2, now=T0)
    assert conditions == [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Exported",
            "message": "ok",
            "observedGeneration": 2,
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }
    ]


def test_the_same_condition_again_is_no_change() -> None:
    conditions: list[dict[str, object]] = []
    set_condition(conditions, "Ready", "True", "Exported", now=T0)
    assert not set_condition(conditions, "Ready", "True", "Exported", now=T1)
    assert conditions[0]["lastTransitionTime"] == "2024-01-01T00:00:00Z"


def test_the_transition_time_moves_only_when_the_status_flips() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, "Ready", "True", "Exported", now=T0)
    assert set_condition(conditions, "Ready", "True", "StillExported", "new message", now=T1)
    assert conditions[0]["lastTransitionTime"] == "2024-01-01T00:00:00Z"
    assert conditions[0]["reason"] == "StillExported"
    assert set_condition(conditions, "Ready", "False", "Pending", now=T1)
    assert conditions[0]["lastTransitionTime"] == "2024-01-01T00:05:00Z"


def test_what_the_rule_writes_is_a_metav1_condition_and_an_antrea_condition() -> None:
    metav1: list[dict[str, Any]] = []
    set_condition(metav1, "Valid", "True", "A", now=T0)
    set_condition(metav1, "Valid", "True", "B", observed_generation=3, now=T1)
    assert Condition.model_validate(metav1[0]).model_dump(by_alias=True, mode="json") == metav1[0]
    antrea: list[dict[str, Any]] = []
    set_condition(antrea, "Ready", "Unknown", now=T0)
    dumped = AntreaCondition.model_validate(antrea[0]).model_dump(by_alias=True, mode="json")
    assert dumped.items() <= antrea[0].items()  # Antrea's shape leaves an empty reason and message out


def test_the_observed_generation_follows_the_latest_write_and_lookups_go_by_type() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, "Valid", "True", "Valid", observed_generation=7, now=T0)
    assert set_condition(conditions, "Valid", "True", "Valid", observed_generation=8, now=T1)
    found = find_condition(conditions, "Valid")
    assert found is not None
    assert (found["observedGeneration"], found["lastTransitionTime"]) == (8, "2024-01-01T00:00:00Z")
    assert is_condition_true(conditions, "Valid")
    assert not is_condition_true(conditions, "Ready")
    assert find_condition(None, "Valid") is None


def test_a_status_computed_afresh_keeps_the_times_of_conditions_whose_status_held() -> None:
    previous = [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"},
        {"type": "Synced", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"},
        {"type": "Stale", "status": "False"},  # no time yet: the fresh one's counts
    ]
    fresh = [
        {"type": "Ready", "status": "True", "reason": "AllClustersReady", "lastTransitionTime": "2024-01-01T00:05:00Z"},
        {"type": "Synced", "status": "False", "lastTransitionTime": "2024-01-01T00:05:00Z"},
        {"type": "Stale", "status": "False", "lastTransitionTime": "2024-01-01T00:05:00Z"},
        {"type": "New", "status": "True", "lastTransitionTime": "2024-01-01T00:05:00Z"},
    ]
    kept = keep_transition_times(fresh, previous)
    assert [c["lastTransitionTime"] for c in kept] == [
        "2024-01-01T00:00:00Z",
        "2024-01-01T00:05:00Z",
        "2024-01-01T00:05:00Z",
        "2024-01-01T00:05:00Z",
    ]
    assert kept[0]["reason"] == "AllClustersReady"
    assert fresh[0]["lastTransitionTime"] == "2024-01-01T00:05:00Z"  # the input is not changed
    assert keep_transition_times(fresh, None) == fresh

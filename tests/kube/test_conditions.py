"""metav1.Condition rules over dicts, and agreement with the typed helper in mcapi."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kube.conditions import (
    find_condition,
    is_condition_true,
    remove_condition,
    set_condition,
    set_object_condition,
)
from mcapi.crds.conditions import Condition
from mcapi.crds.conditions import set_condition as set_model_condition

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


def test_the_dict_rule_agrees_with_the_typed_model_rule() -> None:
    models = set_model_condition([], Condition(type="Valid", status="True", reason="A"), T0)
    models = set_model_condition(models, Condition(type="Valid", status="True", reason="B"), T1)
    dicts: list[dict[str, object]] = []
    set_condition(dicts, "Valid", "True", "A", now=T0)
    set_condition(dicts, "Valid", "True", "B", now=T1)
    assert models[0].model_dump(by_alias=True, mode="json") == dicts[0]


def test_object_conditions_record_the_objects_generation() -> None:
    obj: dict[str, object] = {"metadata": {"name": "web", "generation": 7}}
    assert set_object_condition(obj, "Valid", "True", "Valid", now=T0)
    conditions = obj["status"]["conditions"]  # type: ignore[index]
    assert find_condition(conditions, "Valid")["observedGeneration"] == 7  # type: ignore[index]
    assert is_condition_true(conditions, "Valid")
    assert not is_condition_true(conditions, "Ready")


def test_remove_condition_reports_whether_one_was_there() -> None:
    conditions: list[dict[str, object]] = []
    set_condition(conditions, "Ready", "True", now=T0)
    assert remove_condition(conditions, "Ready")
    assert not remove_condition(conditions, "Ready")
    assert conditions == []

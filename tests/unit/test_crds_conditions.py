from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mcapi.crds import AntreaCondition, Condition, find_condition, is_condition_true, remove_condition, set_condition

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def _valid(status: str = "True", reason: str = "Valid", generation: int = 1) -> Condition:
    return Condition.model_validate(
        {"type": "Valid", "status": status, "reason": reason, "observedGeneration": generation}
    )


def test_a_new_condition_type_is_appended_and_stamped_now() -> None:
    result = set_condition([], _valid(), T0)
    assert [c.type for c in result] == ["Valid"]
    assert result[0].last_transition_time == T0


def test_the_same_status_keeps_the_transition_time_but_takes_reason_message_and_generation() -> None:
    first = set_condition([], _valid(), T0)
    new = _valid(reason="StillValid", generation=2).model_copy(update={"message": "ok"})
    second = set_condition(first, new, T1)
    assert second[0].last_transition_time == T0
    assert (second[0].reason, second[0].message, second[0].observed_generation) == ("StillValid", "ok", 2)


def test_a_status_flip_moves_the_transition_time() -> None:
    first = set_condition([], _valid(), T0)
    second = set_condition(first, _valid(status="False", reason="NoService"), T1)
    assert second[0].status == "False"
    assert second[0].last_transition_time == T1


def test_an_explicit_transition_time_wins_over_now() -> None:
    stamped = _valid().model_copy(update={"last_transition_time": T0})
    assert set_condition([], stamped, T1)[0].last_transition_time == T0


def test_the_input_list_is_left_untouched_and_order_is_kept() -> None:
    ready = Condition(type="Ready", status="True", reason="Exported")
    original = set_condition(set_condition([], _valid(), T0), ready, T0)
    snapshot = [c.model_copy() for c in original]
    updated = set_condition(original, _valid(status="False"), T1)
    assert original == snapshot
    assert [c.type for c in updated] == ["Valid", "Ready"]


def test_antrea_shaped_conditions_follow_the_same_rules() -> None:
    first = set_condition([], AntreaCondition(type="Ready", status="True"), T0)
    same = set_condition(first, AntreaCondition(type="Ready", status="True", message="again"), T1)
    flipped = set_condition(same, AntreaCondition(type="Ready", status="Unknown"), T1)
    assert same[0].last_transition_time == T0
    assert flipped[0].last_transition_time == T1


def test_find_is_true_and_remove_look_conditions_up_by_type() -> None:
    conditions = set_condition([], _valid(), T0)
    assert find_condition(conditions, "Valid") is conditions[0]
    assert find_condition(conditions, "Ready") is None
    assert is_condition_true(conditions, "Valid")
    assert remove_condition(conditions, "Valid") == []

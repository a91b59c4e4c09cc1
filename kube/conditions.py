"""metav1.Condition rules over plain dicts, for reconcilers that hold objects as JSON.

The one place of the rule: a condition's lastTransitionTime moves only when its status
flips; reason, message and observedGeneration follow the latest write. ``set_condition``
changes a list in place and says whether anything changed, so a caller writes status only
when it must; ``keep_transition_times`` applies the rule to a status computed afresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

Condition = dict[str, Any]
Status = Literal["True", "False", "Unknown"]


def format_time(moment: datetime) -> str:
    """metav1.Time: RFC 3339, UTC, whole seconds."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find_condition(conditions: Sequence[Condition] | None, condition_type: str) -> Condition | None:
    for condition in conditions or ():
        if condition.get("type") == condition_type:
            return condition
    return None


def is_condition_true(conditions: Sequence[Condition] | None, condition_type: str) -> bool:
    found = find_condition(conditions, condition_type)
    return found is not None and found.get("status") == "True"


def _status_held(previous: Condition | None, status: object) -> bool:
    """Whether ``previous`` already had ``status`` (and a time): then its lastTransitionTime stays."""
    return previous is not None and previous.get("status") == status and bool(previous.get("lastTransitionTime"))


def set_condition(
    conditions: list[Condition],
    condition_type: str,
    status: Status,
    reason: str = "",
    message: str = "",
    *,
    observed_generation: int | None = None,
    now: datetime | None = None,
) -> bool:
    """Set one condition in ``conditions`` (in place); True if the list changed.

    ``observed_generation`` is written when given (metav1.Condition); Antrea's own
    condition shape has none, so leave it out for those.
    """
    stamp = format_time(now or datetime.now(UTC))
    wanted: Condition = {"type": condition_type, "status": status, "reason": reason, "message": message}
    if observed_generation is not None:
        wanted["observedGeneration"] = observed_generation
    current = find_condition(conditions, condition_type)
    if current is None:
        conditions.append({**wanted, "lastTransitionTime": stamp})
        return True
    changed = any(current.get(key) != value for key, value in wanted.items())
    if not _status_held(current, status):
        current["lastTransitionTime"] = stamp
        changed = True
    current.update(wanted)
    return changed


def keep_transition_times(conditions: Sequence[Condition], previous: Sequence[Condition] | None) -> list[Condition]:
    """``conditions`` computed afresh (each stamped with its own time), taking the
    lastTransitionTime of the ``previous`` condition of its type wherever the status held."""
    kept = []
    for fresh in conditions:
        before = find_condition(previous, fresh.get("type", ""))
        held = _status_held(before, fresh.get("status"))
        kept.append({**fresh, "lastTransitionTime": before["lastTransitionTime"]} if held and before else fresh)
    return kept

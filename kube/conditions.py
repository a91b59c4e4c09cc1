"""metav1.Condition rules over plain dicts, for reconcilers that hold objects as JSON.

The rule is the one ``mcapi.crds.conditions.set_condition`` applies to typed models:
a condition's lastTransitionTime moves only when its status flips; reason, message
and observedGeneration follow the latest write. Here the list is changed in place
and the functions say whether anything changed, so a caller writes status only
when it must.
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
    if current.get("status") != status or not current.get("lastTransitionTime"):
        current["lastTransitionTime"] = stamp
        changed = True
    current.update(wanted)
    return changed


def set_object_condition(
    obj: dict[str, Any],
    condition_type: str,
    status: Status,
    reason: str = "",
    message: str = "",
    *,
    now: datetime | None = None,
) -> bool:
    """Set a condition in ``obj.status.conditions`` with observedGeneration = metadata.generation."""
    status_block = obj.setdefault("status", {})
    conditions = status_block.setdefault("conditions", [])
    generation = obj.get("metadata", {}).get("generation")
    return set_condition(
        conditions,
        condition_type,
        status,
        reason,
        message,
        observed_generation=generation if isinstance(generation, int) else None,
        now=now,
    )


def remove_condition(conditions: list[Condition], condition_type: str) -> bool:
    """Remove the condition of that type (in place); True if there was one."""
    kept = [c for c in conditions if c.get("type") != condition_type]
    removed = len(kept) != len(conditions)
    conditions[:] = kept
    return removed

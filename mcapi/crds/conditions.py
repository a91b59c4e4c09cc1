"""Conditions: metav1.Condition, Antrea's older condition shape, and the
metav1 update rules as a pure function."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, TypeVar

from pydantic import ConfigDict, Field

from mcapi.crds.base import ConditionStatus, Int64, KubeModel, KubeTime

CONDITION_TRUE: Final = "True"
CONDITION_FALSE: Final = "False"
CONDITION_UNKNOWN: Final = "Unknown"


class ConditionBase(KubeModel):
    type: str
    status: ConditionStatus
    last_transition_time: KubeTime | None = Field(default=None, alias="lastTransitionTime")
    reason: str = ""
    message: str = ""


class Condition(ConditionBase):
    """metav1.Condition (ServiceExport, ServiceImport v1beta1 status).

    ``lastTransitionTime``, ``reason`` and ``message`` are required on the wire;
    ``set_condition`` fills the time, so callers may leave it out.
    """

    model_config = ConfigDict(
        json_schema_extra={"required": ["lastTransitionTime", "message", "reason", "status", "type"]}
    )
    KEEP_EMPTY = frozenset({"reason", "message", "last_transition_time"})

    observed_generation: Int64 | None = Field(default=None, ge=0, alias="observedGeneration")


class AntreaCondition(ConditionBase):
    """A condition of a ClusterSet, a cluster, a ResourceExport, a ResourceImport or a ClusterInfoImport."""

    # Antrea's own condition shape (its ClusterSetCondition, ClusterCondition,
    # ResourceExportCondition, ResourceImportCondition, ResourceCondition):
    # metav1.Condition without observedGeneration, every field optional.

    type: str = ""
    status: ConditionStatus = CONDITION_UNKNOWN


C = TypeVar("C", bound=ConditionBase)


def find_condition(conditions: Sequence[C], condition_type: str) -> C | None:
    for condition in conditions:
        if condition.type == condition_type:
            return condition
    return None


def is_condition_true(conditions: Sequence[ConditionBase], condition_type: str) -> bool:
    found = find_condition(conditions, condition_type)
    return found is not None and found.status == CONDITION_TRUE


def set_condition(conditions: Sequence[C], new: C, now: datetime) -> list[C]:
    """Return ``conditions`` with ``new`` applied by the metav1 rules.

    A condition of a new type is appended, stamped ``now`` unless it carries a
    time. An existing one takes the new reason, message and observedGeneration;
    its lastTransitionTime moves (to the new one's time, else ``now``) only
    when its status flips. The input is not modified; order is kept.
    """
    stamp = new.last_transition_time or now
    result: list[C] = []
    replaced = False
    for current in conditions:
        if current.type != new.type or replaced:
            result.append(current)
            continue
        replaced = True
        update: dict[str, Any] = {"reason": new.reason, "message": new.message}
        if current.status != new.status:
            update["status"] = new.status
            update["last_transition_time"] = stamp
        elif current.last_transition_time is None:
            update["last_transition_time"] = stamp
        if isinstance(new, Condition):
            update["observed_generation"] = new.observed_generation
        result.append(current.model_copy(update=update))
    if not replaced:
        result.append(new.model_copy(update={"last_transition_time": stamp}))
    return result


def remove_condition(conditions: Sequence[C], condition_type: str) -> list[C]:
    return [c for c in conditions if c.type != condition_type]

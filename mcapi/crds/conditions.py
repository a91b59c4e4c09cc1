"""Conditions: metav1.Condition and Antrea's older condition shape, as CRD schemas.

Reconcilers hold objects as JSON and apply the metav1 update rules with kube.conditions."""

from __future__ import annotations

from typing import Final

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

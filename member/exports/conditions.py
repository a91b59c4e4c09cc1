"""ServiceExport conditions (MCS KEP-1645, mcs-api conformance), from what is known of an export.

- ``Valid``: True/Valid, or False with the InvalidReason (NoService, InvalidServiceType,
  ImportedService, InvalidService, InvalidExportedLabels, InvalidExportedAnnotations,
  InvalidClusterSelector).
- ``Ready``: True/Exported once the hub took the Service export (accepted, or accepted
  with a conflict); False/Pending before its answer; False/Failed when invalid, or when the
  hub (or the session, for an oversized export) refused it; False/GlobalAddressExhausted,
  SelectorlessService or GlobalAddressServiceTaken when a globally addressed member could not
  give the export its global addresses (member.global_addresses), so it is not exported.
- ``Conflict``: True with the hub's MCS reason (PortConflict, TypeConflict, ...,
  ClusterSelectorsConflict) and message; otherwise False/NoConflicts.

Beside the conditions, ``status.clusters`` (alpha, v1beta1): for an export with cluster
selectors, the importing clusters whose traffic it receives now, as the hub says; absent
otherwise (every member imports it).

Applied with the metav1 rules (kube.conditions): lastTransitionTime moves only when a
status flips, observedGeneration is the ServiceExport's generation.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kube.conditions import Status, set_condition
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.exports.evaluate import Evaluation
from member.hubclient import ExportRejection

VALID = "Valid"
READY = "Ready"
CONFLICT = "Conflict"

REASON_VALID = "Valid"
REASON_EXPORTED = "Exported"
REASON_PENDING = "Pending"
REASON_FAILED = "Failed"
REASON_NO_CONFLICTS = "NoConflicts"

_TAKEN = (pb.VERDICT_ACCEPTED, pb.VERDICT_CONFLICT)
_REFUSED = (pb.VERDICT_REJECTED, pb.VERDICT_INVALID)


@dataclass(frozen=True)
class HubAnswer:
    """What the hub said about one export: its verdict (None before any) or the refusal of the write."""

    verdict: pb.ExportStatus | None = None
    rejection: ExportRejection | None = None


@dataclass(frozen=True)
class WantedCondition:
    type: str
    status: Status
    reason: str
    message: str = ""


def _failure(answer: HubAnswer) -> str | None:
    if answer.rejection is not None:
        return answer.rejection.message or answer.rejection.code.name
    if answer.verdict is not None and answer.verdict.verdict in _REFUSED:
        return answer.verdict.message or answer.verdict.reason or pb.Verdict.Name(answer.verdict.verdict)
    return None


def _ready_now(current: list[dict[str, Any]] | None) -> bool:
    return any(c.get("type") == READY and c.get("status") == "True" for c in current or ())


def wanted_conditions(
    evaluation: Evaluation,
    service: HubAnswer,
    endpoints: HubAnswer,
    current: list[dict[str, Any]] | None = None,
) -> list[WantedCondition]:
    """The conditions to set. ``current`` matters in one case: a hub session that has not
    answered yet (a restarted member) knows nothing new, so an export already Ready keeps its
    Ready and Conflict conditions until the answer comes, instead of flapping to Pending."""
    no_conflict = WantedCondition(CONFLICT, "False", REASON_NO_CONFLICTS)
    if not evaluation.valid:
        assert evaluation.invalid is not None
        return [
            WantedCondition(VALID, "False", str(evaluation.invalid), evaluation.message),
            WantedCondition(READY, "False", REASON_FAILED, evaluation.message),
            no_conflict,
        ]
    valid = WantedCondition(VALID, "True", REASON_VALID)
    if evaluation.blocked is not None:
        blocked = evaluation.blocked
        return [valid, WantedCondition(READY, "False", blocked.reason, blocked.message), no_conflict]
    failure = _failure(service) or _failure(endpoints)
    if failure is not None:
        return [
            valid,
            WantedCondition(READY, "False", REASON_FAILED, f"The leader refused the export: {failure}"),
            no_conflict,
        ]
    verdict = service.verdict
    if verdict is None and _ready_now(current):
        return [valid]
    if verdict is None or verdict.verdict not in _TAKEN:
        return [
            valid,
            WantedCondition(READY, "False", REASON_PENDING, "Waiting for the leader to accept the export"),
            no_conflict,
        ]
    ready = WantedCondition(READY, "True", REASON_EXPORTED, "The Service is exported to the ClusterSet")
    if verdict.verdict == pb.VERDICT_CONFLICT:
        return [valid, ready, WantedCondition(CONFLICT, "True", verdict.reason or "Conflict", verdict.message)]
    return [valid, ready, no_conflict]


def exported_to(service: HubAnswer) -> list[dict[str, str]] | None:
    """``status.clusters``: the importers the hub says a selective Service export reaches (None:
    not selective, or not known yet, and the field is absent)."""
    verdict = service.verdict
    if verdict is None or verdict.verdict not in _TAKEN or not verdict.clusters:
        return None
    return [{"cluster": cluster} for cluster in verdict.clusters]


def apply_conditions(
    current: list[dict[str, Any]] | None, wanted: list[WantedCondition], generation: int | None, now: datetime
) -> tuple[list[dict[str, Any]], bool]:
    """``current`` with ``wanted`` set (a new list) and whether anything changed."""
    conditions: list[dict[str, Any]] = copy.deepcopy(list(current or []))
    changed = False
    for condition in wanted:
        changed |= set_condition(
            conditions,
            condition.type,
            condition.status,
            condition.reason,
            condition.message,
            observed_generation=generation,
            now=now,
        )
    return conditions, changed

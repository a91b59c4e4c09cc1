"""events.k8s.io/v1 as a view of core/v1 Events.

A real apiserver stores one Event object and serves it under both groups with
renamed fields; `kubectl describe` lists core/v1 Events by involvedObject.*, so
events written through events.k8s.io must show there too.
"""

from __future__ import annotations

from kube.resources import Obj
from sandbox.resources import ObjectView

# events.k8s.io/v1 field -> core/v1 field
_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_REVERSE = {v: k for k, v in _RENAMES.items()}


def _rename(obj: Obj, table: dict[str, str]) -> Obj:
    return {table.get(k, k): v for k, v in obj.items()}


def _field_path(path: str) -> str:
    head, _, rest = path.partition(".")
    renamed = _RENAMES.get(head, head)
    return f"{renamed}.{rest}" if rest else renamed


EVENTS_V1_VIEW = ObjectView(
    to_storage=lambda obj: _rename(obj, _RENAMES),
    from_storage=lambda obj: _rename(obj, _REVERSE),
    field_path=_field_path,
)

CORE_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
EVENTS_V1_FIELDS = (
    *(f.replace("involvedObject", "regarding") for f in CORE_EVENT_FIELDS),
    "reportingController",
)

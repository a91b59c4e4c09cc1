"""The hub's merge engine: pure functions from a group's exports to its imports and verdicts.

No I/O here: the hub groups exports (group_key), validates them
(validate_export, expected_export_name), merges a group (merge_group), deletes
the imports a group no longer produces (import_names_for_group), and works out
what a change of exports writes, re-merging only the groups it touches (regroup).
Which member receives an import is the publishing side's (hub.watch.delivery).
"""

from hub.merge.contract import GroupKey, GroupResult, MergeConfig, MergeContext
from hub.merge.errors import (
    LabelIdentityExhausted,
    MergeError,
    MixedGroup,
    UnknownExportKind,
    UnknownGroupKind,
)
from hub.merge.grouping import group_key, import_names_for_group, merge_group
from hub.merge.naming import expected_export_name
from hub.merge.validate import validate_export

__all__ = [
    "GroupKey",
    "GroupResult",
    "LabelIdentityExhausted",
    "MergeConfig",
    "MergeContext",
    "MergeError",
    "MixedGroup",
    "UnknownExportKind",
    "UnknownGroupKind",
    "expected_export_name",
    "group_key",
    "import_names_for_group",
    "merge_group",
    "validate_export",
]

"""LabelIdentity: one identity per normalized label across clusters, with a stable ID.

IDs come from 1..16777214 (Antrea's range). An identity keeps the ID it was
given for as long as any cluster exports the label, including across hub
restarts, because the hub passes the previous import back in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from hub.merge import verdicts
from hub.merge.contract import GroupResult
from hub.merge.errors import LabelIdentityExhausted
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

MAX_LABEL_ID = names.LABEL_IDENTITY_MAX_ID


def allocate_label_id(used: AbstractSet[int], *, label: str, max_id: int = MAX_LABEL_ID) -> int:
    """The lowest ID in 1..max_id not in used.

    Among 1..len(used)+1 at least one ID is free, so the scan is bounded by
    the number of IDs in use, not by the size of the range.
    """
    bound = min(max_id, len(used) + 1)
    for candidate in range(1, bound + 1):
        if candidate not in used:
            return candidate
    raise LabelIdentityExhausted(label, max_id)


def _kept_id(previous: pb.ResourceImport | None, label: str, used: AbstractSet[int], max_id: int) -> int | None:
    """The previous ID, unless it is missing, out of range, or (a corrupt state) held elsewhere."""
    if previous is None or not previous.HasField("label_identity"):
        return None
    identity = previous.label_identity
    if identity.label != label or not 1 <= identity.id <= max_id or identity.id in used:
        return None
    return identity.id


def merge_label_identity(
    exports: Sequence[pb.ResourceExport],
    previous_imports: Mapping[str, pb.ResourceImport],
    used_label_ids: AbstractSet[int],
) -> GroupResult:
    """One import for the label while any cluster exports it."""
    if not exports:
        return GroupResult()
    label = exports[0].label_identity.normalized_label
    import_name = names.label_identity_import_name(label)
    max_id = MAX_LABEL_ID
    label_id = _kept_id(previous_imports.get(import_name), label, used_label_ids, max_id)
    if label_id is None:
        label_id = allocate_label_id(used_label_ids, label=label, max_id=max_id)
    imp = pb.ResourceImport(
        import_name=import_name,
        name=import_name,
        cluster_ids=[],
        label_identity=pb.LabelIdentity(label=label, id=label_id),
    )
    statuses = {e.export_name: verdicts.accepted(f"Label identity {import_name} has ID {label_id}.") for e in exports}
    return GroupResult(imports={import_name: imp}, statuses=statuses)

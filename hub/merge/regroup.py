"""What a change of exports does to the imports: re-merge only the groups it touches (pure).

The engine hands the current index, the exports deleted and the exports put; the answer is the
whole write (exports with their new verdicts, imports put or deleted). Nothing is changed, so
the same call also tells what a change *would* do (a dry run of removing a member).

ClusterInfo imports carry every member's global addressing, which depends on all members'
ClusterInfo and global blocks together (hub.merge.global_addressing): a change that touches one
ClusterInfo, or the blocks, re-merges every ClusterInfo group (one per member), so a member
that starts or stops overlapping another is re-stamped in the same revision.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Protocol

from hub.merge.contract import GroupKey, MergeContext
from hub.merge.global_addressing import Addressing, report
from hub.merge.grouping import (
    GROUP_CLUSTER_INFO,
    GROUP_LABEL_IDENTITY,
    group_key,
    import_names_for_group,
    merge_group,
)
from hub.merge.ordering import oldest_first
from hub.store.base import MemberRecord, WriteBatch
from mcapi.mchub.v1 import common_area_pb2 as pb


class Merged(Protocol):
    """What regroup reads of the hub's state (the engine's index holds it)."""

    @property
    def exports(self) -> Mapping[str, pb.ResourceExport]: ...

    @property
    def imports(self) -> Mapping[str, pb.ResourceImport]: ...

    @property
    def groups(self) -> Mapping[GroupKey, set[str]]:
        """Export names by merge group."""
        ...

    @property
    def members(self) -> Mapping[str, MemberRecord]: ...

    def label_ids(self, exclude: set[str]) -> set[int]:
        """The IDs of the label identity imports but those named."""
        ...


def regroup(
    index: Merged,
    merge: MergeContext,
    *,
    deleted: set[str],
    put: list[pb.ResourceExport],
    also: Collection[GroupKey] = (),
    blocks: Mapping[str, str] | None = None,
) -> WriteBatch:
    """Re-merge every group the change touches, and the groups ``also`` names (what they merge
    changed outside their exports: members' properties); return the whole write. ``blocks``: the
    members' global blocks after the change, when it changes them (else the index's)."""
    current = index.exports
    overlay = {e.export_name: e for e in put}
    keys: set[GroupKey] = {group_key(current[n]) for n in deleted if n in current}
    keys.update(also)
    # Puts by group, so a batch of many exports is not scanned once per group.
    overlay_by_key: dict[GroupKey, set[str]] = {}
    for name, export in overlay.items():
        overlay_by_key.setdefault(group_key(export), set()).add(name)
    keys.update(overlay_by_key)

    def group_after(key: GroupKey) -> list[pb.ResourceExport]:
        names = sorted((index.groups.get(key, set()) | overlay_by_key.get(key, set())) - deleted)
        return [overlay.get(n) or current[n] for n in names]

    if blocks is not None or any(key[0] == GROUP_CLUSTER_INFO for key in keys):
        keys.update(key for key in index.groups if key[0] == GROUP_CLUSTER_INFO)
        infos = [group_after(key) for key in keys if key[0] == GROUP_CLUSTER_INFO]
        merge = replace(merge, addressing=_addressing(index, merge, infos, blocks))
    batch = WriteBatch(delete_exports=sorted(n for n in deleted if n in current))
    # Label IDs this batch gives out: the index does not hold them yet, and two labels new in
    # one batch (a sync bracket, upserts sharing a write) must not draw the same one.
    allocated: set[int] = set()
    for key in sorted(keys):
        group = group_after(key)
        import_names = import_names_for_group(key)
        previous = {n: index.imports[n] for n in import_names if n in index.imports}
        result = merge_group(group, previous, _context_for(index, merge, key, import_names, allocated))
        for name in import_names:
            produced = result.imports.get(name)
            if produced is not None and produced.WhichOneof("payload") == "label_identity":
                allocated.add(produced.label_identity.id)
            if produced is not None and previous.get(name) != produced:
                batch.put_imports.append(produced)
            elif produced is None and name in previous:
                batch.delete_imports.append(name)
        for export in group:
            status = result.statuses.get(export.export_name, pb.ExportStatus())
            if export.export_name in overlay or export.status != status:
                stored = pb.ResourceExport()
                stored.CopyFrom(export)
                stored.status.CopyFrom(status)
                batch.put_exports.append(stored)
    # One order for a revision's import changes everywhere (live, change log, followers, which
    # cannot know the groups): upserts by name, then deletes by name.
    batch.put_imports.sort(key=lambda imp: imp.import_name)
    batch.delete_imports.sort()
    return batch


def _addressing(
    index: Merged, merge: MergeContext, groups: list[list[pb.ResourceExport]], blocks: Mapping[str, str] | None
) -> dict[str, Addressing]:
    """Every member's addressing after the change, from the ClusterInfo each group would import
    (its oldest export's, as hub.merge.cluster_info merges it)."""
    infos: dict[str, pb.ClusterInfo] = {}
    for group in groups:
        ordered = oldest_first(group)
        if ordered:
            infos[ordered[0].cluster_id] = ordered[0].cluster_info
    if blocks is None:
        blocks = {cid: member.global_cidr for cid, member in index.members.items()}
    return report(infos, blocks, merge.config.global_cidr).by_cluster


def _context_for(
    index: Merged, merge: MergeContext, key: GroupKey, import_names: list[str], allocated: set[int]
) -> MergeContext:
    # Only label identities draw from a shared ID space; other groups skip the scan.
    if key[0] != GROUP_LABEL_IDENTITY:
        return merge
    return replace(merge, used_label_ids=index.label_ids(set(import_names)) | allocated)

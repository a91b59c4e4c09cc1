"""The hub's in-memory view of the store, kept in step with every commit.

Exports and imports are kept packed (hub.store.packed): what grows per export is its serialized
message and its import's (~100-200 bytes each), their names, a facet (kind, owner) and its
merge group's entry — about 2 KB per export with its import, where parsed messages took ~4 KB.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from hub.merge import GroupKey, group_key
from hub.merge.grouping import service_group_key
from hub.merge.ownership import ADMIN_OWNER, owner_of
from hub.store.base import MemberRecord, Snapshot, WriteBatch
from hub.store.packed import PackedMessages
from mcapi.delivery import delivers_to
from mcapi.mchub.v1 import common_area_pb2 as pb

LABEL_IDENTITY = "label_identity"


def _export_facet(export: pb.ResourceExport) -> tuple[str, str]:
    return export.WhichOneof("payload") or "", owner_of(export)


def _import_facet(imp: pb.ResourceImport) -> tuple[str, str]:
    return imp.WhichOneof("payload") or "", ""


def packed_exports() -> PackedMessages[pb.ResourceExport]:
    return PackedMessages(pb.ResourceExport.FromString, _export_facet)


def packed_imports() -> PackedMessages[pb.ResourceImport]:
    return PackedMessages(pb.ResourceImport.FromString, _import_facet)


@dataclass
class Index:
    exports: PackedMessages[pb.ResourceExport] = field(default_factory=packed_exports)
    imports: PackedMessages[pb.ResourceImport] = field(default_factory=packed_imports)
    members: dict[str, MemberRecord] = field(default_factory=dict)
    # Export names by merge group, so a change re-merges only its group.
    groups: dict[GroupKey, set[str]] = field(default_factory=lambda: defaultdict(set))
    # The groups of the Service imports with cluster selectors, by import name: what members'
    # ClusterProperties change (hub.engine.selection).
    selective: dict[str, GroupKey] = field(default_factory=dict)

    @classmethod
    def from_snapshot(cls, snap: Snapshot) -> Index:
        index = cls(members=dict(snap.members))
        for name, imp in snap.imports.items():
            index.imports[name] = imp
            index._note_selective(imp)
        for export in snap.exports.values():
            index.put_export(export)
        return index

    def put_export(self, export: pb.ResourceExport) -> None:
        self.exports[export.export_name] = export
        self.groups[group_key(export)].add(export.export_name)

    def delete_export(self, name: str) -> None:
        export = self.exports.pop(name, None)
        if export is None:
            return
        key = group_key(export)
        members = self.groups.get(key)
        if members is not None:
            members.discard(name)
            if not members:
                del self.groups[key]

    def apply(self, batch: WriteBatch) -> None:
        for name in batch.delete_exports:
            self.delete_export(name)
        for export in batch.put_exports:
            self.put_export(export)
        for name in batch.delete_imports:
            self.imports.pop(name, None)
            self.selective.pop(name, None)
        for imp in batch.put_imports:
            self.imports[imp.import_name] = imp
            self._note_selective(imp)
        for cluster_id in batch.delete_members:
            self.members.pop(cluster_id, None)
        for member in batch.put_members:
            self.members[member.cluster_id] = member

    def _note_selective(self, imp: pb.ResourceImport) -> None:
        if imp.HasField("service_import") and imp.service_import.cluster_selectors:
            self.selective[imp.import_name] = service_group_key(imp.namespace, imp.name)
        else:
            self.selective.pop(imp.import_name, None)

    def owned_by(self, cluster_id: str, *, admin: bool) -> set[str]:
        """Names of the exports an identity owns (hub.merge.ownership: by kind, not by body)."""
        owner = ADMIN_OWNER if admin else cluster_id
        return {n for n, (_, held_by) in self.exports.facets() if held_by == owner}

    def label_ids(self, exclude: set[str]) -> set[int]:
        names = [n for n, (kind, _) in self.imports.facets() if kind == LABEL_IDENTITY and n not in exclude]
        return {self.imports[n].label_identity.id for n in names}

    def imports_for(self, cluster_id: str | None) -> Iterator[pb.ResourceImport]:
        """Imports delivered to a member (None: every import, for the admin), by name: taken as
        they are now, parsed one at a time as the caller goes (a snapshot costs no copy of them)."""
        parse = self.imports.parse
        frozen = self.imports.frozen_items()
        return (i for i in (parse(b) for _, b in frozen) if cluster_id is None or delivers_to(i, cluster_id))

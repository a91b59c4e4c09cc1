"""The hub's in-memory view of the store, kept in step with every commit."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hub.merge import GroupKey, delivers_to, group_key
from hub.merge.ownership import ADMIN_OWNER, owner_of
from hub.store.base import MemberRecord, Snapshot, WriteBatch
from mcapi.mchub.v1 import common_area_pb2 as pb


@dataclass
class Index:
    exports: dict[str, pb.ResourceExport] = field(default_factory=dict)
    imports: dict[str, pb.ResourceImport] = field(default_factory=dict)
    members: dict[str, MemberRecord] = field(default_factory=dict)
    # Export names by merge group, so a change re-merges only its group.
    groups: dict[GroupKey, set[str]] = field(default_factory=lambda: defaultdict(set))

    @classmethod
    def from_snapshot(cls, snap: Snapshot) -> Index:
        index = cls(imports=dict(snap.imports), members=dict(snap.members))
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
        for imp in batch.put_imports:
            self.imports[imp.import_name] = imp
        for cluster_id in batch.delete_members:
            self.members.pop(cluster_id, None)
        for member in batch.put_members:
            self.members[member.cluster_id] = member

    def group_exports(self, key: GroupKey) -> list[pb.ResourceExport]:
        return [self.exports[n] for n in sorted(self.groups.get(key, ()))]

    def owned_by(self, cluster_id: str, *, admin: bool) -> set[str]:
        """Names of the exports an identity owns (hub.merge.ownership: by kind, not by body)."""
        owner = ADMIN_OWNER if admin else cluster_id
        return {n for n, e in self.exports.items() if owner_of(e) == owner}

    def label_ids(self, exclude: set[str]) -> set[int]:
        return {
            imp.label_identity.id
            for name, imp in self.imports.items()
            if name not in exclude and imp.WhichOneof("payload") == "label_identity"
        }

    def imports_for(self, cluster_id: str | None) -> list[pb.ResourceImport]:
        """Imports delivered to a member (None: every import, for the admin)."""
        return [imp for _, imp in sorted(self.imports.items()) if cluster_id is None or delivers_to(imp, cluster_id)]

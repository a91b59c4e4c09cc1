"""What members' ClusterProperties take part in: the cluster selectors of selective Service
imports (KEP-5939), resolved for every member by the merge (hub.merge.selection).

The merge reads members' properties through a view of the member records (no copy per write),
and a change of who the members are or of their properties re-merges every group whose import
has cluster selectors, in the same write as the member change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from hub.engine.index import Index
from hub.merge import GroupKey
from hub.store.base import MemberRecord


class MemberProperties(Mapping[str, Mapping[str, str]]):
    """Member ID -> its ClusterProperties, read from the member records as they are now
    (``without``: a member being removed, which imports nothing any more)."""

    def __init__(self, members: Mapping[str, MemberRecord], without: str = "") -> None:
        self._members = members
        self._without = without

    def __getitem__(self, cluster_id: str) -> Mapping[str, str]:
        if cluster_id == self._without:
            raise KeyError(cluster_id)
        return self._members[cluster_id].inventory.property_map

    def __iter__(self) -> Iterator[str]:
        return (m for m in self._members if m != self._without)

    def __len__(self) -> int:
        return len(self._members) - (1 if self._without in self._members else 0)


def selects_differently(before: MemberRecord | None, after: MemberRecord) -> bool:
    """Whether replacing ``before`` (None: a new member) by ``after`` can change what cluster
    selectors select: a new member, or other properties."""
    return before is None or before.inventory.properties != after.inventory.properties


def selective_groups(index: Index) -> set[GroupKey]:
    """The merge groups whose import has cluster selectors."""
    return set(index.selective.values())

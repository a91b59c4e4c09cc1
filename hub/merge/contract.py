"""What the hub hands the merge engine and what it gets back."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from hub.merge.global_addressing import Addressing, GlobalCIDR
from mcapi.mchub.v1 import common_area_pb2 as pb

# Exports that merge together share a key; see grouping.group_key.
GroupKey = tuple[str, ...]


@dataclass(frozen=True)
class MergeConfig:
    """Switches of the merge rules.

    strict_ports: Antrea's older rule. The oldest Service export defines the
    ports; an export whose port set differs is skipped (VERDICT_REJECTED,
    reason ConvergeFailure) and its endpoints are left out. Off (the default),
    the MCS rule applies: ports are the union and differences are conflicts.
    """

    strict_ports: bool = False
    # The ClusterSet's global CIDR (hub.merge.global_addressing); None: no global addressing.
    global_cidr: GlobalCIDR | None = None


@dataclass(frozen=True)
class MergeContext:
    """The config plus the little the engine must know from outside one group."""

    config: MergeConfig
    # Label identity IDs held by imports outside the group being merged.
    used_label_ids: AbstractSet[int] = frozenset()
    # Every member's ClusterProperties (member ID -> name -> value): cluster selectors are
    # resolved for each member (hub.merge.selection).
    member_properties: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Every member's global block and verdict, stamped into ClusterInfo imports.
    addressing: Mapping[str, Addressing] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupResult:
    """The outcome of merging one group.

    imports: every import the group now produces, by import name; names the
    group can produce (import_names_for_group) but absent here are to be
    deleted by the hub.
    statuses: one status for every export of the group, by export name.
    """

    imports: dict[str, pb.ResourceImport] = field(default_factory=dict)
    statuses: dict[str, pb.ExportStatus] = field(default_factory=dict)

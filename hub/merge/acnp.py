"""AntreaClusterNetworkPolicy: an admin export becomes one import for all members.

The hub enforces that only the admin exports this kind; the merge converts.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf import struct_pb2

from hub.merge import verdicts
from hub.merge.contract import GroupResult
from hub.merge.ordering import oldest_first
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb


def merge_acnp(exports: Sequence[pb.ResourceExport]) -> GroupResult:
    """Copy the oldest export of the policy name into its import; later ones are refused."""
    ordered = oldest_first(exports)
    if not ordered:
        return GroupResult()
    source = ordered[0]
    import_name = names.acnp_import_name(source.name)
    policy = struct_pb2.Struct()
    policy.CopyFrom(source.cluster_network_policy)
    imp = pb.ResourceImport(
        import_name=import_name,
        namespace=source.namespace,
        name=source.name,
        cluster_ids=[],
        cluster_network_policy=policy,
    )
    statuses = {source.export_name: verdicts.accepted(f"Imported as {import_name} by every member.")}
    for extra in ordered[1:]:
        statuses[extra.export_name] = verdicts.rejected(
            verdicts.REASON_DUPLICATE_EXPORT,
            f"The policy {source.name} is already exported as {source.export_name}, which is older.",
        )
    return GroupResult(imports={import_name: imp}, statuses=statuses)

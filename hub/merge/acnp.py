"""AntreaClusterNetworkPolicy: an admin export becomes one import for all members.

The hub enforces that only the admin exports this kind; the merge converts.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf import struct_pb2

from hub.merge.contract import GroupResult
from hub.merge.single_source import merge_single_source
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb


def _policy_import(source: pb.ResourceExport) -> pb.ResourceImport:
    policy = struct_pb2.Struct()
    policy.CopyFrom(source.cluster_network_policy)
    return pb.ResourceImport(
        import_name=names.acnp_import_name(source.name),
        namespace=source.namespace,
        name=source.name,
        cluster_ids=[],
        cluster_network_policy=policy,
    )


def merge_acnp(exports: Sequence[pb.ResourceExport]) -> GroupResult:
    """Copy the oldest export of the policy name into its import; later ones are refused."""
    return merge_single_source(
        exports,
        _policy_import,
        lambda imp: f"Imported as {imp.import_name} by every member.",
        lambda source, _: f"The policy {source.name} is already exported as {source.export_name}, which is older.",
    )

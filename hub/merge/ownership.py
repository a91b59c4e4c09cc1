"""Who owns an export: who may write its kind, never what its body claims.

Members write Services, Endpoints, ClusterInfo and LabelIdentities, each under
a name derived from the member's cluster ID; the ClusterSet admin alone writes
AntreaClusterNetworkPolicies. So the kind of a stored export says who wrote
it, and ownership follows from it with nothing more to record:

- a policy is the admin's, whatever `cluster_id` its body names (a policy
  applied with kubectl to the kube store's Namespace may name anything);
- any other export is the member's whose ID its `cluster_id` holds, which the
  hub checked against the writer's token when it accepted it.

Only an export's owner may overwrite or delete it, and a sync bracket sweeps
only what its caller owns.
"""

from __future__ import annotations

from hub.errors import quote
from mcapi.mchub.v1 import common_area_pb2 as pb

# Payload kinds only the admin exports.
ADMIN_KINDS = frozenset({"cluster_network_policy"})
# The owner key of admin exports; member keys are cluster IDs, never empty.
ADMIN_OWNER = ""


def is_admin_export(export: pb.ResourceExport) -> bool:
    return export.WhichOneof("payload") in ADMIN_KINDS


def owner_of(export: pb.ResourceExport) -> str:
    """The owner key: ADMIN_OWNER for admin kinds, else the exporting member's cluster ID."""
    return ADMIN_OWNER if is_admin_export(export) else export.cluster_id


def describe_owner(owner: str) -> str:
    return "the ClusterSet admin" if owner == ADMIN_OWNER else f"member {quote(owner)}"

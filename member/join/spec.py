"""What a member needs to join, read from the ClusterSet (v1alpha2 or legacy v1alpha1), ClusterClaims
and the ClusterProperty ``cluster.clusterset.k8s.io``.

The cluster ID is that ClusterProperty's value when someone wrote it (KEP-2149: the cluster's
ID, whoever manages it); otherwise the ClusterSet's, as follows.

v1alpha2: ``spec.clusterID`` is this cluster, ``spec.leaders[0]`` the leader
(``clusterID``, ``server``, ``secret``), ``spec.namespace`` the leader Namespace,
``metadata.name`` the ClusterSet ID.

Legacy v1alpha1: no ``spec.clusterID``; the cluster ID is the value of the ClusterClaim
``id.k8s.io`` and the ClusterSet ID must equal the ClusterClaim ``clusterset.k8s.io``
(the legacy guide spells it ``clusterSet.k8s.io``). A v1alpha1 claim names itself in a
``name`` field, a v1alpha2 claim in ``metadata.name``; both shapes are read. When no
ID claim exists, a legacy ClusterSet listing exactly one of ``members[]`` names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kube.errors import PermanentError
from kube.resources import Obj
from mcapi.crds import (
    PROPERTY_CLUSTER_ID,
    WELL_KNOWN_CLAIM_CLUSTER_SET,
    WELL_KNOWN_CLAIM_CLUSTER_SET_V1ALPHA1,
    WELL_KNOWN_CLAIM_ID,
)
from mcapi.names import is_valid_cluster_id

_CLUSTER_SET_CLAIMS = (WELL_KNOWN_CLAIM_CLUSTER_SET, WELL_KNOWN_CLAIM_CLUSTER_SET_V1ALPHA1)


class InvalidClusterSet(PermanentError):
    """The ClusterSet (or its claims) cannot be joined as written; the message says what to fix."""


@dataclass(frozen=True)
class JoinSpec:
    """Who this member is and where its leader is, as the ClusterSet says."""

    namespace: str
    cluster_set_id: str
    cluster_id: str
    leader_cluster_id: str
    server: str
    secret: str
    leader_namespace: str
    legacy: bool = False
    # The ID is the ClusterProperty cluster.clusterset.k8s.io's (someone else wrote it).
    id_from_property: bool = False

    @property
    def identity(self) -> tuple[str, str]:
        """What the hub knows us by: a change of it is leaving one ClusterSet and joining another."""
        return (self.cluster_set_id, self.cluster_id)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.cluster_set_id}"


def claim_name(claim: Obj) -> str:
    """The well-known name a ClusterClaim claims (v1alpha1 ``name`` field, else metadata.name)."""
    field = claim.get("name")
    if isinstance(field, str) and field:
        return field
    return str((claim.get("metadata") or {}).get("name") or "")


def _claim_value(claims: Iterable[Obj], wanted: tuple[str, ...]) -> str | None:
    for claim in claims:
        if claim_name(claim) in wanted:
            value = claim.get("value")
            return value if isinstance(value, str) else ""
    return None


def parse_join_spec(cluster_set: Obj, claims: Iterable[Obj] = (), id_property: str = "") -> JoinSpec:
    """The JoinSpec of a ClusterSet object (as JSON, any served version); InvalidClusterSet when unusable.
    ``id_property``: the value of the ClusterProperty cluster.clusterset.k8s.io when someone other
    than the member wrote it ("" otherwise): it is the cluster ID then."""
    claims = list(claims)
    meta = cluster_set.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "")
    spec = cluster_set.get("spec") or {}
    ref = f"ClusterSet {namespace}/{name}"
    leaders = spec.get("leaders") or []
    if not isinstance(leaders, list) or len(leaders) != 1 or not isinstance(leaders[0], dict):
        raise InvalidClusterSet(f"{ref} must name exactly one leader in spec.leaders")
    leader = leaders[0]
    server = str(leader.get("server") or "")
    secret = str(leader.get("secret") or "")
    leader_id = str(leader.get("clusterID") or "")
    if not server:
        raise InvalidClusterSet(f"{ref}: spec.leaders[0].server (the leader's address) is empty")
    if not secret:
        raise InvalidClusterSet(f"{ref}: spec.leaders[0].secret (the member token Secret) is empty")

    cluster_id = str(spec.get("clusterID") or "")
    legacy = not cluster_id
    if legacy:
        cluster_id = _claim_value(claims, (WELL_KNOWN_CLAIM_ID,)) or _single_member(spec) or ""
    if id_property:
        if not is_valid_cluster_id(id_property):
            raise InvalidClusterSet(
                f"the ClusterProperty {PROPERTY_CLUSTER_ID!r} names this cluster {id_property!r}, which is not a "
                "DNS-1123 label (a cluster ID becomes part of object names)"
            )
        cluster_id = id_property
    if not cluster_id:
        raise InvalidClusterSet(
            f"{ref} has no spec.clusterID, and neither a ClusterProperty {PROPERTY_CLUSTER_ID!r} nor a "
            f"ClusterClaim {WELL_KNOWN_CLAIM_ID!r} names this cluster"
        )
    if not is_valid_cluster_id(cluster_id):
        raise InvalidClusterSet(f"{ref}: cluster ID {cluster_id!r} is not a DNS-1123 label")
    claimed_set = _claim_value(claims, _CLUSTER_SET_CLAIMS)
    if legacy and claimed_set and claimed_set != name:
        raise InvalidClusterSet(
            f"{ref}: the ClusterSet name must be the ClusterSet ID, and ClusterClaim "
            f"{WELL_KNOWN_CLAIM_CLUSTER_SET!r} says {claimed_set!r}"
        )
    return JoinSpec(
        namespace=namespace,
        cluster_set_id=name,
        cluster_id=cluster_id,
        leader_cluster_id=leader_id,
        server=server,
        secret=secret,
        leader_namespace=str(spec.get("namespace") or ""),
        legacy=legacy,
        id_from_property=bool(id_property),
    )


def _single_member(spec: Obj) -> str | None:
    members = spec.get("members")
    if isinstance(members, list) and len(members) == 1 and isinstance(members[0], dict):
        value = members[0].get("clusterID")
        return value if isinstance(value, str) and value else None
    return None

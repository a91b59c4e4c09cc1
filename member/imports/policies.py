"""An AntreaClusterNetworkPolicy import -> the ClusterNetworkPolicy ``antrea-mc-<name>``
(crd.antrea.io), annotated ``multicluster.antrea.io/imported-acnp``.

As in Antrea's member controller: the policy's Tier must exist in this cluster (an
ACNP imported earlier whose Tier disappeared is removed), and a same-named policy
without the annotation is left alone. Without Antrea's CRD the import fails.
"""

from __future__ import annotations

from typing import Any

from kube.errors import NotFound
from kube.resources import Obj, Resource
from mcapi import names
from mcapi.convert import struct_to_dict
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.context import ImportContext
from member.imports.outcome import ImportBlocked, ImportReason
from member.imports.ownership import delete_owned, ensure_owned, is_imported_acnp

ANTREA_CRD_GROUP = "crd.antrea.io"
ACNP_VERSIONS = ("v1beta1", "v1alpha1")
TIER_VERSIONS = ("v1beta1", "v1alpha1")
# Antrea puts a ClusterNetworkPolicy without a tier into its default Tier.
DEFAULT_TIER = "application"
_ACNP_SUFFIX = "-antreaclusternetworkpolicy"


def acnp_resource(version: str) -> Resource:
    return Resource(ANTREA_CRD_GROUP, version, "clusternetworkpolicies", "ClusterNetworkPolicy", False)


def tier_resource(version: str) -> Resource:
    return Resource(ANTREA_CRD_GROUP, version, "tiers", "Tier", False)


async def served_acnp_resource(ctx: ImportContext) -> Resource | None:
    version = await ctx.apis.pick_version(ANTREA_CRD_GROUP, "clusternetworkpolicies", ACNP_VERSIONS)
    return acnp_resource(version) if version else None


def policy_name(message: pb.ResourceImport) -> str:
    """The source policy's name: spec.name, else the import name without its suffix."""
    return message.name or message.import_name.removesuffix(_ACNP_SUFFIX)


async def apply_acnp(ctx: ImportContext, message: pb.ResourceImport) -> None:
    resource = await served_acnp_resource(ctx)
    if resource is None:
        raise ImportBlocked(
            ImportReason.CRD_NOT_INSTALLED, "ClusterNetworkPolicy CRD not installed: is Antrea running?"
        )
    spec: dict[str, Any] = struct_to_dict(message.cluster_network_policy)
    name = names.imported_object_name(policy_name(message))
    tier = str(spec.get("tier") or DEFAULT_TIER)
    if not await _tier_exists(ctx, tier):
        await delete_owned(ctx.client, resource, name, None, is_imported_acnp)
        raise ImportBlocked(
            ImportReason.TIER_NOT_FOUND, f"ACNP Tier {tier} does not exist in the importing cluster {ctx.cluster_id}"
        )
    desired: Obj = {"metadata": {"name": name, "annotations": {names.ANNOTATION_IMPORTED_ACNP: "true"}}, "spec": spec}
    try:
        live = await ctx.client.get(resource, name)
    except NotFound:
        live = None
    if live is not None and is_imported_acnp(live):
        # The imported spec replaces ours whole: top-level fields it no longer has must go.
        for key in (live.get("spec") or {}).keys() - spec.keys():
            spec[key] = None
    await ensure_owned(ctx.client, resource, desired, is_imported_acnp, import_name=message.import_name)


async def _tier_exists(ctx: ImportContext, tier: str) -> bool:
    version = await ctx.apis.pick_version(ANTREA_CRD_GROUP, "tiers", TIER_VERSIONS)
    if version is None:
        return True  # Tiers not served (a trimmed-down install): nothing to check against
    try:
        await ctx.client.get(tier_resource(version), tier)
    except NotFound:
        return False
    return True


async def delete_acnp(ctx: ImportContext, policy: str) -> None:
    resource = await served_acnp_resource(ctx)
    if resource is not None:
        await delete_owned(ctx.client, resource, names.imported_object_name(policy), None, is_imported_acnp)

"""An AntreaClusterNetworkPolicy import -> the ClusterNetworkPolicy ``antrea-mc-<name>``
(crd.antrea.io), annotated ``multicluster.antrea.io/imported-acnp``.

As in Antrea's member controller: the policy's Tier must exist in this cluster (an
ACNP imported earlier whose Tier disappeared is removed), and a same-named policy
without the annotation is left alone. Without Antrea's CRD the import fails.

Which Tiers exist comes from a watch of them (``ImportCaches.tiers``), not from a read
per import; when a Tier is created or deleted the importer looks again at exactly the desired
imports whose policy names it (``policy_tier``). A cluster that does not serve Tiers at all is
not checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.protobuf.struct_pb2 import Struct

from kube.resources import Obj, Resource
from mcapi import names
from mcapi.convert import struct_to_dict
from mcapi.crds.antrea_policy import ANTREA_CRD_GROUP, DEFAULT_TIER
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.objects import IMPORTED_POLICIES
from member.imports.outcome import ImportBlocked, ImportReason
from member.imports.ownership import LABEL_IMPORTED_ACNP

if TYPE_CHECKING:
    from member.imports.context import ImportContext

TIER_VERSIONS = ("v1beta1", "v1alpha1")
# Antrea puts a ClusterNetworkPolicy without a tier into its default Tier.
_ACNP_SUFFIX = "-antreaclusternetworkpolicy"


def tier_resource(version: str) -> Resource:
    return Resource(ANTREA_CRD_GROUP, version, "tiers", "Tier", False)


def tier_of(spec: Struct) -> str:
    """The Tier a policy spec names, Antrea's default when it names none (or an empty one). Read
    from the wire without converting the whole spec (a policy may be megabytes)."""
    return str(spec["tier"] or DEFAULT_TIER) if "tier" in spec else DEFAULT_TIER


def policy_tier(message: pb.ResourceImport) -> str | None:
    """The Tier an ACNP import's policy goes in; None for an import of another kind."""
    if message.WhichOneof("payload") != "cluster_network_policy":
        return None
    return tier_of(message.cluster_network_policy)


def policy_name(message: pb.ResourceImport) -> str:
    """The source policy's name: spec.name, else the import name without its suffix."""
    return message.name or message.import_name.removesuffix(_ACNP_SUFFIX)


async def apply_acnp(ctx: ImportContext, message: pb.ResourceImport) -> None:
    policies = await ctx.watched(IMPORTED_POLICIES)
    if policies is None:
        raise ImportBlocked(
            ImportReason.CRD_NOT_INSTALLED, "ClusterNetworkPolicy CRD not installed: is Antrea running?"
        )
    spec: dict[str, Any] = struct_to_dict(message.cluster_network_policy)
    name = names.imported_object_name(policy_name(message))
    tier = tier_of(message.cluster_network_policy)
    if not await _tier_exists(ctx, tier):
        await ctx.writer.delete_all(policies, message.import_name)
        raise ImportBlocked(
            ImportReason.TIER_NOT_FOUND, f"ACNP Tier {tier} does not exist in the importing cluster {ctx.cluster_id}"
        )
    desired: Obj = {
        "metadata": {
            "name": name,
            "annotations": {names.ANNOTATION_IMPORTED_ACNP: "true"},
            "labels": {LABEL_IMPORTED_ACNP: "true"},
        },
        "spec": spec,
    }
    live = policies.get(name)
    if live is not None and policies.owns(live):
        # The imported spec replaces ours whole: top-level fields it no longer has must go.
        for key in (live.get("spec") or {}).keys() - spec.keys():
            spec[key] = None
    await ctx.writer.ensure(policies, desired, import_name=message.import_name)


async def _tier_exists(ctx: ImportContext, tier: str) -> bool:
    version = await ctx.apis.pick_version(ANTREA_CRD_GROUP, "tiers", TIER_VERSIONS)
    tiers = await ctx.watched_if_served(ctx.caches.tiers(tier_resource(version))) if version else None
    if tiers is None:
        return True  # Tiers not served (a trimmed-down install, or their CRD went): nothing to check against
    return tiers.get(tier) is not None

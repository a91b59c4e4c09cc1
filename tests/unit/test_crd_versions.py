"""CRDs with several versions convert with strategy None, so the storage version's schema must
keep every field of every served version, or the apiserver prunes it (real servers do)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from mcapi import crds
from mcapi.crds.crd import build_crd, group_versions, pruned_fields
from mcapi.crds.openapi import structural_schema


class _Old(crds.KubeObject):
    GROUP: ClassVar[str] = "example.io"
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "Thing"
    PLURAL: ClassVar[str] = "things"
    NAMESPACED: ClassVar[bool] = True
    STORAGE: ClassVar[bool] = False

    name: str = ""
    value: str = ""


class _New(crds.KubeObject):
    GROUP: ClassVar[str] = "example.io"
    VERSION: ClassVar[str] = "v1alpha2"
    KIND: ClassVar[str] = "Thing"
    PLURAL: ClassVar[str] = "things"
    NAMESPACED: ClassVar[bool] = True

    value: str = ""


def test_a_storage_version_that_would_prune_a_served_versions_field_is_refused() -> None:
    assert pruned_fields(structural_schema(_New), structural_schema(_Old)) == [".name"]
    with pytest.raises(ValueError, match=r"storage version v1alpha2 would prune \.name of v1alpha1 objects"):
        build_crd([_Old, _New])


@pytest.mark.parametrize("versions", [v for v in group_versions() if len(v) > 1], ids=lambda v: v[0].PLURAL)
def test_every_storage_schema_keeps_the_fields_of_every_served_version(versions: list[type[crds.KubeObject]]) -> None:
    storage = structural_schema(next(m for m in versions if m.STORAGE))
    for model in versions:
        assert pruned_fields(storage, structural_schema(model)) == [], model.__name__


def test_the_legacy_clusterset_and_claim_fields_survive_both_ways() -> None:
    """v1alpha1 objects keep members[], serviceAccount and the claim's name in storage; a
    v1alpha2 ClusterSet written back through v1alpha1 keeps clusterID."""
    pairs = ((crds.ClusterSetV1alpha1, crds.ClusterSet), (crds.ClusterClaimV1alpha1, crds.ClusterClaim))
    for old, new in pairs:
        assert pruned_fields(structural_schema(old), structural_schema(new)) == []
        assert pruned_fields(structural_schema(new), structural_schema(old)) == []

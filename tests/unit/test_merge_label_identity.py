"""LabelIdentity: deduplicated across clusters, with IDs stable for the identity's life."""

from __future__ import annotations

import pytest

from hub.merge import LabelIdentityExhausted, MergeConfig, MergeContext, merge_group
from hub.merge import label_identity as label_identity_module
from hub.merge.label_identity import allocate_label_id
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit.test_merge_builders import CTX, label_export

LABEL = "ns:kubernetes.io/metadata.name=demo&pod:app=web"
IMPORT = names.label_identity_import_name(LABEL)


def _ctx(used: set[int]) -> MergeContext:
    return MergeContext(config=MergeConfig(), used_label_ids=frozenset(used))


def test_exports_of_one_label_from_many_clusters_make_one_identity() -> None:
    exports = [label_export("east", LABEL), label_export("west", LABEL)]
    result = merge_group(exports, {}, CTX)
    assert list(result.imports) == [IMPORT]
    assert result.imports[IMPORT].label_identity == pb.LabelIdentity(label=LABEL, id=1)
    assert {s.verdict for s in result.statuses.values()} == {pb.VERDICT_ACCEPTED}
    assert len(result.statuses) == 2


def test_a_new_identity_gets_the_lowest_id_not_held_elsewhere() -> None:
    result = merge_group([label_export("east", LABEL)], {}, _ctx({1, 2, 4}))
    assert result.imports[IMPORT].label_identity.id == 3


def test_an_identity_keeps_its_previous_id_even_when_a_lower_one_is_free() -> None:
    previous = {IMPORT: pb.ResourceImport(import_name=IMPORT, label_identity=pb.LabelIdentity(label=LABEL, id=7))}
    result = merge_group([label_export("west", LABEL)], previous, _ctx({2}))
    assert result.imports[IMPORT].label_identity.id == 7


def test_a_previous_id_now_held_by_another_identity_is_reallocated_to_stay_unique() -> None:
    previous = {IMPORT: pb.ResourceImport(import_name=IMPORT, label_identity=pb.LabelIdentity(label=LABEL, id=7))}
    result = merge_group([label_export("west", LABEL)], previous, _ctx({7}))
    assert result.imports[IMPORT].label_identity.id == 1


def test_the_identity_goes_when_its_last_exporter_goes() -> None:
    previous = {IMPORT: pb.ResourceImport(import_name=IMPORT, label_identity=pb.LabelIdentity(label=LABEL, id=7))}
    result = merge_group([], previous, CTX)
    assert result.imports == {}


def test_allocation_fails_with_a_typed_error_when_every_id_is_held() -> None:
    with pytest.raises(LabelIdentityExhausted):
        allocate_label_id({1, 2, 3}, label=LABEL, max_id=3)
    assert allocate_label_id({1, 3}, label=LABEL, max_id=3) == 2


def test_merging_a_new_label_when_the_range_is_full_raises_label_identity_exhausted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A full range of 16777214 IDs is too big for a unit test; shrink it.
    monkeypatch.setattr(label_identity_module, "MAX_LABEL_ID", 4)
    with pytest.raises(LabelIdentityExhausted):
        merge_group([label_export("east", LABEL)], {}, _ctx({1, 2, 3, 4}))


def test_ids_held_outside_the_range_do_not_block_allocation() -> None:
    assert allocate_label_id({0, 1, 99999999}, label=LABEL, max_id=5) == 2

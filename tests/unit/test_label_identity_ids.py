"""Label identity IDs under churn: distinct, and kept while the label is exported."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hub.engine.index import Index
from hub.merge import MergeConfig, MergeContext
from hub.merge.regroup import regroup
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb


def label(n: int) -> str:
    return f"ns:kubernetes.io/metadata.name=demo&pod:app=a{n}"


def export(cluster: str, n: int) -> pb.ResourceExport:
    text = label(n)
    return pb.ResourceExport(
        export_name=names.label_identity_export_name(cluster, text),
        cluster_id=cluster,
        label_identity=pb.LabelIdentityExport(normalized_label=text),
    )


def ids(index: Index) -> dict[str, int]:
    return {
        imp.label_identity.label: imp.label_identity.id
        for imp in index.imports.values()
        if imp.WhichOneof("payload") == "label_identity"
    }


def apply(index: Index, *, put: list[pb.ResourceExport], deleted: set[str]) -> None:
    index.apply(regroup(index, MergeContext(config=MergeConfig()), deleted=deleted, put=put))


def test_new_labels_written_in_one_batch_get_distinct_ids() -> None:
    """A sync bracket (or upserts sharing one write) brings many new labels at once."""
    index = Index()
    apply(index, put=[export("east", n) for n in range(50)], deleted=set())
    assert sorted(ids(index).values()) == list(range(1, 51))


batches = st.lists(
    st.tuples(
        st.lists(st.tuples(st.sampled_from(["east", "west"]), st.integers(0, 12)), max_size=8),
        st.lists(st.tuples(st.sampled_from(["east", "west"]), st.integers(0, 12)), max_size=8),
    ),
    max_size=15,
)


@settings(max_examples=200)
@given(batches)
def test_ids_stay_distinct_and_stable_while_any_cluster_exports_the_label(
    steps: list[tuple[list[tuple[str, int]], list[tuple[str, int]]]],
) -> None:
    index = Index()
    for puts, deletes in steps:
        before = ids(index)
        put = {export(c, n).export_name: export(c, n) for c, n in puts}
        deleted = {export(c, n).export_name for c, n in deletes} - set(put)
        apply(index, put=list(put.values()), deleted=deleted)
        after = ids(index)
        assert len(set(after.values())) == len(after), after
        assert all(after[text] == before[text] for text in after.keys() & before.keys())
        exported = {e.label_identity.normalized_label for e in index.exports.values()}
        assert set(after) == exported

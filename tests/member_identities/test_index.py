"""The identity index (pure): counts per normalized label, and only labels that crossed zero."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcapi.labels import normalized_label
from member.identities.index import IdentityIndex


def ns(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}}}


def pod(namespace: str, name: str, deleting: bool = False, **labels: str) -> dict[str, Any]:
    return pod_with(namespace, name, labels, deleting=deleting)


def pod_with(namespace: str, name: str, labels: dict[str, str], *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": namespace, "name": name, "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_a_pod_before_its_namespace_counts_once_the_namespace_arrives() -> None:
    index = IdentityIndex()
    assert index.set_pod(pod("demo", "a", app="web")) == set()
    label = "ns:kubernetes.io/metadata.name=demo&pod:app=web"
    assert index.set_namespace(ns("demo")) == {label}
    assert index.count(label) == 1


def test_only_the_first_and_the_last_pod_of_a_label_change_anything() -> None:
    index = IdentityIndex()
    index.set_namespace(ns("demo"))
    label = "ns:kubernetes.io/metadata.name=demo&pod:app=web"
    assert index.set_pod(pod("demo", "a", app="web")) == {label}
    assert index.set_pod(pod("demo", "b", app="web")) == set()
    assert index.set_pod(pod("demo", "b", app="web")) == set()  # a status update
    assert index.remove_pod(("demo", "a")) == set()
    assert index.remove_pod(("demo", "b")) == {label}
    assert index.labels() == set()


def test_a_pod_relabelled_moves_between_labels() -> None:
    index = IdentityIndex()
    index.set_namespace(ns("demo"))
    index.set_pod(pod("demo", "a", app="web"))
    index.set_pod(pod("demo", "b", app="web"))
    moved = index.set_pod(pod("demo", "a", app="db"))
    assert moved == {"ns:kubernetes.io/metadata.name=demo&pod:app=db"}
    assert index.count("ns:kubernetes.io/metadata.name=demo&pod:app=web") == 1


def test_a_pod_being_deleted_does_not_count() -> None:
    index = IdentityIndex()
    index.set_namespace(ns("demo"))
    index.set_pod(pod("demo", "a", app="web"))
    assert index.set_pod(pod("demo", "a", deleting=True, app="web")) == {
        "ns:kubernetes.io/metadata.name=demo&pod:app=web"
    }
    assert len(index) == 0


def test_a_namespace_relabel_swaps_every_label_of_its_pods() -> None:
    index = IdentityIndex()
    index.set_namespace(ns("demo", stage="dev"))
    index.set_pod(pod("demo", "a", app="x"))
    index.set_pod(pod("demo", "b", app="y"))
    index.set_pod(pod("other", "c", app="x"))
    index.set_namespace(ns("other"))
    changed = index.set_namespace(ns("demo", stage="prod"))
    dev = {f"ns:kubernetes.io/metadata.name=demo,stage=dev&pod:app={a}" for a in "xy"}
    prod = {f"ns:kubernetes.io/metadata.name=demo,stage=prod&pod:app={a}" for a in "xy"}
    assert changed == dev | prod
    assert index.labels() == prod | {"ns:kubernetes.io/metadata.name=other&pod:app=x"}
    assert index.remove_namespace("demo") == prod


def test_a_namespace_without_its_name_label_gets_it_as_antrea_adds_it() -> None:
    index = IdentityIndex()
    index.set_namespace({"metadata": {"name": "old", "labels": {"team": "a"}}})
    assert index.set_pod(pod("old", "p")) == {"ns:kubernetes.io/metadata.name=old,team=a&pod:<none>"}


keys = st.sampled_from(["app", "tier", "app.kubernetes.io/name", "a-b", "a"])
values = st.sampled_from(["", "web", "db", "x"])
label_sets = st.dictionaries(keys, values, max_size=3)
operations = st.lists(
    st.tuples(st.sampled_from(["pod", "delete", "ns"]), st.sampled_from(["n1", "n2"]), st.integers(0, 4), label_sets),
    max_size=40,
)


@settings(max_examples=200)
@given(operations)
def test_the_counts_always_equal_a_count_from_scratch_and_changes_are_what_crossed_zero(
    ops: list[tuple[str, str, int, dict[str, str]]],
) -> None:
    index = IdentityIndex()
    namespaces: dict[str, dict[str, str]] = {}
    pods: dict[tuple[str, str], dict[str, str]] = {}
    for op, namespace, number, labels in ops:
        before = index.labels()
        if op == "pod":
            pods[(namespace, f"p{number}")] = labels
            changed = index.set_pod(pod_with(namespace, f"p{number}", labels))
        elif op == "delete":
            pods.pop((namespace, f"p{number}"), None)
            changed = index.remove_pod((namespace, f"p{number}"))
        else:
            namespaces[namespace] = labels
            changed = index.set_namespace({"metadata": {"name": namespace, "labels": labels}})
        assert changed == before ^ index.labels()  # exactly the labels that appeared or went
    expected: dict[str, int] = {}
    for (namespace, _), labels in pods.items():
        if namespace in namespaces:
            label = normalized_label(namespace, namespaces[namespace], labels)
            expected[label] = expected.get(label, 0) + 1
    assert index.labels() == set(expected)
    assert all(index.count(label) == n for label, n in expected.items())

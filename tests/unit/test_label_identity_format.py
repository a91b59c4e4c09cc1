"""The normalized label of a LabelIdentity export: only the form Antrea members produce.

Antrea's member writes `"ns:" + labels.FormatLabels(nsLabels) + "&pod:" +
labels.FormatLabels(podLabels)`, having added `kubernetes.io/metadata.name=<ns>`
to the Namespace's labels; FormatLabels sorts the `key=value` pairs as strings
and writes an empty set as `<none>`. `antrea_label` below is that code, the
oracle of the property tests.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.merge import validate_export
from hub.merge.label_format import MAX_NORMALIZED_LABEL_BYTES, normalized_label_problems
from tests.unit.test_merge_builders import label_export

NAMESPACE_NAME = "kubernetes.io/metadata.name"


def format_labels(labels: Mapping[str, str]) -> str:
    """k8s.io/apimachinery labels.FormatLabels: pairs sorted as strings, `<none>` when empty."""
    return ",".join(sorted(f"{key}={value}" for key, value in labels.items())) or "<none>"


def antrea_label(namespace: str, ns_labels: Mapping[str, str], pod_labels: Mapping[str, str]) -> str:
    with_name = {NAMESPACE_NAME: namespace, **{k: v for k, v in ns_labels.items() if k != NAMESPACE_NAME}}
    return "ns:" + format_labels(with_name) + "&pod:" + format_labels(pod_labels)


dns_label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?\Z")
name_part = st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?\Z")
prefix = st.lists(dns_label, min_size=1, max_size=3).map(".".join)
label_key = st.one_of(name_part, st.tuples(prefix, name_part).map("/".join))
label_value = st.one_of(st.just(""), name_part)
label_sets = st.dictionaries(label_key, label_value, max_size=8)


@pytest.mark.parametrize(
    "label",
    [
        "ns:kubernetes.io/metadata.name=demo&pod:app=web",
        "ns:kubernetes.io/metadata.name=demo&pod:<none>",
        "ns:kubernetes.io/metadata.name=kube-system,team=&pod:app.kubernetes.io/name=db,tier=Back_end.1",
        # Pairs sort as "key=value" strings: "a-b=1" before "a=1" ('-' < '=').
        "ns:kubernetes.io/metadata.name=x&pod:a-b=1,a=1",
        "ns:" + "k" * 63 + "=" + "v" * 63 + ",kubernetes.io/metadata.name=x&pod:<none>",
    ],
)
def test_labels_in_the_form_members_produce_are_valid(label: str) -> None:
    assert normalized_label_problems(label) == []


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("kubernetes.io/metadata.name=demo&pod:app=web", "ns:"),
        ("namespace:kubernetes.io/metadata.name=demo&pod:app=web", "ns:"),
        ("ns:kubernetes.io/metadata.name=demo", "&pod:"),
        ("ns:kubernetes.io/metadata.name=demo&pod:", "empty"),
        ("ns:&pod:app=web", "empty"),
        ("ns:<none>&pod:app=web", NAMESPACE_NAME),
        ("ns:team=a&pod:app=web", NAMESPACE_NAME),
        ("ns:kubernetes.io/metadata.name=Demo&pod:<none>", "Namespace name"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=web,app=db", "more than once"),
        ("ns:kubernetes.io/metadata.name=demo&pod:tier=db,app=web", "sorted"),
        ("ns:kubernetes.io/metadata.name=x&pod:a=1,a-b=1", "sorted"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app", "'='"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=web,", "'='"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=web=x", "value"),
        ("ns:kubernetes.io/metadata.name=demo&pod: app=web", "key"),
        ("ns:kubernetes.io/metadata.name=demo&pod:-app=web", "key"),
        ("ns:kubernetes.io/metadata.name=demo&pod:=web", "key"),
        ("ns:kubernetes.io/metadata.name=demo&pod:" + "k" * 64 + "=v", "key"),
        ("ns:kubernetes.io/metadata.name=demo&pod:Example.com/app=v", "prefix"),
        ("ns:kubernetes.io/metadata.name=demo&pod:/app=v", "prefix"),
        ("ns:kubernetes.io/metadata.name=demo&pod:a/b/c=v", "key"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=" + "v" * 64, "value"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=web-", "value"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=w b", "value"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=web&pod:x=y", "value"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=wéb", "value"),
        ("ns:kubernetes.io/metadata.name=demo&pod:app=" + "w" * MAX_NORMALIZED_LABEL_BYTES, "bytes"),
    ],
)
def test_anything_else_is_refused_in_a_sentence(label: str, expected: str) -> None:
    problems = normalized_label_problems(label)
    assert problems, f"{label!r} was accepted"
    assert any(expected in p for p in problems), problems
    assert all(p.endswith(".") for p in problems)


def test_validate_export_refuses_a_label_identity_export_with_a_malformed_label() -> None:
    assert validate_export(label_export("east", "ns:kubernetes.io/metadata.name=demo&pod:app=web")) == []
    problems = validate_export(label_export("east", "app=web"))
    assert any("ns:" in p for p in problems), problems


def test_the_size_bound_holds_a_large_realistic_label_set() -> None:
    """Twenty maximal pairs a side (prefix 63, name 63, value 63) fit under the bound."""
    pairs = {f"{'p' * 60}{i:03d}.example.com/{'n' * 63}": "v" * 63 for i in range(20)}
    label = antrea_label("demo", pairs, pairs)
    assert len(label) < MAX_NORMALIZED_LABEL_BYTES
    assert normalized_label_problems(label) == []


@settings(max_examples=150)
@given(dns_label, label_sets, label_sets)
def test_every_label_an_antrea_member_produces_is_valid(
    namespace: str, ns_labels: dict[str, str], pod_labels: dict[str, str]
) -> None:
    assert normalized_label_problems(antrea_label(namespace, ns_labels, pod_labels)) == []


@settings(max_examples=150)
@given(dns_label, label_sets, st.dictionaries(label_key, label_value, min_size=2, max_size=8))
def test_pairs_in_another_order_are_refused(namespace: str, ns_labels: dict[str, str], pod: dict[str, str]) -> None:
    ordered = format_labels(pod)
    shuffled = ",".join(reversed(ordered.split(",")))
    label = antrea_label(namespace, ns_labels, {}).removesuffix("<none>") + shuffled
    assert normalized_label_problems(label) != []


@settings(max_examples=150)
@given(dns_label, label_sets, label_sets, st.sampled_from(" &;:\n\t\"'*"), st.integers(min_value=0))
def test_a_character_outside_the_syntax_anywhere_is_refused(
    namespace: str, ns_labels: dict[str, str], pod_labels: dict[str, str], intruder: str, where: int
) -> None:
    label = antrea_label(namespace, ns_labels, pod_labels)
    at = where % (len(label) + 1)
    spoiled = label[:at] + intruder + label[at:]
    assert normalized_label_problems(spoiled) != [], spoiled


@given(st.text(max_size=300))
def test_any_text_gets_an_answer_of_bounded_size(text: str) -> None:
    problems = normalized_label_problems(text)
    assert all(len(p.encode()) < 1024 for p in problems)

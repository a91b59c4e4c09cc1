"""mcapi.labels: the member's normalized label is Antrea's, and the hub accepts every one."""

from __future__ import annotations

from hypothesis import given, settings

from hub.merge.label_format import normalized_label_problems
from mcapi.labels import format_labels, normalized_label, parse_labels, parse_normalized_label
from tests.unit.test_label_identity_format import antrea_label, dns_label, label_sets


def test_format_labels_is_kubernetes_format_labels() -> None:
    assert format_labels({}) == "<none>"
    assert format_labels({"tier": "db", "app": "web"}) == "app=web,tier=db"
    # Sorted as "key=value" strings, as Go sorts them: '-' (0x2d) before '=' (0x3d).
    assert format_labels({"a": "1", "a-b": "1"}) == "a-b=1,a=1"
    assert format_labels({"team": ""}) == "team="


def test_the_namespace_name_label_is_added_when_missing_and_kept_when_present() -> None:
    assert normalized_label("demo", {}, {"app": "web"}) == "ns:kubernetes.io/metadata.name=demo&pod:app=web"
    assert (
        normalized_label("demo", {"kubernetes.io/metadata.name": "demo", "z": "1"}, {})
        == "ns:kubernetes.io/metadata.name=demo,z=1&pod:<none>"
    )


def test_a_namespace_name_label_already_there_is_kept_as_antrea_keeps_it() -> None:
    # Antrea's GetNormalizedLabel adds kubernetes.io/metadata.name only when the Namespace's
    # labels lack it; the member and the agent both write the label this way (mcapi.labels).
    labels = {"kubernetes.io/metadata.name": "renamed"}
    assert normalized_label("demo", labels, {}) == "ns:kubernetes.io/metadata.name=renamed&pod:<none>"
    assert labels == {"kubernetes.io/metadata.name": "renamed"}  # the caller's labels are not changed


def test_a_normalized_label_parses_back_to_its_two_label_sets() -> None:
    label = normalized_label("demo", {"env": "prod"}, {"app": "web", "tier": ""})
    assert parse_normalized_label(label) == (
        {"env": "prod", "kubernetes.io/metadata.name": "demo"},
        {"app": "web", "tier": ""},
    )
    assert parse_normalized_label(normalized_label("demo", {}, {})) == ({"kubernetes.io/metadata.name": "demo"}, {})
    assert parse_normalized_label("ns:<none>&pod:<none>") is None  # no Namespace name
    assert parse_normalized_label("ns:kubernetes.io/metadata.name=a&pod:x") is None  # a pair without '='
    assert parse_normalized_label("pod:app=web") is None
    assert parse_labels("a=1,a=2") is None


@settings(max_examples=300)
@given(dns_label, label_sets, label_sets)
def test_every_label_a_member_makes_is_antreas_and_the_hub_accepts_it(
    namespace: str, ns_labels: dict[str, str], pod_labels: dict[str, str]
) -> None:
    ns_labels = {k: v for k, v in ns_labels.items() if k != "kubernetes.io/metadata.name"}
    label = normalized_label(namespace, ns_labels, pod_labels)
    assert label == antrea_label(namespace, ns_labels, pod_labels)
    assert normalized_label_problems(label) == []

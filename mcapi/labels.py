"""Label sets as Kubernetes prints them, and Antrea's normalized label of a Pod.

A member names each (Namespace labels, Pod labels) pair among its Pods by one string,
``ns:<namespace labels>&pod:<pod labels>`` (Antrea's ``GetNormalizedLabel``), each side
written as Kubernetes' ``labels.FormatLabels`` writes a label set: the ``key=value``
strings sorted (Go sorts strings bytewise; label keys and values are ASCII, so Python's
order is the same), joined by ``,``, and ``<none>`` for an empty set. The Namespace side
always holds ``kubernetes.io/metadata.name``: the API server sets it on every Namespace,
and Antrea adds it (as the Namespace's name) where it is missing, so we do too.

This module is the one definition of that form: the member writes it, the agent writes it
for its own Pods and reads it back from the imported LabelIdentities (``parse_normalized_label``).
The hub checks what members send more strictly (hub/merge/label_format.py: label syntax,
order, size), with a typed refusal for every problem.
"""

from __future__ import annotations

from collections.abc import Mapping

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
EMPTY_LABEL_SET = "<none>"
_NS_PREFIX = "ns:"
_POD_SEPARATOR = "&pod:"


def format_labels(labels: Mapping[str, str]) -> str:
    """k8s.io/apimachinery ``labels.FormatLabels``: sorted ``key=value``, ``<none>`` when empty."""
    return ",".join(sorted(f"{key}={value}" for key, value in labels.items())) or EMPTY_LABEL_SET


def namespace_label_set(namespace: str, labels: Mapping[str, str] | None) -> dict[str, str]:
    """A Namespace's labels with ``kubernetes.io/metadata.name`` added when missing (as Antrea)."""
    with_name = dict(labels or {})
    with_name.setdefault(NAMESPACE_NAME_LABEL, namespace)
    return with_name


def format_namespace_labels(namespace: str, labels: Mapping[str, str] | None) -> str:
    """The Namespace side of a normalized label, formatted once per Namespace and reused per Pod."""
    return format_labels(namespace_label_set(namespace, labels))


def join_normalized_label(formatted_namespace_labels: str, formatted_pod_labels: str) -> str:
    return f"ns:{formatted_namespace_labels}&pod:{formatted_pod_labels}"


def normalized_label(namespace: str, namespace_labels: Mapping[str, str] | None, pod_labels: Mapping[str, str]) -> str:
    """The label identity of a Pod of ``namespace``: ``ns:<...>&pod:<...>``."""
    return join_normalized_label(format_namespace_labels(namespace, namespace_labels), format_labels(pod_labels))


def parse_normalized_label(label: str) -> tuple[dict[str, str], dict[str, str]] | None:
    """(namespace labels, pod labels) of a normalized label; None if it is not in that form
    (the Namespace side must hold ``kubernetes.io/metadata.name``)."""
    if not label.startswith(_NS_PREFIX) or _POD_SEPARATOR not in label:
        return None
    ns_part, pod_part = label.removeprefix(_NS_PREFIX).split(_POD_SEPARATOR, 1)
    ns_labels, pod_labels = parse_labels(ns_part), parse_labels(pod_part)
    if ns_labels is None or pod_labels is None or NAMESPACE_NAME_LABEL not in ns_labels:
        return None
    return ns_labels, pod_labels


def parse_labels(text: str) -> dict[str, str] | None:
    """The label set ``format_labels`` wrote; None when a pair has no ``=``, no key, or a repeated key."""
    if text == EMPTY_LABEL_SET:
        return {}
    found: dict[str, str] = {}
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if not sep or not key or key in found:
            return None
        found[key] = value
    return found

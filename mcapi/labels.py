"""Label sets as Kubernetes prints them, and Antrea's normalized label of a Pod.

A member names each (Namespace labels, Pod labels) pair among its Pods by one string,
``ns:<namespace labels>&pod:<pod labels>`` (Antrea's ``GetNormalizedLabel``), each side
written as Kubernetes' ``labels.FormatLabels`` writes a label set: the ``key=value``
strings sorted (Go sorts strings bytewise; label keys and values are ASCII, so Python's
order is the same), joined by ``,``, and ``<none>`` for an empty set. The Namespace side
always holds ``kubernetes.io/metadata.name``: the API server sets it on every Namespace,
and Antrea adds it (as the Namespace's name) where it is missing, so we do too.

The hub accepts exactly this form (hub/merge/label_format.py checks it on its own, so the
two sides do not share code); the agent reads it back from the imported LabelIdentities.
"""

from __future__ import annotations

from collections.abc import Mapping

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
EMPTY_LABEL_SET = "<none>"


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

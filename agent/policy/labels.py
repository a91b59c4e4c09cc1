"""Label selectors and label identities, as Kubernetes and Antrea define them. Pure.

A label identity is Antrea's normalized label of a Pod, ``ns:<ns labels>&pod:<pod labels>``
(mcapi.labels writes and parses it, for the member and the agent alike). The member exports
one per distinct pair, the hub gives it a 24-bit ID, and every member holds the imported
LabelIdentity CRs (label -> ID).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcapi.labels import NAMESPACE_NAME_LABEL, parse_normalized_label

Labels = Mapping[str, str]


class SelectorError(ValueError):
    """A label selector the agent cannot evaluate (unknown operator, bad shape)."""


@dataclass(frozen=True)
class LabelIdentity:
    """One imported LabelIdentity: its ID and the two label sets its label names."""

    id: int
    namespace_labels: tuple[tuple[str, str], ...]
    pod_labels: tuple[tuple[str, str], ...]

    @property
    def namespace(self) -> str:
        return dict(self.namespace_labels).get(NAMESPACE_NAME_LABEL, "")


def identity_from_label(identity_id: int, label: str) -> LabelIdentity | None:
    parsed = parse_normalized_label(label)
    if parsed is None:
        return None
    ns_labels, pod_labels = parsed
    return LabelIdentity(identity_id, tuple(sorted(ns_labels.items())), tuple(sorted(pod_labels.items())))


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Labels) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist


@dataclass(frozen=True)
class Selector:
    """A metav1.LabelSelector: every requirement must hold; no requirement selects all."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Labels) -> bool:
        return all(r.matches(labels) for r in self.requirements)


MATCH_ALL = Selector()
_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}


def parse_selector(raw: Any, where: str) -> Selector:
    """metav1.LabelSelector from its JSON form; SelectorError naming ``where`` otherwise."""
    if raw is None:
        return MATCH_ALL
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{where}: a label selector must be an object")
    unknown = sorted(set(raw) - {"matchLabels", "matchExpressions"})
    if unknown:
        raise SelectorError(f"{where}: unknown field(s) {', '.join(unknown)}")
    requirements: list[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"{where}.matchLabels: must be an object")
    for key, value in sorted(match_labels.items()):
        requirements.append(Requirement(str(key), "In", frozenset({str(value)})))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError(f"{where}.matchExpressions: must be a list")
    for index, expression in enumerate(expressions):
        requirements.append(_requirement(expression, f"{where}.matchExpressions[{index}]"))
    return Selector(tuple(requirements))


def _requirement(raw: Any, where: str) -> Requirement:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("key"), str):
        raise SelectorError(f"{where}: must be an object with a key")
    unknown = sorted(set(raw) - {"key", "operator", "values"})
    if unknown:
        raise SelectorError(f"{where}: unknown field(s) {', '.join(unknown)}")
    operator = raw.get("operator")
    if operator not in _OPERATORS:
        raise SelectorError(f"{where}.operator: {operator!r} is not one of {', '.join(sorted(_OPERATORS))}")
    values = raw.get("values") or []
    if not isinstance(values, list):
        raise SelectorError(f"{where}.values: must be a list")
    if operator in {"In", "NotIn"} and not values:
        raise SelectorError(f"{where}.values: must not be empty for {operator}")
    if operator in {"Exists", "DoesNotExist"} and values:
        raise SelectorError(f"{where}.values: must be empty for {operator}")
    return Requirement(raw["key"], str(operator), frozenset(str(v) for v in values))

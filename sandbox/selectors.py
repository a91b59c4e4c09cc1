"""Label and field selectors, parsed from query strings and matched against objects.

Label selectors follow the apiserver syntax (=, ==, !=, in, notin, exists, !exists).
Field selectors support =, == and != on metadata.name, metadata.namespace and the
fields each kind declares selectable; any other field is a 400 worded as the apiserver
words it: "field label not supported: X" for kinds with selectable fields of their own and
custom resources, `"X" is not a known field selector: only "metadata.name", ...` for the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kube.resources import Obj
from sandbox.errors import bad_request

_LABEL_KEY = re.compile(r"^([a-z0-9A-Z.\-]+/)?[A-Za-z0-9]([A-Za-z0-9_.\-]*[A-Za-z0-9])?$")
_SET_OP = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        # "!=" and "notin" match objects without the label, as the apiserver does.
        return not present or value not in self.values


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _check_key(key: str, selector: str) -> str:
    if not _LABEL_KEY.match(key):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r} in selector {selector!r}")
    return key


def parse_label_selector(text: str | None) -> list[Requirement]:
    if not text:
        return []
    requirements: list[Requirement] = []
    for part in _split_top_level(text):
        set_match = _SET_OP.match(part)
        if set_match:
            key, op, raw = set_match.groups()
            values = tuple(v.strip() for v in raw.split(",") if v.strip())
            requirements.append(Requirement(_check_key(key, text), op, values))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            requirements.append(Requirement(_check_key(key.strip(), text), "!=", (value.strip(),)))
        elif "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            requirements.append(Requirement(_check_key(key.strip(), text), "=", (value.strip(),)))
        elif part.startswith("!"):
            requirements.append(Requirement(_check_key(part[1:].strip(), text), "!exists"))
        else:
            requirements.append(Requirement(_check_key(part, text), "exists"))
    return requirements


def labels_match(requirements: list[Requirement], obj: Obj) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(r.matches(labels) for r in requirements)


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    value: str
    negated: bool


def parse_field_selector(
    text: str | None, allowed: tuple[str, ...], *, own_conversion: bool = True
) -> list[FieldRequirement]:
    """own_conversion: the kind converts field labels itself (Pods, Secrets, custom resources...),
    which words a refusal differently from the generic metadata-only kinds."""
    if not text:
        return []
    out: list[FieldRequirement] = []
    for part in _split_top_level(text):
        negated = "!=" in part
        if negated:
            path, value = part.split("!=", 1)
        elif "==" in part:
            path, value = part.split("==", 1)
        elif "=" in part:
            path, value = part.split("=", 1)
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        path = path.strip()
        if path not in ("metadata.name", "metadata.namespace", *allowed):
            if own_conversion:
                raise bad_request(f"field label not supported: {path}")
            raise bad_request(f'"{path}" is not a known field selector: only "metadata.name", "metadata.namespace"')
        out.append(FieldRequirement(path, value.strip(), negated))
    return out


def field_value(obj: Obj, path: str) -> str:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def fields_match(requirements: list[FieldRequirement], obj: Obj, rename: Callable[[str], str] | None = None) -> bool:
    for req in requirements:
        path = rename(req.path) if rename else req.path
        equal = field_value(obj, path) == req.value
        if equal == req.negated:
            return False
    return True

"""Pruning and defaulting of custom resources by their CRD's structural schema.

As a real apiserver does for apiextensions.k8s.io/v1 CRDs: fields the schema does
not declare are dropped (unless x-kubernetes-preserve-unknown-fields), and missing
fields with a `default` get it. Type, enum, pattern and required checks are not
made (a real apiserver answers 422 for those); metadata is never pruned.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.kinds.base import KindBehaviour
from sandbox.resources import Obj

Schema = dict[str, Any]
_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def _apply(value: Any, schema: Schema) -> Any:
    if isinstance(value, dict):
        return _apply_object(value, schema)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_apply(item, schema["items"]) for item in value]
    return value


def _apply_object(value: dict[str, Any], schema: Schema) -> dict[str, Any]:
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    out: dict[str, Any] = {}
    for key, item in value.items():
        if embedded and key in _ROOT_KEEP and key not in properties:
            out[key] = item
        elif key in properties:
            out[key] = _apply(item, properties[key])
        elif isinstance(additional, dict):
            out[key] = _apply(item, additional)
        elif preserve or additional is True or (not properties and schema.get("type") != "object"):
            out[key] = item
    for key, sub in properties.items():
        if key not in out and "default" in sub:
            out[key] = _apply(copy.deepcopy(sub["default"]), sub)
    return out


def prune_and_default(obj: Obj, schema: Schema) -> Obj:
    """The object as the apiserver would store it under this schema (a new dict)."""
    if not schema:
        return obj
    kept = {k: obj[k] for k in _ROOT_KEEP if k in obj}
    body = _apply_object({k: v for k, v in obj.items() if k not in _ROOT_KEEP}, schema)
    return {**kept, **body}


class CustomResourceBehaviour(KindBehaviour):
    """Structural-schema handling for one CRD's objects (the storage version's schema)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema

    def _normalize(self, obj: Obj) -> None:
        normalized = prune_and_default(obj, self.schema)
        obj.clear()
        obj.update(normalized)

    def prepare_create(self, obj: Obj, *, dry_run: bool) -> None:
        self._normalize(obj)

    def prepare_update(self, old: Obj, new: Obj, *, dry_run: bool) -> None:
        self._normalize(new)

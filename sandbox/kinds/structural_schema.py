"""Pruning and defaulting of custom resources by a structural schema, as kube-apiserver does.

Pruning drops fields the schema does not declare (unless x-kubernetes-preserve-unknown-fields),
and nulls where the schema does not allow them (`nullable` not set) - a null with a `default`
gets the default instead. Defaulting fills missing fields that declare a `default`, inside
objects that exist. apiVersion, kind and metadata of the object (and of embedded resources)
are never pruned: ObjectMeta has rules of its own.
"""

from __future__ import annotations

import copy
from typing import Any

from kube.resources import Obj

Schema = dict[str, Any]
_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def _apply(value: Any, schema: Schema, defaults: bool) -> Any:
    if isinstance(value, dict):
        return _apply_object(value, schema, defaults)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_apply(item, schema["items"], defaults) for item in value]
    return value


def _apply_object(value: dict[str, Any], schema: Schema, defaults: bool) -> dict[str, Any]:
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    out: dict[str, Any] = {}
    for key, item in value.items():
        sub = properties.get(key, additional if isinstance(additional, dict) else None)
        if sub is not None:
            if item is None and not sub.get("nullable"):
                continue
            out[key] = _apply(item, sub, defaults)
        elif (embedded and key in _ROOT_KEEP) or preserve or additional is True:
            out[key] = item
        elif not properties and schema.get("type") != "object" and not isinstance(additional, dict):
            # A node that is not an object schema (int-or-string, untyped) keeps what it holds.
            out[key] = item
    if defaults:
        for key, sub in properties.items():
            if key not in out and "default" in sub:
                out[key] = _apply(copy.deepcopy(sub["default"]), sub, defaults)
    return out


def _body_only(obj: Obj, schema: Schema, defaults: bool) -> Obj:
    if not schema:
        return dict(obj)
    kept = {k: obj[k] for k in _ROOT_KEEP if k in obj}
    body = _apply_object({k: v for k, v in obj.items() if k not in _ROOT_KEEP}, schema, defaults)
    return {**kept, **body}


def prune(obj: Obj, schema: Schema) -> Obj:
    """The object without what the schema does not declare or allow (a new dict)."""
    return _body_only(obj, schema, defaults=False)


def prune_and_default(obj: Obj, schema: Schema) -> Obj:
    """Pruned, then missing fields defaulted (a new dict)."""
    return _body_only(obj, schema, defaults=True)

"""From a pydantic model to a structural OpenAPI v3 schema, as a
CustomResourceDefinition needs it, and a rough check of objects against it.

pydantic's JSON schema differs from what the API server accepts: it uses
``$ref``/``$defs``, ``anyOf [X, null]`` for optional fields,
``additionalProperties: false`` for closed objects and titles and defaults
everywhere. ``structural_schema`` rewrites it: refs inlined, optional fields
unwrapped, closed objects left plain (the server prunes unknown fields),
open ones marked ``x-kubernetes-preserve-unknown-fields``, ``int | str``
marked ``x-kubernetes-int-or-string``, no defaults (they would defeat
omitempty), ``metadata`` not described.
"""

from __future__ import annotations

from typing import Any

from mcapi.crds.base import KubeObject

Schema = dict[str, Any]

_DROPPED_KEYS = frozenset({"title", "default", "examples"})
_TYPE_META_DESCRIPTIONS = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object.",
    "kind": "Kind is a string value representing the REST resource this object represents.",
}


class SchemaError(ValueError):
    """A model uses a construct a structural schema cannot express."""


def structural_schema(model: type[KubeObject]) -> Schema:
    """The openAPIV3Schema of one CRD version, derived from its model."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Schema] = raw.pop("$defs", {})
    root = _Rewriter(defs).rewrite(raw, path=model.KIND)
    # Tolerance of foreign (MCS) types applies to spec and status, not to the root.
    root.pop("x-kubernetes-preserve-unknown-fields", None)
    properties: dict[str, Schema] = root.setdefault("properties", {})
    for key, text in _TYPE_META_DESCRIPTIONS.items():
        properties[key] = {"type": "string", "description": text}
    properties["metadata"] = {"type": "object"}
    required = [r for r in root.get("required", []) if r not in ("apiVersion", "kind", "metadata")]
    if required:
        root["required"] = required
    else:
        root.pop("required", None)
    return root


class _Rewriter:
    def __init__(self, defs: dict[str, Schema]) -> None:
        self._defs = defs

    def rewrite(self, node: Schema, path: str) -> Schema:
        node = self._unwrap(node, path)
        out: Schema = {}
        for key, value in node.items():
            if key in _DROPPED_KEYS:
                continue
            if key == "properties":
                # An empty map is dropped: the API server drops it from a CRD it stores, and a
                # rendered CRD that keeps it is "configured" on every kubectl apply, never unchanged.
                if value:
                    out[key] = {name: self.rewrite(sub, f"{path}.{name}") for name, sub in value.items()}
            elif key == "items":
                out[key] = self.rewrite(value, f"{path}[]")
            elif key == "additionalProperties":
                if isinstance(value, dict) and value:
                    out[key] = self.rewrite(value, f"{path}{{}}")
                elif value is True or value == {}:
                    out["x-kubernetes-preserve-unknown-fields"] = True
                # additionalProperties: false is the server's default (pruning).
            elif key == "const":
                out["enum"] = [value]
            elif key == "required":
                out[key] = sorted(value)
            else:
                out[key] = value
        if out.get("x-kubernetes-preserve-unknown-fields") and "properties" not in out:
            out.pop("additionalProperties", None)
        if "properties" in out and "additionalProperties" in out:
            raise SchemaError(f"{path}: an object cannot have both properties and additionalProperties")
        if "type" not in out and not _is_typeless_allowed(out):
            raise SchemaError(f"{path}: no type")
        return out

    def _unwrap(self, node: Schema, path: str) -> Schema:
        """Inline $ref/allOf and drop the null branch of Optional."""
        while True:
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[-1]
                outer = {k: v for k, v in node.items() if k != "$ref"}
                node = {**self._defs[name], **outer}
            elif "allOf" in node and len(node["allOf"]) == 1:
                outer = {k: v for k, v in node.items() if k != "allOf"}
                node = {**node["allOf"][0], **outer}
            elif "anyOf" in node:
                branches = [b for b in node["anyOf"] if b.get("type") != "null"]
                outer = {k: v for k, v in node.items() if k != "anyOf"}
                if len(branches) == 1:
                    node = {**branches[0], **outer}
                elif {b.get("type") for b in branches} == {"integer", "string"}:
                    return {
                        **outer,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "x-kubernetes-int-or-string": True,
                    }
                else:
                    raise SchemaError(f"{path}: a union other than int-or-string")
            else:
                return node


def _is_typeless_allowed(node: Schema) -> bool:
    return bool(node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields"))


def structural_problems(schema: Schema, path: str = "") -> list[str]:
    """Why a schema is not structural (empty when it is): every node has a
    type (bar int-or-string and preserve-unknown ones), no $ref, anyOf only
    for int-or-string, properties never beside additionalProperties."""
    problems: list[str] = []
    if "$ref" in schema:
        problems.append(f"{path}: $ref")
    if "anyOf" in schema and not schema.get("x-kubernetes-int-or-string"):
        problems.append(f"{path}: anyOf")
    if "type" not in schema and not _is_typeless_allowed(schema):
        problems.append(f"{path}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: properties with additionalProperties")
    for name, sub in schema.get("properties", {}).items():
        problems.extend(structural_problems(sub, f"{path}.{name}"))
    if isinstance(schema.get("items"), dict):
        problems.extend(structural_problems(schema["items"], f"{path}[]"))
    if isinstance(schema.get("additionalProperties"), dict):
        problems.extend(structural_problems(schema["additionalProperties"], f"{path}{{}}"))
    return problems


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def validation_errors(schema: Schema, value: Any, path: str = "") -> list[str]:
    """A rough check of a JSON value against a structural schema: types,
    required fields, enums, item-count and integer bounds; unknown fields are
    reported where the schema does not preserve them (the server would prune
    them). Enough for tests and a local API server, not a full validator."""
    if value is None:
        return []
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, int | str) and not isinstance(value, bool)
        return [] if ok else [f"{path}: not an int or string"]
    errors: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        allowed = _JSON_TYPES[expected]
        if not isinstance(value, allowed) or (expected != "boolean" and isinstance(value, bool)):
            return [f"{path}: {type(value).__name__} is not {expected}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, int) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > {schema['maximum']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                errors.extend(validation_errors(schema["items"], item, f"{path}[{i}]"))
    if isinstance(value, dict):
        errors.extend(_object_errors(schema, value, path))
    return errors


def _object_errors(schema: Schema, value: dict[str, Any], path: str) -> list[str]:
    errors = [f"{path}.{name}: required" for name in schema.get("required", []) if name not in value]
    properties: dict[str, Schema] = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    for key, sub in value.items():
        if key in properties:
            errors.extend(validation_errors(properties[key], sub, f"{path}.{key}"))
        elif isinstance(extra, dict):
            errors.extend(validation_errors(extra, sub, f"{path}.{key}"))
        elif properties and not schema.get("x-kubernetes-preserve-unknown-fields"):
            errors.append(f"{path}.{key}: unknown field")
    return errors

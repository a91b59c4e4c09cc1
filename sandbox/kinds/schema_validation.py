"""Validation of custom resources by their structural schema, as kube-apiserver v1.28 does it.

A port of what matters of kube-openapi's schema validator, with its errors turned into
field errors the way apiextensions-apiserver does (same paths, reasons and messages, e.g.
`spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`).
Per schema node the checks run in the validator's order: type (with format), anyOf /
oneOf / allOf / not, string (maxLength, minLength, pattern: first failure only), format,
number (multipleOf, minimum, maximum), array (items, minItems, maxItems), enum, object
(min/maxProperties, additionalProperties, properties, required). The real validator walks
properties in Go map order, so the order of several errors is random there; here it is the
schema's. Not checked: x-kubernetes-validations (CEL rules) and list-type/map-type rules.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sandbox.errors import FieldError
from sandbox.govalues import as_go_number, go_float, go_json, go_number, go_quote, go_value
from sandbox.kinds.schema_formats import checked_format, format_ok

Schema = dict[str, Any]
_MAX_JSON_INTEGER = 2.0**53


def validate(value: Any, schema: Schema, path: str = "") -> list[FieldError]:
    """Every error of value (a decoded JSON document) against schema, the root at path."""
    if not schema:
        return []
    if value is None:
        return _type(value, schema, path) + _enum(value, schema, path)
    errors = _type(value, schema, path) + _schema_combinations(value, schema, path)
    if isinstance(value, str):
        errors += _string(value, schema, path)
    errors += _format(value, schema, path)
    if _is_number(value):
        errors += _number(as_go_number(value), schema, path)
    if isinstance(value, list):
        errors += _array(value, schema, path)
    errors += _enum(value, schema, path)
    if isinstance(value, dict):
        errors += _object(value, schema, path)
    return errors


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _field(path: str) -> str:
    return path[1:] if path.startswith(".") else path


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "integer" if isinstance(as_go_number(value), int) else "number"
    if isinstance(value, list):
        return "array"
    return "object"


def is_json_integer(value: float) -> bool:
    """swag.IsFloat64AJSONInteger: a finite float within 2^53 with no fractional part (to 1e-9)."""
    if not math.isfinite(value) or abs(value) > _MAX_JSON_INTEGER:
        return False
    whole = float(int(value))
    if value == whole:
        return True
    return abs(value - whole) / (abs(value) + abs(whole)) < 1e-9


def _types(schema: Schema) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    return [schema["type"]] if schema.get("type") else []


def _type_error(path: str, expected: str, found: str) -> FieldError:
    detail = f"{path} in body must be of type {expected}: {go_quote(found)}"
    return FieldError(_field(path), detail, go_quote(found), "FieldValueTypeInvalid")


def _type(value: Any, schema: Schema, path: str) -> list[FieldError]:
    types = _types(schema)
    wanted_format = checked_format(schema.get("format") or "")
    if not types and not wanted_format:
        return []
    if value is None:
        if types and "null" not in types and not schema.get("nullable"):
            return [_type_error(path, ",".join(types), "null")]
        return []
    found = _json_type(value)
    float_int = found == "number" and is_json_integer(float(value)) and "integer" in types
    int_float = found == "integer" and "number" in types
    textual = isinstance(value, str | list)
    if not textual and wanted_format:
        data_format = {"integer": "int64", "number": "float64"}.get(found, "")
        if not (found in types or wanted_format == data_format or float_int or int_float):
            return [_type_error(path, wanted_format, data_format)]
    if textual and wanted_format and not ("number" in types or "integer" in types):
        return []
    if types and not (found in types or float_int or int_float):
        return [_type_error(path, ",".join(types), found)]
    return []


def _composite(message: str) -> FieldError:
    """Errors of anyOf/oneOf/allOf/not carry no field path: the apiserver prints `<nil>`."""
    return FieldError("<nil>", message, '""')


def _schema_combinations(value: Any, schema: Schema, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    quoted = go_quote(path)
    if schema.get("anyOf"):
        best: list[FieldError] | None = None
        for option in schema["anyOf"]:
            found = validate(value, option, path)
            if not found:
                best = None
                break
            best = found if best is None else best
        else:
            errors.append(_composite(f"{quoted} must validate at least one schema (anyOf)"))
        errors += best or []
    if schema.get("oneOf"):
        valid, first_failure = 0, None
        for option in schema["oneOf"]:
            found = validate(value, option, path)
            if not found:
                valid, first_failure = valid + 1, None
            elif valid == 0 and first_failure is None:
                first_failure = found
        if valid != 1:
            outcome = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            errors.append(_composite(f"{quoted} must validate one and only one schema (oneOf). {outcome}"))
            errors += first_failure or []
    if schema.get("allOf"):
        valid = 0
        for option in schema["allOf"]:
            found = validate(value, option, path)
            valid += not found
            errors += found
        if valid != len(schema["allOf"]):
            suffix = ". None validated" if valid == 0 else ""
            errors.append(_composite(f"{quoted} must validate all the schemas (allOf){suffix}"))
    if isinstance(schema.get("not"), dict) and not validate(value, schema["not"], path):
        errors.append(_composite(f"{quoted} must not validate the schema (not)"))
    return errors


def _string(value: str, schema: Schema, path: str) -> list[FieldError]:
    if schema.get("maxLength") is not None and len(value) > schema["maxLength"]:
        return [FieldError(_field(path), f"may not be longer than {schema['maxLength']}", kind="FieldValueTooLong")]
    if schema.get("minLength") is not None and len(value) < schema["minLength"]:
        detail = f"{path} in body should be at least {schema['minLength']} chars long"
        return [FieldError(_field(path), detail, go_quote(value))]
    pattern = schema.get("pattern")
    if pattern and not re.search(pattern, value):
        return [FieldError(_field(path), f"{path} in body should match '{pattern}'", go_quote(value))]
    return []


def _format(value: Any, schema: Schema, path: str) -> list[FieldError]:
    wanted = checked_format(schema.get("format") or "")
    if not wanted or isinstance(value, dict | list):
        return []
    text = value if isinstance(value, str) else go_value(value)
    if format_ok(wanted, text):
        return []
    detail = f"{path} in body must be of type {wanted}: {go_quote(text)}"
    return [FieldError(_field(path), detail, go_quote(text), "FieldValueTypeInvalid")]


def _number(value: int | float, schema: Schema, path: str) -> list[FieldError]:
    """Integers are checked against integer-truncated limits, as the validator's native-type path does."""
    errors: list[FieldError] = []
    shown = go_number(value)

    def limit(bound: float) -> tuple[float, str]:
        if isinstance(value, int):
            return int(bound), str(int(bound))
        return float(bound), go_float(float(bound))

    factor = schema.get("multipleOf")
    if factor is not None:
        wanted, text = limit(factor)
        if wanted > 0:
            multiple = value / wanted if wanted >= 1 or isinstance(value, int) else 1 / wanted * value
            exact = value % wanted == 0 if isinstance(value, int) else is_json_integer(multiple)
            if not exact:
                errors.append(FieldError(_field(path), f"{path} in body should be a multiple of {text}", shown))
    if schema.get("minimum") is not None:
        bound, text = limit(schema["minimum"])
        if schema.get("exclusiveMinimum") and value <= bound:
            errors.append(FieldError(_field(path), f"{path} in body should be greater than {text}", shown))
        elif value < bound:
            errors.append(FieldError(_field(path), f"{path} in body should be greater than or equal to {text}", shown))
    if schema.get("maximum") is not None:
        bound, text = limit(schema["maximum"])
        if schema.get("exclusiveMaximum") and value >= bound:
            errors.append(FieldError(_field(path), f"{path} in body should be less than {text}", shown))
        elif value > bound:
            errors.append(FieldError(_field(path), f"{path} in body should be less than or equal to {text}", shown))
    return errors


def _array(value: list[Any], schema: Schema, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            errors += validate(item, items, f"{path}[{index}]")
    if schema.get("minItems") is not None and len(value) < schema["minItems"]:
        detail = f"{path} in body should have at least {schema['minItems']} items"
        errors.append(FieldError(_field(path), detail, str(len(value))))
    if schema.get("maxItems") is not None and len(value) > schema["maxItems"]:
        detail = f"must have at most {schema['maxItems']} items"
        errors.append(FieldError(_field(path), detail, str(len(value)), "FieldValueTooMany"))
    return errors


def _enum_matches(value: Any, allowed: Any) -> bool:
    if isinstance(value, bool) or isinstance(allowed, bool):
        return isinstance(value, bool) and isinstance(allowed, bool) and value == allowed
    if _is_number(value) and _is_number(allowed):
        return float(as_go_number(value)) == float(allowed)
    return bool(value == allowed)


def _enum(value: Any, schema: Schema, path: str) -> list[FieldError]:
    allowed = schema.get("enum")
    if not allowed or any(value is not None and _enum_matches(value, a) for a in allowed):
        return []
    listed = ", ".join(go_quote(a if isinstance(a, str) else go_json(a)) for a in allowed)
    return [FieldError(_field(path), f"supported values: {listed}", go_value(value), "FieldValueNotSupported")]


def _object(value: dict[str, Any], schema: Schema, path: str) -> list[FieldError]:
    count = len(value)
    if schema.get("minProperties") is not None and count < schema["minProperties"]:
        detail = f"{path} in body should have at least {schema['minProperties']} properties"
        return [FieldError(_field(path), detail, str(count))]
    if schema.get("maxProperties") is not None and count > schema["maxProperties"]:
        detail = f"must have at most {schema['maxProperties']} items"
        return [FieldError(_field(path), detail, str(count), "FieldValueTooMany")]
    errors: list[FieldError] = []
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        for key, item in value.items():
            if key not in properties:
                errors += validate(item, additional, _child(path, key))
    for name, sub in properties.items():
        if name in value:
            errors += validate(value[name], sub, _child(path, name))
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(FieldError(_field(f"{path}.{name}"), "", kind="FieldValueRequired"))
    return errors

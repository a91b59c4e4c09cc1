"""JSON values as the apiserver's Go code prints them in error messages.

Field errors show the bad value the way k8s.io/apimachinery's field.Error does: strings
quoted (%q), numbers and booleans plain (%v: floats in Go's shortest form, with an
exponent below 1e-4 and from 1e+06), anything else in Go syntax. JSON numbers decode as
int64 when they fit and as float64 otherwise, as the apiserver's decoder does;
`as_go_number` applies that rule to Python's unbounded ints.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def as_go_number(value: int | float) -> int | float:
    """An int beyond int64 is a float64 to the apiserver (bool is not a number here)."""
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        return float(value)
    return value


def go_quote(text: str) -> str:
    """strconv.Quote: double quotes, Go escapes; printable characters are kept."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\a": "\\a", "\b": "\\b"}
    escapes.update({"\f": "\\f", "\v": "\\v"})
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif not char.isprintable():
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _shortest(value: float) -> tuple[str, str, int]:
    """Sign, the shortest round-tripping digits, and the decimal exponent of the first digit."""
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(str(d) for d in digit_tuple)
    return ("-" if sign else ""), digits, len(digits) + exponent - 1


def _scientific(prefix: str, digits: str, exponent: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{prefix}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _plain(prefix: str, digits: str, exponent: int) -> str:
    point = exponent + 1
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{prefix}{digits}{'0' * (point - len(digits))}"
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def go_float(value: float) -> str:
    """fmt's %v of a float64 (strconv 'g', shortest): exponent form below 1e-4 and from 1e+06."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    prefix, digits, exponent = _shortest(value)
    if exponent < -4 or exponent >= 6:
        return _scientific(prefix, digits, exponent)
    return _plain(prefix, digits, exponent)


def go_json(value: Any) -> str:
    """encoding/json's rendering (floats plain from 1e-6 to 1e21), as enum values are listed."""
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        prefix, digits, exponent = _shortest(value)
        if abs(value) < 1e-6 or abs(value) >= 1e21:
            return _scientific(prefix, digits, exponent).replace("e-0", "e-")
        return _plain(prefix, digits, exponent)
    if isinstance(value, float) and value == 0:
        return "0"
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def go_number(value: int | float) -> str:
    """An int64 or float64 as %v prints it."""
    value = as_go_number(value)
    return go_float(value) if isinstance(value, float) else str(value)


def go_value(value: Any) -> str:
    """A bad value as field.Error prints it after `Invalid value: `."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_number(value)
    if isinstance(value, str):
        return go_quote(value)
    return _go_syntax(value)


def _go_syntax(value: Any) -> str:
    """%#v of a decoded JSON map or slice (map[string]interface {}{...}, []interface {}{...})."""
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(k)}:{_go_element(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_element(v) for v in value) + "}"
    return json.dumps(value)


def _go_element(value: Any) -> str:
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, dict | list):
        return _go_syntax(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_number(value)
    return go_quote(str(value))

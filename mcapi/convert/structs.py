"""Free-form documents (an ACNP spec) <-> google.protobuf.Struct."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

from mcapi.convert.errors import ConversionError


def dict_to_struct(document: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    try:
        struct.update(dict(document))
    except (TypeError, ValueError) as err:
        raise ConversionError(f"not a JSON document: {err}") from None
    return struct


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    """The document back, with integral numbers as ints: Struct keeps every
    number as a double, but Kubernetes documents hold port numbers and the like."""
    document = json_format.MessageToDict(struct)
    result: dict[str, Any] = _restore_ints(document)
    return result


def _restore_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _restore_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_ints(v) for v in value]
    return value

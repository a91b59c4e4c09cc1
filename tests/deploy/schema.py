"""Field names and types of Kubernetes objects checked against the kubernetes-asyncio models
(the API's OpenAPI types): the strict field validation a real API server does, which the
sandbox does not do for built-in kinds."""

from __future__ import annotations

import re
from typing import Any

from kubernetes_asyncio import client

_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")
_PRIMITIVES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "bool": (bool,),
    "int": (int,),
    "float": (int, float),
    "datetime": (str,),
    "date": (str,),
}


def problems(obj: dict[str, Any]) -> list[str]:
    """Unknown fields and wrongly typed values of one object, as `Kind name: path: problem`."""
    model = f"V1{obj.get('kind', '')}"
    where = f"{obj.get('kind')} {obj.get('metadata', {}).get('name')}"
    if not hasattr(client, model):
        return [f"{where}: no model {model}"]
    return [f"{where}: {p}" for p in _check(obj, model, "")]


def _check(value: Any, type_name: str, path: str) -> list[str]:
    if type_name == "object":
        return []
    if type_name in _PRIMITIVES:
        ok = isinstance(value, _PRIMITIVES[type_name]) and not (type_name == "int" and isinstance(value, bool))
        return [] if ok else [f"{path or '.'}: {value!r} is not a {type_name}"]
    if match := _LIST.match(type_name):
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [p for i, item in enumerate(value) for p in _check(item, match.group(1), f"{path}[{i}]")]
    if match := _DICT.match(type_name):
        if not isinstance(value, dict):
            return [f"{path}: not a map"]
        return [p for key, item in value.items() for p in _check(item, match.group(1), f"{path}.{key}")]
    model = getattr(client, type_name)
    if not isinstance(value, dict):
        return [f"{path}: not an object ({type_name})"]
    by_json_name = {json_name: attr for attr, json_name in model.attribute_map.items()}
    found = []
    for key, item in value.items():
        attr = by_json_name.get(key)
        if attr is None:
            found.append(f"{path}.{key}: unknown field of {type_name}")
            continue
        found.extend(_check(item, model.openapi_types[attr], f"{path}.{key}"))
    return found

"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on plain JSON values."""

from __future__ import annotations

import copy
from typing import Any

from sandbox.errors import ApiError, bad_request


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch; returns a new value, inputs untouched."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split_pointer(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise bad_request(f"invalid JSON pointer {pointer!r}")
    return [_unescape(t) for t in pointer[1:].split("/")]


def _resolve_parent(doc: Any, tokens: list[str], pointer: str) -> Any:
    current = doc
    for token in tokens[:-1]:
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            raise _missing(pointer)
    return current


def _missing(pointer: str) -> ApiError:
    # The apiserver wraps evanphx/json-patch errors into a 422-less 500-ish; clients see it as
    # "the server rejected our request". A 422 Invalid with the pointer is the useful answer.
    return ApiError(422, "Invalid", f"jsonpatch: path {pointer!r} not found in the document")


def _get(doc: Any, pointer: str) -> Any:
    tokens = _split_pointer(pointer)
    if not tokens:
        return doc
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _missing(pointer)


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = _split_pointer(pointer)
    if not tokens:
        return value
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _missing(pointer)
    else:
        raise _missing(pointer)
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    tokens = _split_pointer(pointer)
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise _missing(pointer)
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 patch; returns a new document."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc = _remove(doc, path) if _split_pointer(path) else doc
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            value = _get(doc, op["from"])
            doc = _add(_remove(doc, op["from"]), path, value)
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise ApiError(422, "Invalid", f"the json patch test at {path!r} failed")
        else:
            raise bad_request(f"unknown json patch operation {kind!r}")
    return doc

"""Strategic merge patch for the built-in kinds mchub and kubectl touch.

A real apiserver reads patch strategies from Go struct tags; here they are a table
of field paths per kind (ports by port, conditions and node addresses by type,
containers by name, finalizers merged as a set, ...). Lists not in the table are
replaced, as atomic lists are. Directives kubectl sends are honoured: `$patch`
(replace/delete), `$retainKeys`, `$setElementOrder/<field>` and
`$deleteFromPrimitiveList/<field>`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from sandbox.errors import bad_request

Path = tuple[str, ...]


@dataclass(frozen=True)
class MergeByKey:
    key: str


@dataclass(frozen=True)
class MergeSet:
    """A list of scalars merged as a set union (patchStrategy merge on []string)."""


_SET = MergeSet()

_COMMON: dict[Path, MergeByKey | MergeSet] = {
    ("metadata", "finalizers"): _SET,
    ("metadata", "ownerReferences"): MergeByKey("uid"),
    ("status", "conditions"): MergeByKey("type"),
}

_POD_SPEC: dict[Path, MergeByKey | MergeSet] = {
    ("containers",): MergeByKey("name"),
    ("initContainers",): MergeByKey("name"),
    ("volumes",): MergeByKey("name"),
    ("imagePullSecrets",): MergeByKey("name"),
    ("containers", "ports"): MergeByKey("containerPort"),
    ("containers", "env"): MergeByKey("name"),
    ("containers", "volumeMounts"): MergeByKey("mountPath"),
    ("initContainers", "env"): MergeByKey("name"),
    ("initContainers", "volumeMounts"): MergeByKey("mountPath"),
}


def _prefixed(prefix: Path, table: dict[Path, MergeByKey | MergeSet]) -> dict[Path, MergeByKey | MergeSet]:
    return {prefix + path: strategy for path, strategy in table.items()}


_BY_KIND: dict[str, dict[Path, MergeByKey | MergeSet]] = {
    "Service": {("spec", "ports"): MergeByKey("port")},
    "Node": {
        ("status", "addresses"): MergeByKey("type"),
        ("spec", "podCIDRs"): _SET,
    },
    "ServiceAccount": {("secrets",): MergeByKey("name"), ("imagePullSecrets",): MergeByKey("name")},
    "Pod": {**_prefixed(("spec",), _POD_SPEC), ("status", "podIPs"): MergeByKey("ip")},
    "Deployment": _prefixed(("spec", "template", "spec"), _POD_SPEC),
    "DaemonSet": _prefixed(("spec", "template", "spec"), _POD_SPEC),
}

_DIRECTIVE = "$patch"
_RETAIN = "$retainKeys"
_ORDER_PREFIX = "$setElementOrder/"
_DELETE_PRIMITIVE_PREFIX = "$deleteFromPrimitiveList/"


class _Delete:
    """Marks a map that a `$patch: delete` removed."""


_DELETED = _Delete()


def strategic_merge_patch(kind: str, original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply a strategic merge patch to a built-in kind's object; returns a new dict."""
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    strategies = {**_COMMON, **_BY_KIND.get(kind, {})}
    merged = _merge_map(copy.deepcopy(original), patch, (), strategies)
    return merged if isinstance(merged, dict) else {}


def _strip(value: Any) -> Any:
    """A patch value with its directives removed, for fields with nothing to merge into."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$") and v is not None}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and v.get(_DIRECTIVE) == "delete")]
    return value


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], path: Path, strategies: dict[Path, Any]
) -> dict[str, Any] | _Delete:
    directive = patch.get(_DIRECTIVE)
    if directive == "delete":
        return _DELETED
    if directive == "replace":
        return dict(_strip(patch))
    result = original
    if _RETAIN in patch:
        keep = set(patch[_RETAIN] or [])
        result = {k: v for k, v in result.items() if k in keep}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN):
            continue
        if key.startswith(_ORDER_PREFIX):
            orders[key[len(_ORDER_PREFIX) :]] = list(value or [])
            continue
        if key.startswith(_DELETE_PRIMITIVE_PREFIX):
            field = key[len(_DELETE_PRIMITIVE_PREFIX) :]
            doomed = value or []
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in doomed]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            merged = _merge_map(current if isinstance(current, dict) else {}, value, (*path, key), strategies)
            if isinstance(merged, _Delete):
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            current = result.get(key)
            result[key] = _merge_list(current if isinstance(current, list) else [], value, (*path, key), strategies)
        else:
            result[key] = value
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _reorder(result[field], order, strategies.get((*path, field)))
    return result


def _strategy_for(path: Path, strategies: dict[Path, Any]) -> MergeByKey | MergeSet | None:
    found: MergeByKey | MergeSet | None = strategies.get(path)
    return found


def _merge_list(original: list[Any], patch: list[Any], path: Path, strategies: dict[Path, Any]) -> list[Any]:
    strategy = _strategy_for(path, strategies)
    if isinstance(strategy, MergeSet):
        return original + [v for v in patch if v not in original]
    if not isinstance(strategy, MergeByKey):
        return list(_strip(patch))
    if any(isinstance(p, dict) and p.get(_DIRECTIVE) == "replace" for p in patch):
        return [_strip(p) for p in patch if not (isinstance(p, dict) and _DIRECTIVE in p)]
    result = list(original)
    key = strategy.key
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"strategic merge patch: list {'.'.join(path)} needs objects with {key!r}")
        index = next(
            (i for i, cur in enumerate(result) if isinstance(cur, dict) and cur.get(key) == item.get(key)),
            None,
        )
        if item.get(_DIRECTIVE) == "delete":
            if index is not None:
                del result[index]
            continue
        if index is None:
            result.append(_strip(item))
        else:
            merged = _merge_map(dict(result[index]), item, path, strategies)
            if isinstance(merged, _Delete):
                del result[index]
            else:
                result[index] = merged
    return result


def _reorder(items: list[Any], order: list[Any], strategy: MergeByKey | MergeSet | None) -> list[Any]:
    def identity(item: Any) -> Any:
        if isinstance(strategy, MergeByKey) and isinstance(item, dict):
            return item.get(strategy.key)
        return item

    if isinstance(strategy, MergeByKey):
        order = [o.get(strategy.key) if isinstance(o, dict) else o for o in order]
    ranked = {json_key(v): i for i, v in enumerate(order)}
    listed = [it for it in items if json_key(identity(it)) in ranked]
    listed.sort(key=lambda it: ranked[json_key(identity(it))])
    return listed + [it for it in items if json_key(identity(it)) not in ranked]


def json_key(value: Any) -> str:
    return repr(value)

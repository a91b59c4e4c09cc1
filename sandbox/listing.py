"""Lists: selectors, resourceVersion semantics, and limit/continue paging.

Pages are cut from the current state in key order; a continue token remembers the
revision of the first page and the last key served. Unlike etcd the sandbox keeps
no snapshots, so later pages show the current state (a real apiserver serves the
first page's snapshot); a token whose revision has been compacted is answered 410
with the apiserver's message, so clients relist as they must on a real cluster.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass

from multidict import MultiMapping

from kube.resources import Obj
from sandbox import errors
from sandbox.resources import ResourceType
from sandbox.selectors import fields_match, labels_match, parse_field_selector, parse_label_selector
from sandbox.store import ObjectStore

_CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - "
    "objects that were created, modified, or deleted between the time the first chunk was returned and "
    "now may show up in the list."
)


def object_matcher(rt: ResourceType, query: MultiMapping[str]) -> Callable[[Obj], bool]:
    """A predicate on stored objects for the query's labelSelector and fieldSelector."""
    labels = parse_label_selector(query.get("labelSelector"))
    own_conversion = bool(rt.selectable_fields) or rt.from_crd
    fields = parse_field_selector(query.get("fieldSelector"), rt.selectable_fields, own_conversion=own_conversion)
    rename = rt.view.field_path if rt.view else None

    def matches(obj: Obj) -> bool:
        return labels_match(labels, obj) and fields_match(fields, obj, rename)

    return matches


@dataclass
class ListPage:
    items: list[Obj]
    resource_version: str
    continue_token: str
    remaining: int | None


def _encode_continue(revision: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(raw["rv"]), str(raw["start"])
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def list_page(store: ObjectStore, rt: ResourceType, namespace: str | None, query: MultiMapping[str]) -> ListPage:
    matches = object_matcher(rt, query)
    revision = store.revision
    start = ""
    token = query.get("continue")
    if token:
        revision, start = _decode_continue(token)
        try:
            store.check_revision_retained(revision)
        except errors.ApiError:
            raise errors.gone(_CONTINUE_TOO_OLD) from None
    else:
        wanted = query.get("resourceVersion", "")
        if wanted not in ("", "0") and query.get("resourceVersionMatch") == "Exact":
            if not wanted.isdigit():
                raise errors.bad_request(f"invalid resource version {wanted!r}")
            store.check_revision_retained(int(wanted))
    objects = [o for o in store.list_objects(rt.storage_key, namespace) if matches(o)]
    if start:
        objects = [o for o in objects if _key(o) > start]
    limit_text = query.get("limit", "")
    limit = int(limit_text) if limit_text.isdigit() else 0
    if limit and len(objects) > limit:
        page = objects[:limit]
        selectors = query.get("labelSelector") or query.get("fieldSelector")
        return ListPage(
            page,
            str(revision),
            _encode_continue(revision, _key(page[-1])),
            None if selectors else len(objects) - limit,
        )
    return ListPage(objects, str(revision), "", None)

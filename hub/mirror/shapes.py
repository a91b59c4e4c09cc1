"""The CRs the mirror keeps in the leader Namespace, and how it compares them with what is there.

Shapes are the kube store's (hub.store.kube_codec), so kubectl shows what Antrea shows and
what the kube store would write: ResourceExport (with its Succeeded/Failure status),
ResourceImport, MemberClusterAnnounce. The mirror adds the label
``app.kubernetes.io/managed-by: mchub-hub`` (it deletes only CRs carrying it, never a
person's) and, on ResourceImports and MemberClusterAnnounces, ``mchub.antrea.io/digest``:
a hash of the content as it reads back, as ResourceExports carry their export digest. A CR
whose content no longer matches its digest was changed by someone else.

Comparisons are made on what the content means (parsed back into hub records), never on the
JSON text, so an API server's normalisation never makes the mirror write forever.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hub import COMPONENT
from hub.mirror.feed import Kind
from hub.store.base import MemberRecord
from hub.store.kube_authorship import ANNOTATION_EXPORT_DIGEST, cr_digest
from hub.store.kube_codec import (
    InvalidRecord,
    export_to_cr,
    import_from_cr,
    import_to_cr,
    member_from_cr,
    member_to_cr,
)
from kube.resources import Obj, Resource
from mcapi.convert import ConversionError
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS

LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = COMPONENT
ANNOTATION_DIGEST = "mchub.antrea.io/digest"

RESOURCES: dict[Kind, Resource] = {
    Kind.EXPORT: RESOURCE_EXPORTS,
    Kind.IMPORT: RESOURCE_IMPORTS,
    Kind.MEMBER: MEMBER_CLUSTER_ANNOUNCES,
}


@dataclass(frozen=True)
class Desired:
    """A CR as the mirror writes it: the object (without status) and its status, if it has one."""

    obj: Obj
    status: dict[str, Any] | None


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


def _import_digest(cr: Mapping[str, Any]) -> str:
    try:
        return _hash(import_from_cr(dict(cr)).SerializeToString(deterministic=True))
    except ConversionError:
        return ""


def _member_digest(cr: Mapping[str, Any]) -> str:
    try:
        m = member_from_cr(dict(cr))
    except (InvalidRecord, ValueError):
        return ""
    text = "\0".join(
        (m.cluster_id, m.cluster_set_id, m.leader_cluster_id, m.joined.isoformat(), m.last_heartbeat.isoformat())
    )
    return _hash(text.encode())


def content_digest(kind: Kind, cr: Mapping[str, Any]) -> str:
    """What a CR says, as a hash ("" when it cannot be read as that kind)."""
    if kind is Kind.EXPORT:
        return cr_digest(cr)
    if kind is Kind.IMPORT:
        return _import_digest(cr)
    return _member_digest(cr)


def _digest_annotation(kind: Kind) -> str:
    return ANNOTATION_EXPORT_DIGEST if kind is Kind.EXPORT else ANNOTATION_DIGEST


def _managed(obj: Obj, kind: Kind) -> Obj:
    meta = obj.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), LABEL_MANAGED_BY: MANAGED_BY}
    if kind is not Kind.EXPORT:  # exports carry the export digest already (kube_codec)
        meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION_DIGEST: content_digest(kind, obj)}
    return obj


def desired_export(export: pb.ResourceExport, namespace: str) -> Desired:
    obj = export_to_cr(export, namespace)
    status = obj.pop("status", None)
    return Desired(_managed(obj, Kind.EXPORT), status)


def desired_import(imp: pb.ResourceImport, namespace: str) -> Desired:
    # No status: members' reports are written into it by hub.leader_cluster.import_outcomes.
    obj = import_to_cr(imp, namespace)
    obj.pop("status", None)
    return Desired(_managed(obj, Kind.IMPORT), None)


def desired_member(member: MemberRecord, namespace: str) -> Desired:
    return Desired(_managed(member_to_cr(member, namespace), Kind.MEMBER), None)


def is_managed(obj: Mapping[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(LABEL_MANAGED_BY) == MANAGED_BY)


def is_ours(kind: Kind, obj: Mapping[str, Any]) -> bool:
    """The CR says what the mirror (or the hub) wrote into it, whenever that was."""
    stamped = ((obj.get("metadata") or {}).get("annotations") or {}).get(_digest_annotation(kind))
    return bool(stamped) and stamped == content_digest(kind, obj)


def _contains(actual: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(actual.get(key) == value for key, value in wanted.items())


def main_in_sync(kind: Kind, actual: Mapping[str, Any], desired: Desired) -> bool:
    """The CR (but its status) says what the desired one says, with the mirror's labels and annotations."""
    meta, wanted = actual.get("metadata") or {}, desired.obj["metadata"]
    return (
        _contains(meta.get("labels") or {}, wanted.get("labels") or {})
        and _contains(meta.get("annotations") or {}, wanted.get("annotations") or {})
        and content_digest(kind, actual) == content_digest(kind, desired.obj)
    )


def _essence(status: Any) -> list[tuple[Any, ...]]:
    if not isinstance(status, Mapping):
        return []
    return [
        (c.get("type"), c.get("status"), c.get("reason", ""), c.get("message", ""))
        for c in status.get("conditions") or []
    ]


def status_in_sync(actual: Mapping[str, Any], desired: Desired) -> bool:
    return desired.status is None or _essence(actual.get("status")) == _essence(desired.status)


def replacing_patch(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch that makes `actual` say `desired` in the parts `desired` has, removing
    keys of `actual`'s spec (and of the top level) that `desired` lacks. Labels and
    annotations others added stay; metadata the server keeps is never touched."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        if key == "metadata":
            meta = {k: v for k, v in value.items() if k in ("labels", "annotations")}
            if meta:
                patch["metadata"] = meta
        elif isinstance(value, Mapping) and isinstance(actual.get(key), Mapping):
            patch[key] = _replace(actual[key], value)
        else:
            patch[key] = value
    for key in actual:
        if key not in desired and key not in ("metadata", "status", "apiVersion", "kind"):
            patch[key] = None
    return patch


def _replace(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in desired.items():
        current = actual.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = _replace(current, value)
        else:
            out[key] = value
    for key in actual:
        if key not in desired:
            out[key] = None
    return out

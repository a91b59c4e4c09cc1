"""Who wrote a ResourceExport CR in the leader Namespace: the hub, or a person (kubectl).

The leader Namespace is an interface: the hub writes ResourceExports there (the kube store,
or the mirror of the SQLite store), and a ClusterSet admin writes AntreaClusterNetworkPolicy
ResourceExports there with kubectl, as the user guide says. The hub tells the two apart by
what the CR says, never by who is asked: every ResourceExport the hub writes carries the
annotation ``mchub.antrea.io/export-digest``, a hash of the export as it reads back from that
CR (spec, source, payload; not the status). Then:

- ``HUB``: the digest matches the content. The hub wrote it as it is, maybe long ago (an old
  watch event of the hub's own write is recognised as such, whatever the hub holds now);
- ``EDITED``: the hub wrote it and someone changed the content since (``kubectl apply`` and
  ``kubectl edit`` keep annotations they do not know);
- ``PERSON``: the hub never wrote it (no digest, no hub create time), e.g. ``kubectl create``
  of the guide's manifest, or a ``kubectl replace`` that dropped the hub's annotations.

CRs an older hub wrote (before digests) carry the hub's create-time annotation and count as
``HUB``. A CR copied whole under its own name is the hub's as far as anyone can tell.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from typing import Any

from mcapi import names
from mcapi.convert import ConversionError, resource_export_from_cr
from mcapi.mchub.v1 import common_area_pb2 as pb

ANNOTATION_EXPORT_DIGEST = "mchub.antrea.io/export-digest"


class Authorship(enum.Enum):
    HUB = "hub"
    EDITED = "edited"
    PERSON = "person"


def export_digest(export: pb.ResourceExport) -> str:
    """A hash of what an export says (name, source, payload), without the hub's status and times."""
    content = pb.ResourceExport()
    content.CopyFrom(export)
    content.ClearField("status")
    content.ClearField("create_time")
    return hashlib.sha256(content.SerializeToString(deterministic=True)).hexdigest()[:24]


def cr_digest(cr: Mapping[str, Any]) -> str:
    """The digest of a ResourceExport CR's content as the hub reads it back ("" if unreadable)."""
    try:
        return export_digest(resource_export_from_cr(cr))
    except ConversionError:
        return ""


def stamp_digest(cr: dict[str, Any]) -> dict[str, Any]:
    """`cr` (a ResourceExport the hub is about to write) with its digest annotation."""
    meta = cr.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION_EXPORT_DIGEST: cr_digest(cr)}
    return cr


def authorship(cr: Mapping[str, Any]) -> Authorship:
    annotations = (cr.get("metadata") or {}).get("annotations") or {}
    stamped = annotations.get(ANNOTATION_EXPORT_DIGEST)
    if stamped:
        return Authorship.HUB if cr_digest(cr) == stamped else Authorship.EDITED
    if names.ANNOTATION_EXPORT_CREATE_TIME in annotations:
        return Authorship.HUB
    return Authorship.PERSON


def spec_kind(cr: Mapping[str, Any]) -> str:
    spec = cr.get("spec")
    return str(spec.get("kind") or "") if isinstance(spec, Mapping) else ""

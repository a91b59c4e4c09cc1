"""A LabelIdentity import -> the cluster-scoped LabelIdentity named by the import (its
label hash), spec = label and ID. Every LabelIdentity is the importer's, as in Antrea."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kube.resources import Obj
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import LABEL_IDENTITIES

if TYPE_CHECKING:
    from member.imports.context import ImportContext


def desired_label_identity(message: pb.ResourceImport) -> Obj:
    identity = message.label_identity
    return {"metadata": {"name": message.import_name}, "spec": {"label": identity.label, "id": identity.id}}


async def apply_label_identity(ctx: ImportContext, message: pb.ResourceImport) -> None:
    kind = ctx.caches.kind(LABEL_IDENTITIES)
    await ctx.writer.ensure(kind, desired_label_identity(message), import_name=message.import_name)

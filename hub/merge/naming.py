"""The export name Antrea derives for an export (mcapi.names), which the hub enforces."""

from __future__ import annotations

from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb


def expected_export_name(export: pb.ResourceExport) -> str | None:
    """The derived name; None for an ACNP (admin-named) or an export without payload."""
    kind = export.WhichOneof("payload")
    if kind == "service":
        return names.service_export_name(export.cluster_id, export.namespace, export.name)
    if kind == "endpoints":
        return names.endpoints_export_name(export.cluster_id, export.namespace, export.name)
    if kind == "cluster_info":
        return names.cluster_info_export_name(export.cluster_id)
    if kind == "label_identity":
        return names.label_identity_export_name(export.cluster_id, export.label_identity.normalized_label)
    return None

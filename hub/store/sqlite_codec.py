"""Rows of the sqlite store <-> the store's messages and records.

Protobuf messages are stored whole (deterministic serialization) beside a
few indexed columns (cluster ID, kind, namespace, name) that queries and a
human with the sqlite3 shell can use; the blob is the truth.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from hub.store.base import MemberRecord, StoreError
from hub.store.member_inventory import inventory_from_json, inventory_json
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

# Payload field of the oneof -> the kind Antrea's CRs spell in spec.kind.
_EXPORT_KINDS = {
    "service": names.KIND_SERVICE,
    "endpoints": names.KIND_ENDPOINTS,
    "cluster_info": names.KIND_CLUSTER_INFO,
    "cluster_network_policy": names.KIND_ACNP,
    "label_identity": names.KIND_LABEL_IDENTITY,
}
_IMPORT_KINDS = {
    "service_import": names.KIND_SERVICE_IMPORT,
    "endpoints": names.KIND_ENDPOINTS,
    "cluster_info": names.KIND_CLUSTER_INFO,
    "cluster_network_policy": names.KIND_ACNP,
    "label_identity": names.KIND_LABEL_IDENTITY,
}


class InvalidRecord(StoreError, ValueError):
    """An object in a batch cannot be stored (wrong type, no name, naive datetime)."""


# Rows are named tuples: made for every record a write puts, where a frozen dataclass's
# __init__ (a setattr per field) cost several times the serialization of the body.
class ExportRow(NamedTuple):
    export_name: str
    cluster_id: str
    kind: str
    namespace: str
    name: str
    body: bytes


class ImportRow(NamedTuple):
    import_name: str
    kind: str
    namespace: str
    name: str
    body: bytes


class MemberRow(NamedTuple):
    cluster_id: str
    cluster_set_id: str
    leader_cluster_id: str
    joined: str
    last_heartbeat: str
    inventory: str = ""
    global_cidr: str = ""


def encode_export(export: pb.ResourceExport) -> ExportRow:
    if not isinstance(export, pb.ResourceExport):
        raise InvalidRecord(f"put_exports holds a {type(export).__name__}, not a ResourceExport")
    if not export.export_name:
        raise InvalidRecord("a ResourceExport without export_name cannot be stored")
    payload = export.WhichOneof("payload")
    return ExportRow(
        export_name=export.export_name,
        cluster_id=export.cluster_id,
        kind=_EXPORT_KINDS.get(payload or "", ""),
        namespace=export.namespace,
        name=export.name,
        body=export_body(export),
    )


def export_body(export: pb.ResourceExport) -> bytes:
    """The export as its row keeps it: deterministic, so an unchanged export (its Struct's and
    maps' keys in any order) always has the same bytes and a reader can compare bodies."""
    return export.SerializeToString(deterministic=True)


def decode_export(body: bytes) -> pb.ResourceExport:
    export = pb.ResourceExport()
    export.ParseFromString(body)
    return export


def encode_import(resource: pb.ResourceImport) -> ImportRow:
    if not isinstance(resource, pb.ResourceImport):
        raise InvalidRecord(f"put_imports holds a {type(resource).__name__}, not a ResourceImport")
    if not resource.import_name:
        raise InvalidRecord("a ResourceImport without import_name cannot be stored")
    payload = resource.WhichOneof("payload")
    return ImportRow(
        import_name=resource.import_name,
        kind=_IMPORT_KINDS.get(payload or "", ""),
        namespace=resource.namespace,
        name=resource.name,
        body=resource.SerializeToString(deterministic=True),
    )


def decode_import(body: bytes) -> pb.ResourceImport:
    resource = pb.ResourceImport()
    resource.ParseFromString(body)
    return resource


def encode_member(member: MemberRecord) -> MemberRow:
    if not isinstance(member, MemberRecord):
        raise InvalidRecord(f"put_members holds a {type(member).__name__}, not a MemberRecord")
    if not member.cluster_id:
        raise InvalidRecord("a MemberRecord without cluster_id cannot be stored")
    return MemberRow(
        cluster_id=member.cluster_id,
        cluster_set_id=member.cluster_set_id,
        leader_cluster_id=member.leader_cluster_id,
        joined=_utc_iso(member.joined, "joined", member.cluster_id),
        last_heartbeat=_utc_iso(member.last_heartbeat, "last_heartbeat", member.cluster_id),
        inventory=inventory_json(member.inventory),
        global_cidr=member.global_cidr,
    )


def decode_member(row: MemberRow) -> MemberRecord:
    return MemberRecord(
        cluster_id=row.cluster_id,
        cluster_set_id=row.cluster_set_id,
        leader_cluster_id=row.leader_cluster_id,
        joined=datetime.fromisoformat(row.joined),
        last_heartbeat=datetime.fromisoformat(row.last_heartbeat),
        inventory=inventory_from_json(row.inventory, row.cluster_id),
        global_cidr=row.global_cidr,
    )


def _utc_iso(moment: datetime, field_name: str, cluster_id: str) -> str:
    # A naive datetime has no instant: storing it would silently shift it by
    # the host's offset, so it is refused rather than guessed.
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidRecord(f"member {cluster_id!r}: {field_name} is a naive datetime; give it a timezone")
    return moment.astimezone(UTC).isoformat()

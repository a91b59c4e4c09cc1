"""WatchImportsResponse messages encoded once, and sent as they are to every watcher they are for.

grpc serializes every message it sends, once per stream: a batch of changes that a thousand
watchers receive alike would be encoded a thousand times, and copied into a message object
for each before that. The protobuf encoding of a message is the concatenation of its fields'
(each a tag, for a message field its length, then its bytes), so the hub encodes each change
once per commit (hub.watch.batches) and a watcher's Changes message is its envelope (epoch,
revision, the changes field's tag and length) followed by the joined bytes of the changes it
carries: the very bytes ``SerializeToString`` gives for that message.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mcapi.mchub.v1 import common_area_pb2 as pb

# Tags (field number << 3 | wire type 2, length-delimited; 0 for the varint revision) of the fields written here.
_EPOCH = b"\x0a"  # WatchImportsResponse.epoch = 1
_REVISION = b"\x10"  # WatchImportsResponse.revision = 2
_CHANGES = b"\x42"  # WatchImportsResponse.changes = 8
CHANGE_ENTRY = b"\x0a"  # Changes.changes = 1


@dataclass(frozen=True, slots=True)
class Encoded:
    """A WatchImportsResponse as its bytes (what gRPC sends), with the revision the watch follows."""

    data: bytes
    revision: int

    def decoded(self) -> pb.WatchImportsResponse:
        return pb.WatchImportsResponse.FromString(self.data)

    @classmethod
    def of(cls, message: pb.WatchImportsResponse) -> Encoded:
        return cls(message.SerializeToString(), message.revision)


# What a WatchImports stream yields: a message, or one encoded before (shared between watchers).
WatchResponse = pb.WatchImportsResponse | Encoded


def serialize(response: WatchResponse) -> bytes:
    """The WatchImports response serializer: encoded messages pass through as they are."""
    return response.data if isinstance(response, Encoded) else response.SerializeToString()


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a protobuf varint: 7 bits a byte, low bits first, the high bit set on all but the last."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def change_entry(change: pb.ImportChange) -> bytes:
    """One change as an entry of a Changes message: its tag, its length, itself."""
    data = change.SerializeToString()
    return CHANGE_ENTRY + varint(len(data)) + data


@functools.lru_cache(maxsize=8)
def _epoch_field(epoch: str) -> bytes:
    """The epoch field of a message (none for the empty epoch): the same for every message of a history."""
    if not epoch:
        return b""
    data = epoch.encode()
    return _EPOCH + varint(len(data)) + data


def changes_message(epoch: str, revision: int, entries: list[bytes], size: int) -> Encoded:
    """A WatchImportsResponse carrying the Changes whose entries (``change_entry``, ``size`` bytes
    in all) are ``entries``, in order; proto3 leaves an empty epoch and a zero revision out."""
    envelope = bytearray(_epoch_field(epoch))
    if revision:
        envelope += _REVISION + varint(revision)
    envelope += _CHANGES + varint(size)
    return Encoded(b"".join([envelope, *entries]), revision)

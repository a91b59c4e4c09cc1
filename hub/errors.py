"""The hub's typed refusals, and how they quote what a client sent.

The gRPC and REST layers map refusals to status codes. A refusal's message
travels back in the gRPC trailers (grpc-message), which a client with default
options accepts only up to 8 KiB of metadata, percent-encoding every byte
outside printable ASCII (up to 3 characters a byte). So every client-supplied
value in a refusal or a log line goes through `quote` (a prefix and the
value's length when it is long), and a refusal's whole message is cut to
MAX_MESSAGE_BYTES: even fully percent-encoded it stays under 8 KiB.
"""

from __future__ import annotations

from typing import ClassVar

from mcapi import names

# Values up to this many characters are quoted whole: every cluster ID,
# Namespace and Service name (DNS-1123 labels, at most 63).
MAX_QUOTED_CHARS = 64
# A longer value shows this many leading characters, then its length.
QUOTED_PREFIX_CHARS = 32
# A refusal's message, in UTF-8 bytes: x3 when percent-encoded is still < 8 KiB.
MAX_MESSAGE_BYTES = 2048
_CUT = "… (message truncated)"


def quote(value: str) -> str:
    """A client-supplied value for a message or a log line: repr()'d, long ones cut.

    `quote("east")` is `'east'`; a 1 MiB value is `'aaaa…' (1048576 bytes)`.
    repr() escapes control characters, so a value cannot forge log lines.
    """
    if len(value) <= MAX_QUOTED_CHARS:
        return repr(value)
    return f"{value[:QUOTED_PREFIX_CHARS] + '…'!r} ({len(value.encode(errors='surrogatepass'))} bytes)"


def bounded(message: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """The message, cut to at most `limit` UTF-8 bytes (a backstop: values are quoted already)."""
    data = message.encode(errors="surrogatepass")
    if len(data) <= limit:
        return message
    keep = data[: max(0, limit - len(_CUT.encode()))].decode(errors="ignore")
    return keep + _CUT


# Texts of store and transport errors (not client values) are cut to this in logs and refusals.
DETAIL_BYTES = 512


def store_unavailable(error: Exception) -> str:
    """The refusal's text when the store failed (UNAVAILABLE, HTTP 503): nothing was acknowledged."""
    return f"the hub could not use its store ({bounded(str(error), DETAIL_BYTES)}); retry later"


class HubError(Exception):
    """A request the hub refused; nothing was changed. The message is bounded().

    Each refusal names its gRPC status code and its HTTP status (with Kubernetes' reason) where
    it is declared: the one table both faces map refusals with (hub.grpc.codes, hub.rest.errors).
    """

    grpc_code: ClassVar[str] = "UNKNOWN"
    http_status: ClassVar[tuple[int, str]] = (500, "InternalError")
    # A refusal a client acts on by kind, beside its message: sent in the trailing metadata
    # mcapi.names.REFUSAL_REASON_METADATA ("" for none).
    reason: ClassVar[str] = ""

    def __init_subclass__(cls, *, grpc_code: str = "", http_status: tuple[int, str] | None = None) -> None:
        super().__init_subclass__()
        if grpc_code:
            cls.grpc_code = grpc_code
        if http_status is not None:
            cls.http_status = http_status

    def __init__(self, message: str = "") -> None:
        super().__init__(bounded(message))

    def with_note(self, note: str) -> HubError:
        """The same refusal with a note appended, still within the bound (the note is kept)."""
        return type(self)(bounded(str(self), MAX_MESSAGE_BYTES - len(note.encode())) + note)


class InvalidRequest(HubError, grpc_code="INVALID_ARGUMENT", http_status=(400, "BadRequest")):
    """Malformed content."""


class TooLarge(InvalidRequest):
    """An export that would make a record too large for the hub's store or for members' watches,
    alone or merged with others'."""


class Unauthenticated(HubError, grpc_code="UNAUTHENTICATED", http_status=(401, "Unauthorized")):
    """No bearer token, or one no authenticator knows."""


class Forbidden(HubError, grpc_code="PERMISSION_DENIED", http_status=(403, "Forbidden")):
    """The caller may not do this."""


class NotFound(HubError, grpc_code="NOT_FOUND", http_status=(404, "NotFound")):
    """The named object does not exist."""


class NotJoined(HubError, grpc_code="FAILED_PRECONDITION", http_status=(409, "Conflict")):
    """The member must announce before it exports."""


class ClusterIDInUse(HubError, grpc_code="ALREADY_EXISTS", http_status=(409, "AlreadyExists")):
    """Another cluster is the member of this cluster ID (KEP-2149: IDs are unique in a ClusterSet)."""

    reason = names.REASON_CLUSTER_ID_IN_USE


class ClusterIDImmutable(HubError, grpc_code="FAILED_PRECONDITION", http_status=(409, "Conflict")):
    """The cluster is a member under another ID (KEP-2149: an ID is immutable while a member)."""

    reason = names.REASON_CLUSTER_ID_IMMUTABLE


class ClusterSetEnded(NotJoined):
    """The ClusterSet was deleted: the hub admits no member until a new one is made."""


class OutOfOrder(HubError, grpc_code="FAILED_PRECONDITION", http_status=(409, "Conflict")):
    """A stream item the stream's state does not allow now, e.g. a second sync_begin."""


class Conflict(HubError, grpc_code="FAILED_PRECONDITION", http_status=(409, "Conflict")):
    """The request conflicts with how this hub is set up, e.g. deleting through REST what a
    CR holds."""


class FellBehind(HubError, grpc_code="ABORTED", http_status=(410, "Expired")):
    """A watch fell further behind than the hub keeps for it: resume from the last revision
    (HTTP 410 Expired, as a Kubernetes watch too old)."""


class Unavailable(HubError, grpc_code="UNAVAILABLE", http_status=(503, "ServiceUnavailable")):
    """The hub cannot decide now (a service it relies on failed); retry."""


class NotLeader(HubError, grpc_code="UNAVAILABLE", http_status=(503, "ServiceUnavailable")):
    """This replica does not hold the leader lease. `leader` names where writes go, as this
    replica knows it ("" when it does not)."""

    def __init__(self, message: str = "", leader: str = "") -> None:
        super().__init__(message)
        self.leader = leader

"""The hub's typed refusals; the gRPC and REST layers map them to status codes."""

from __future__ import annotations


class HubError(Exception):
    """A request the hub refused; nothing was changed."""


class InvalidRequest(HubError):
    """Malformed content (gRPC INVALID_ARGUMENT, HTTP 400)."""


class Forbidden(HubError):
    """The caller may not do this (gRPC PERMISSION_DENIED, HTTP 403)."""


class NotJoined(HubError):
    """The member must announce before it exports (gRPC FAILED_PRECONDITION, HTTP 409)."""


class OutOfOrder(HubError):
    """A stream item the stream's state does not allow now, e.g. a second sync_begin
    (gRPC FAILED_PRECONDITION, HTTP 409)."""


class NotFound(HubError):
    """The named object does not exist (gRPC NOT_FOUND, HTTP 404)."""


class Unavailable(HubError):
    """The hub cannot decide now (a service it relies on failed); retry (gRPC UNAVAILABLE, HTTP 503)."""


class NotLeader(HubError):
    """This replica does not hold the leader lease (gRPC UNAVAILABLE, HTTP 503)."""

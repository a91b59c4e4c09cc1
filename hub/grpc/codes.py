"""How typed refusals become gRPC status codes."""

from __future__ import annotations

import grpc

from hub.errors import (
    Conflict,
    Forbidden,
    HubError,
    InvalidRequest,
    NotFound,
    NotJoined,
    NotLeader,
    OutOfOrder,
    Unavailable,
)


def status_code(error: HubError) -> grpc.StatusCode:
    if isinstance(error, InvalidRequest):
        return grpc.StatusCode.INVALID_ARGUMENT
    if isinstance(error, Forbidden):
        return grpc.StatusCode.PERMISSION_DENIED
    if isinstance(error, NotJoined | OutOfOrder | Conflict):
        return grpc.StatusCode.FAILED_PRECONDITION
    if isinstance(error, NotFound):
        return grpc.StatusCode.NOT_FOUND
    if isinstance(error, NotLeader | Unavailable):
        return grpc.StatusCode.UNAVAILABLE
    return grpc.StatusCode.UNKNOWN

"""Kubernetes-style Status bodies for REST errors."""

from __future__ import annotations

from aiohttp import web

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
    bounded,
)


def http_status(error: HubError) -> tuple[int, str]:
    if isinstance(error, InvalidRequest):
        return 400, "BadRequest"
    if isinstance(error, Forbidden):
        return 403, "Forbidden"
    if isinstance(error, NotFound):
        return 404, "NotFound"
    if isinstance(error, NotJoined | OutOfOrder | Conflict):
        return 409, "Conflict"
    if isinstance(error, NotLeader | Unavailable):
        return 503, "ServiceUnavailable"
    return 500, "InternalError"


def error_response(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": bounded(message),
    }
    return web.json_response(body, status=code)

"""Kubernetes-style Status bodies for REST errors."""

from __future__ import annotations

from aiohttp import web

from hub.errors import HubError, bounded


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


def refusal_response(error: HubError) -> web.Response:
    """A refusal with the HTTP status and Kubernetes reason hub.errors names for it."""
    code, reason = error.http_status
    return error_response(code, reason, str(error))

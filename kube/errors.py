"""Typed errors of Kubernetes API calls, mapped from the apiserver's metav1.Status.

Two families decide what a caller does next:

* ``TemporaryError``: trying again later may succeed (a dropped connection, a 5xx,
  429, an optimistic-concurrency conflict). ``delay`` says when, if the server said.
* ``PermanentError``: the request itself is wrong (422, 400, ...); repeating it
  unchanged cannot succeed.

Errors in neither family (NotFound, AlreadyExists, Forbidden, ...) are answers a
caller is expected to handle; a work queue retries them with backoff, because RBAC
can be granted and objects can appear later.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class TemporaryError(Exception):
    """A failure worth retrying; ``delay`` (seconds) is the wait asked for, if any."""

    def __init__(self, message: str = "", *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(Exception):
    """A failure that repeating the same request cannot fix."""


class KubeError(Exception):
    """Any failure of a call to the Kubernetes API."""


class ConnectionFailed(KubeError, TemporaryError):
    """The API server could not be reached, or the connection broke mid-request."""

    def __init__(self, message: str) -> None:
        TemporaryError.__init__(self, message)


class NotConnected(ConnectionFailed):
    """No connection to the API server could be opened: the request was never sent."""


class ApiError(KubeError):
    """The API server answered with a failure Status."""

    def __init__(self, code: int, reason: str, message: str, status: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.status: dict[str, Any] = dict(status or {})

    @property
    def details(self) -> dict[str, Any]:
        details = self.status.get("details")
        return details if isinstance(details, dict) else {}


class BadRequest(ApiError, PermanentError):
    """400: a malformed request (bad selector, bad patch)."""


class Unauthorized(ApiError):
    """401: the credentials were refused."""


class Forbidden(ApiError):
    """403: RBAC refused, or the namespace is terminating."""


class NotFound(ApiError):
    """404: the object, its namespace, or the resource type itself does not exist."""


class MethodNotAllowed(ApiError, PermanentError):
    """405: the resource does not support this verb."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: create of a name that is taken."""


class Conflict(ApiError, TemporaryError):
    """409 Conflict: the resourceVersion (or a delete precondition) is stale; re-read and retry."""

    def __init__(self, code: int, reason: str, message: str, status: Mapping[str, Any] | None = None) -> None:
        ApiError.__init__(self, code, reason, message, status)
        self.delay = None


class Gone(ApiError):
    """410: a watch or list continue token is older than the server keeps; relist."""


class UnsupportedMediaType(ApiError, PermanentError):
    """415: the patch type is not supported for this resource."""


class Invalid(ApiError, PermanentError):
    """422: the object failed validation; ``message`` carries the apiserver's field errors."""

    @property
    def causes(self) -> list[dict[str, Any]]:
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []


class TooManyRequests(ApiError, TemporaryError):
    """429: throttled; ``delay`` is the server's Retry-After when given."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        status: Mapping[str, Any] | None = None,
        delay: float | None = None,
    ) -> None:
        ApiError.__init__(self, code, reason, message, status)
        self.delay = delay


class ServerError(TooManyRequests):
    """5xx: the server failed (or timed out); ``delay`` is Retry-After when given."""


class NotOwned(PermanentError):
    """An object exists under the wanted name but belongs to someone else; it is left alone."""

    def __init__(self, resource_kind: str, namespace: str | None, name: str) -> None:
        ref = f"{namespace}/{name}" if namespace else name
        super().__init__(f"{resource_kind} {ref} exists and is not owned by this controller")
        self.kind = resource_kind
        self.namespace = namespace
        self.name = name


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
}


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After in seconds; the HTTP-date form is not used by the apiserver and is ignored."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def status_from_body(body: bytes | str | None, code: int, http_reason: str = "") -> dict[str, Any]:
    """The metav1.Status of an error response, or a synthetic one when the body is not a Status."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        return parsed
    return {"kind": "Status", "status": "Failure", "code": code, "reason": http_reason, "message": text.strip()}


def error_from_status(status: Mapping[str, Any], code: int | None = None, retry_after: float | None = None) -> ApiError:
    """The typed error for a failure Status (also used for a watch's ERROR event)."""
    raw_code = status.get("code")
    code = code or (raw_code if isinstance(raw_code, int) else 500)
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    if code == 409:
        return (
            AlreadyExists(code, reason, message, status)
            if reason == "AlreadyExists"
            else Conflict(code, reason, message, status)
        )
    if code == 429:
        return TooManyRequests(code, reason, message, status, _status_retry_after(status, retry_after))
    if code >= 500:
        return ServerError(code, reason, message, status, _status_retry_after(status, retry_after))
    return _BY_CODE.get(code, ApiError)(code, reason, message, status)


def _status_retry_after(status: Mapping[str, Any], header_value: float | None) -> float | None:
    if header_value is not None:
        return header_value
    details = status.get("details")
    if isinstance(details, dict) and isinstance(details.get("retryAfterSeconds"), int | float):
        return float(details["retryAfterSeconds"])
    return None

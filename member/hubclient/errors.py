"""What a failed call to the hub means for the member: retry soon, resume, or wait for the operator."""

from __future__ import annotations

import asyncio

import grpc

from mcapi import names

# Worth another attempt after a backoff: the hub or the network is having a bad moment.
_TRANSIENT = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.CANCELLED,
    }
)
# Only the operator can fix these (the token, the ClusterSet or leader ID); retried slowly.
_NEEDS_OPERATOR = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.INVALID_ARGUMENT,
    }
)


class HubCallError(Exception):
    """A call to the hub failed; `code` and `details` are the hub's (or grpc's) words, `reason`
    the kind of refusal when the hub named one (trailing metadata mcapi.names.REFUSAL_REASON_METADATA)."""

    def __init__(self, code: grpc.StatusCode, details: str, reason: str = "") -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.reason = reason

    @property
    def message(self) -> str:
        """A sentence for a ClusterSet condition."""
        if self.code == grpc.StatusCode.UNAUTHENTICATED:
            return f"the leader refused the member token ({self.details}); check the member token Secret"
        if self.code == grpc.StatusCode.PERMISSION_DENIED:
            return f"the leader refused this cluster ({self.details})"
        if self.reason in (names.REASON_CLUSTER_ID_IN_USE, names.REASON_CLUSTER_ID_IMMUTABLE):
            return f"the leader refused this cluster's ID ({self.details})"
        if self.code == grpc.StatusCode.INVALID_ARGUMENT:
            return f"the leader rejected the request ({self.details}); check the ClusterSet spec"
        if self.code == grpc.StatusCode.UNAVAILABLE:
            return f"cannot reach the leader ({self.details})"
        if self.code == grpc.StatusCode.FAILED_PRECONDITION:
            # Not joined yet, removed by the operator, or the ClusterSet was deleted: the hub says which.
            return f"the leader does not admit this member now ({self.details})"
        return f"{self.code.name.lower()}: {self.details}"


class TemporaryHubError(HubCallError):
    """Retry after a backoff (network, hub restart, overload)."""


class ResumeHubError(TemporaryHubError):
    """The hub asked us to resume (ABORTED: a watch fell behind): retry at once."""


class NotJoinedHubError(TemporaryHubError):
    """FAILED_PRECONDITION: the hub does not know this member (yet); announce, then retry."""


class PermanentHubError(HubCallError):
    """The hub refuses who we are or what we say; retried slowly in case the operator fixes it."""


def classify(exc: BaseException) -> HubCallError:
    """A typed error for any failure of a hub call (cancellation is never passed here)."""
    if isinstance(exc, HubCallError):
        return exc
    reason = ""
    if isinstance(exc, grpc.aio.AioRpcError):
        code, details = exc.code(), exc.details() or ""
        reason = _refusal_reason(exc)
    elif isinstance(exc, asyncio.TimeoutError):
        code, details = grpc.StatusCode.DEADLINE_EXCEEDED, "timed out"
    else:
        code, details = grpc.StatusCode.UNKNOWN, f"{type(exc).__name__}: {exc}"
    if code == grpc.StatusCode.ABORTED:
        return ResumeHubError(code, details, reason)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return NotJoinedHubError(code, details, reason)
    if code in _NEEDS_OPERATOR:
        return PermanentHubError(code, details, reason)
    if code in _TRANSIENT:
        return TemporaryHubError(code, details, reason)
    # NOT_FOUND, ALREADY_EXISTS (a cluster ID in use), UNIMPLEMENTED, ...: nothing we do changes it soon.
    return PermanentHubError(code, details, reason)


def _refusal_reason(exc: grpc.aio.AioRpcError) -> str:
    try:
        metadata = tuple(exc.trailing_metadata() or ())
    except Exception:  # a call that never got an answer has no metadata to read
        return ""
    return next((str(value) for key, value in metadata if key == names.REFUSAL_REASON_METADATA), "")

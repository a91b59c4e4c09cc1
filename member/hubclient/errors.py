"""What a failed call to the hub means for the member: retry soon, resume, or wait for the operator."""

from __future__ import annotations

import asyncio

import grpc

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
    """A call to the hub failed; `code` and `details` are the hub's (or grpc's) words."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details

    @property
    def message(self) -> str:
        """A sentence for a ClusterSet condition."""
        if self.code == grpc.StatusCode.UNAUTHENTICATED:
            return f"the leader refused the member token ({self.details}); check the member token Secret"
        if self.code == grpc.StatusCode.PERMISSION_DENIED:
            return f"the leader refused this cluster ({self.details})"
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
    if isinstance(exc, grpc.aio.AioRpcError):
        code, details = exc.code(), exc.details() or ""
    elif isinstance(exc, asyncio.TimeoutError):
        code, details = grpc.StatusCode.DEADLINE_EXCEEDED, "timed out"
    else:
        code, details = grpc.StatusCode.UNKNOWN, f"{type(exc).__name__}: {exc}"
    if code == grpc.StatusCode.ABORTED:
        return ResumeHubError(code, details)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return NotJoinedHubError(code, details)
    if code in _NEEDS_OPERATOR:
        return PermanentHubError(code, details)
    if code in _TRANSIENT:
        return TemporaryHubError(code, details)
    # NOT_FOUND, UNIMPLEMENTED, ... : a hub of another version; nothing we do changes it soon.
    return PermanentHubError(code, details)

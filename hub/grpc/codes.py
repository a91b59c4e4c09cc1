"""How a call's failure becomes its gRPC status: one mapping for every method of the hub.

A typed refusal (hub.errors) carries its code; a store that failed is UNAVAILABLE (nothing was
acknowledged, the member retries); a transport error keeps its code; anything else is a bug,
INTERNAL, and ends only its own call.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from hub.errors import DETAIL_BYTES, HubError, NotLeader, bounded, store_unavailable
from hub.store.base import StoreError
from mcapi import names

# Trailing metadata of a write refused by a follower: the leader, as this replica knows it.
LEADER_METADATA = "mchub-leader"


@dataclass(frozen=True)
class Refusal:
    code: grpc.StatusCode
    message: str
    trailing_metadata: tuple[tuple[str, str], ...] = ()


def status_code(error: HubError) -> grpc.StatusCode:
    return grpc.StatusCode[error.grpc_code]


def refusal_of(error: Exception) -> Refusal:
    """The status a call ends with when `error` stopped it."""
    if isinstance(error, NotLeader) and error.leader:
        return Refusal(status_code(error), str(error), ((LEADER_METADATA, error.leader),))
    if isinstance(error, HubError) and error.reason:
        return Refusal(status_code(error), str(error), ((names.REFUSAL_REASON_METADATA, error.reason),))
    if isinstance(error, HubError):
        return Refusal(status_code(error), str(error))
    if isinstance(error, StoreError):
        return Refusal(grpc.StatusCode.UNAVAILABLE, store_unavailable(error))
    if isinstance(error, grpc.aio.AioRpcError):  # the client went away mid-read
        return Refusal(error.code(), bounded(error.details() or "stream failed", DETAIL_BYTES))
    return Refusal(grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}")


async def abort(context: grpc.aio.ServicerContext[object, object], error: Exception) -> None:
    """End the call with the status of `error` (raises, as context.abort does)."""
    refusal = refusal_of(error)
    if refusal.trailing_metadata:
        await context.abort(refusal.code, refusal.message, trailing_metadata=refusal.trailing_metadata)
    await context.abort(refusal.code, refusal.message)

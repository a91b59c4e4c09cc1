"""What every CommonAreaService call passes through, in one place: `@rpc(writes=...)`.

In this order, before the method runs:

- a write on a replica that does not lead is refused with UNAVAILABLE naming the leader, in
  the text and in trailing metadata `mchub-leader` (writes are not proxied: a member sends
  them to the leader); a watch on a replica that does not serve watches yet, UNAVAILABLE;
- the bearer token is read and authenticated (hub.auth.bearer); a credential shared by
  several members speaks for the cluster it names in `mchub-cluster-id` metadata;
- a request that did not decode (hub.grpc.lenient) is INVALID_ARGUMENT.

Whatever stops the method then ends the call through one mapping (hub.grpc.codes): a typed
refusal with its code, a store failure with UNAVAILABLE, a bug with INTERNAL.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, overload

import grpc

from hub.auth.bearer import bearer_token, identify
from hub.auth.identity import Authenticator, Identity
from hub.errors import Forbidden, HubError, InvalidRequest, NotLeader, Unavailable
from hub.grpc.codes import abort
from hub.grpc.lenient import Malformed
from hub.metrics import HubMetrics
from hub.store.base import StoreError
from mcapi import names
from mcapi.names import CLUSTER_ID_METADATA

log = logging.getLogger(__name__)

# Metadata a member sends with every call: its cluster ID (needed with shared tokens).
Context = grpc.aio.ServicerContext[Any, Any]


@dataclass(frozen=True)
class Gate:
    """Who may call this replica now, and as whom."""

    authenticator: Authenticator
    metrics: HubMetrics
    # Whether this replica takes writes (with the kube store, it holds the Lease).
    is_leader: Callable[[], bool]
    # Whether it serves WatchImports: the leader, or a follower that holds the leader's history.
    serves_watches: Callable[[], bool]
    # Who the leader is, as far as this replica knows ("" when it does not).
    leader_hint: Callable[[], str]

    async def admit(self, context: Context, request: object, *, writes: bool) -> Identity:
        """The caller's identity, or a HubError saying why the call is refused."""
        if writes and not self.is_leader():
            leader = self.leader_hint()
            where = f"; the leader is {leader}" if leader else ""
            raise NotLeader(f"this hub replica is not the leader and takes no writes{where}", leader)
        if not writes and not self.serves_watches():
            raise Unavailable("this hub replica does not serve watches yet; retry")
        metadata = {key: value for key, value in context.invocation_metadata() or ()}
        token = bearer_token(str(metadata.get("authorization", "")))
        identity = await identify(self.authenticator, token, self.metrics.auth_failures)
        if identity.any_cluster:
            named = str(metadata.get(CLUSTER_ID_METADATA, ""))
            if not names.is_valid_cluster_id(named):
                raise Forbidden(
                    f"this token is shared by several members: name your cluster in '{CLUSTER_ID_METADATA}' metadata"
                )
            identity = Identity(cluster_id=named)
        if isinstance(request, Malformed):
            raise InvalidRequest(request.describe())
        return identity


class Gated(Protocol):
    @property
    def gate(self) -> Gate: ...


S = TypeVar("S", bound=Gated)
Q = TypeVar("Q")
R = TypeVar("R")
UnaryMethod = Callable[[S, Identity, Q, Context], Coroutine[Any, Any, R]]
StreamMethod = Callable[[S, Identity, Q, Context], AsyncIterator[R]]
UnaryHandler = Callable[[S, Q | Malformed, Context], Awaitable[R]]
StreamHandler = Callable[[S, Q | Malformed, Context], AsyncIterator[R]]


class _Rpc(Protocol):
    @overload
    def __call__(self, method: UnaryMethod[S, Q, R]) -> UnaryHandler[S, Q, R]: ...

    @overload
    def __call__(self, method: StreamMethod[S, Q, R]) -> StreamHandler[S, Q, R]: ...


async def _end(context: Context, error: Exception, method: str, who: Identity | None) -> None:
    if not isinstance(error, HubError | StoreError | grpc.aio.AioRpcError):
        caller = who.describe() if who is not None else "unknown"
        log.error("hub call failed", exc_info=error, extra={"method": method, "caller": caller})
    await abort(context, error)


def rpc(*, writes: bool) -> _Rpc:
    """A servicer method `(self, who, request, context)` as a gRPC handler `(self, request, context)`:
    gated, authenticated, and ended by the one mapping of failures (see the module doc)."""

    def decorate(method: Any) -> Any:
        name = method.__name__
        if inspect.isasyncgenfunction(method):

            @functools.wraps(method)
            async def streaming(self: Gated, request: object, context: Context) -> AsyncIterator[object]:
                who: Identity | None = None
                try:
                    who = await self.gate.admit(context, request, writes=writes)
                    async for response in method(self, who, request, context):
                        yield response
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await _end(context, exc, name, who)

            return streaming

        @functools.wraps(method)
        async def unary(self: Gated, request: object, context: Context) -> object:
            who: Identity | None = None
            try:
                who = await self.gate.admit(context, request, writes=writes)
                return await method(self, who, request, context)
            except grpc.aio.AbortError:
                raise
            except Exception as exc:
                await _end(context, exc, name, who)
                raise  # not reached: abort raises

        return unary

    return decorate
